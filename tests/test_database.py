from __future__ import annotations

import pytest

from agentworld_gym.database import Database, copy_record
from agentworld_gym.errors import SpecError


@pytest.fixture
def db():
    return Database(
        {"items": [{"id": "a", "n": 1}, {"id": "b", "n": 2}], "users": [{"uid": 7, "name": "x"}]},
        primary_keys={"users": "uid"},
        documents={"settings": {"theme": "dark"}},
    )


def test_fork_isolates_episodes_and_shares_base(db):
    e1, e2 = db.fork(), db.fork()
    rec = copy_record(e1.get("items", "a"))
    rec["n"] = 100
    e1.put("items", rec)
    e1.insert("items", {"id": "c", "n": 3})
    e1.delete("items", "b")
    assert [r["id"] for r in e1.scan("items")] == ["a", "c"]
    assert e1.get("items", "a")["n"] == 100
    assert [r["n"] for r in e2.scan("items")] == [1, 2]
    assert db.get("items", "a")["n"] == 1
    assert e2.get("users", 7)["name"] == "x"  # keys are compared as strings


def test_transaction_rolls_back_every_write(db):
    ep = db.fork()
    before = ep.fingerprint()
    with pytest.raises(RuntimeError):
        with ep.transaction():
            ep.insert("items", {"id": "z", "n": 9})
            ep.delete("items", "a")
            ep.set_document("settings", {"theme": "light"})
            assert ep.get("items", "z") is not None and ep.get("items", "a") is None
            raise RuntimeError
    assert ep.fingerprint() == before
    assert ep.document("settings") == {"theme": "dark"}
    with ep.transaction():
        ep.insert("items", {"id": "z", "n": 9})
    assert ep.get("items", "z")["n"] == 9 and ep.dirty


def test_insert_conflict_and_missing_delete_raise(db):
    ep = db.fork()
    with pytest.raises(KeyError):
        ep.insert("items", {"id": "a"})
    with pytest.raises(KeyError):
        ep.delete("items", "nope")
    with pytest.raises(KeyError, match="Did you mean 'items'"):
        ep.get("itemz", "a")


def test_snapshot_json_round_trip_and_folder(db, tmp_path):
    ep = db.fork()
    ep.insert("items", {"id": "c", "n": 3})
    ep.to_folder(tmp_path)
    again = Database.from_folder(tmp_path, {"users": "uid"})
    assert again.fingerprint() == ep.fingerprint()
    assert again.document("settings") == {"theme": "dark"}


def test_bad_records_are_rejected():
    with pytest.raises(SpecError, match="primary key"):
        Database({"items": [{"name": "no id"}]})
    with pytest.raises(SpecError, match="duplicate"):
        Database({"items": [{"id": 1}, {"id": "1"}]})


def test_where_sees_the_episode_changes_through_a_shared_index(db):
    def group(rec):
        return rec["n"] % 2

    ep = db.fork()
    assert [r["id"] for r in ep.where("items", "parity", group, 1)] == ["a"]
    moved = copy_record(ep.get("items", "b"))
    moved["n"] = 5
    ep.put("items", moved)
    ep.insert("items", {"id": "c", "n": 7})
    with ep.transaction():
        ep.delete("items", "a")
        inside = sorted(r["id"] for r in ep.where("items", "parity", group, 1))
        assert inside == ["b", "c"]  # the open transaction counts
    assert sorted(r["id"] for r in ep.where("items", "parity", group, 1)) == ["b", "c"]
    assert ep.where("items", "parity", group, 0) == []
    assert [r["id"] for r in db.fork().where("items", "parity", group, 1)] == ["a"]
    assert ep.initial("items", "a") is db.get("items", "a")
    assert ep.initial("items", "c") is None


def test_pickle_and_deepcopy_leave_the_memo_behind(db):
    import copy
    import pickle

    import orjson

    ep = db.fork()
    ep.where("items", "parity", lambda rec: rec["n"] % 2, 1)
    ep.memo("fragment", lambda _: orjson.Fragment(b"{}"))  # not picklable
    for clone in (pickle.loads(pickle.dumps(ep)), copy.deepcopy(ep)):
        assert clone.fingerprint() == ep.fingerprint()
        assert [r["id"] for r in clone.where("items", "parity", lambda r: r["n"] % 2, 1)] == ["a"]


def test_where_in_scan_order_matches_a_filtered_scan():
    rows = [{"id": str(i), "g": i % 3} for i in range(30)]
    ep = Database({"items": rows}).fork()

    def group(rec):
        return rec["g"]

    ep.where("items", "g", group, 1)  # the index is built from the initial state
    for i in (25, 4, 13):  # changed records keep their places; a move changes the group
        moved = copy_record(ep.get("items", str(i)))
        moved["g"] = 1
        ep.put("items", moved)
    ep.insert("items", {"id": "new-b", "g": 1})
    with ep.transaction():
        ep.insert("items", {"id": "new-a", "g": 1})
        ep.delete("items", "7")
        scanned = [r["id"] for r in ep.scan("items") if r["g"] == 1]
        ordered = [r["id"] for r in ep.where("items", "g", group, 1, in_scan_order=True)]
        assert ordered == scanned
        assert sorted(r["id"] for r in ep.where("items", "g", group, 1)) == sorted(scanned)


def _doubled(record):
    return {**record, "n": record["n"] * 2}


def test_put_deferred_computes_each_record_once_on_its_first_read(db):
    calls = []

    def make(record):
        calls.append(record["id"])
        return _doubled(record)

    ep = db.fork()
    ep.insert("items", {"id": "c", "n": 3})
    ep.put_deferred("items", list(ep.scan("items")), make)
    assert calls == [] and ep.has_changes("items")
    assert ep.get("items", "b") == {"id": "b", "n": 4}
    assert ep.get("items", "b") is ep.get("items", "b") and calls == ["b"]
    assert [r["n"] for r in ep.scan("items")] == [2, 4, 6]  # scan order kept
    assert sorted(calls) == ["a", "b", "c"]
    assert [r["id"] for r in ep.where("items", "n", lambda r: r["n"], 6)] == ["c"]
    assert db.get("items", "a")["n"] == 1  # the shared initial state is untouched


def test_put_deferred_equals_eager_puts_in_every_view(db):
    eager, lazy = db.fork(), db.fork()
    for rec in list(eager.scan("items")):
        eager.put("items", _doubled(rec))
    lazy.put_deferred("items", list(lazy.scan("items")), _doubled)
    assert lazy.changes() == eager.changes()
    assert lazy.fingerprint() == eager.fingerprint()
    again = db.fork()
    again.put_deferred("items", list(again.scan("items")), _doubled)
    assert again.snapshot_json() == eager.snapshot_json()


def test_put_deferred_in_a_failed_transaction_leaves_nothing(db):
    ep = db.fork()
    before = ep.fingerprint()
    with pytest.raises(RuntimeError):
        with ep.transaction():
            ep.put_deferred("items", list(ep.scan("items")), _doubled)
            assert ep.get("items", "a")["n"] == 2
            raise RuntimeError("rolled back")
    assert ep.fingerprint() == before and not ep.has_changes("items")
