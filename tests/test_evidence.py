"""An answer is paid only for what the episode saw (``answer_needs_evidence``)."""

from __future__ import annotations

import orjson
import pytest

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.verifiers.base import CallRecord
from agentworld_gym.verifiers.evidence import GoldRead, marks, unseen


@pytest.fixture
def env(toy_spec) -> AgentWorldEnv:
    toy_spec.runtime.answer_needs_call = True
    toy_spec.runtime.answer_needs_evidence = True
    return AgentWorldEnv(toy_spec, split="all")


def _play(env: AgentWorldEnv, calls: list[tuple[str, dict]], answer: str) -> dict:
    env.reset(options={"task_id": "count-open"})  # "How many items are open?" -> 2
    for name, arguments in calls:
        env.step(orjson.dumps({"name": name, "arguments": arguments}).decode())
    *_, info = env.step(answer)
    return info["verification"]


def test_a_right_guess_after_an_unrelated_call_is_paid_nothing(env):
    verification = _play(env, [("get_item", {"item_id": "i3"})], "2")  # i3 is done
    assert verification["reward"] == 0.0 and not verification["success"]
    assert "list_items({'status': 'open'})" in verification["unpaid"]
    assert _play(env, [("list_items", {"status": "done"})], "2")["reward"] == 0.0


@pytest.mark.parametrize(
    "calls",
    [
        [("list_items", {"status": "open"})],  # the gold's own read
        [("list_items", {})],  # a wider list holds the same records
        [("get_item", {"item_id": "i2"}), ("get_item", {"item_id": "i1"})],  # one by one
    ],
)
def test_an_answer_from_the_records_the_gold_reads_is_paid(env, calls):
    verification = _play(env, calls, "2")
    assert verification["reward"] == 1.0 and verification["success"]
    assert "unpaid" not in verification


def test_a_wrong_answer_after_the_right_reads_still_fails(env):
    verification = _play(env, [("list_items", {"status": "open"})], "3")
    assert not verification["success"] and "unpaid" not in verification


def test_tasks_that_check_no_answer_need_no_evidence(env):
    env.reset(options={"task_id": "script-new"})  # judged on the state alone
    env.step('{"name": "create_item", "arguments": {"title": "Plan Q3", "points": 13}}')
    *_, info = env.step("done")
    assert info["verification"]["success"]


def test_a_record_is_known_by_its_keys_and_fields_not_every_value():
    keys = ("id",)
    gold = {"id": "a1", "name": "Black Friday", "updatedAt": "2026-01-01T00:00:01Z"}
    read = GoldRead("get_app", {"id": "a1"}, marks(gold, keys))

    def saw(*outputs: object) -> list[CallRecord]:
        return [CallRecord("x", {}, True, orjson.dumps(o).decode()) for o in outputs]

    later = {**gold, "updatedAt": "2026-01-01T00:00:07Z"}  # written a call later
    assert unseen([read], saw({"data": [later]}), keys) is None
    summary = {"id": "a1", "name": "Black Friday"}  # a list's summary: fewer fields
    assert unseen([read], saw([summary]), keys) is read
    parent = {"id": "b7", "app": gold["id"]}  # another record that only points at it
    assert unseen([read], saw(parent), keys) is read
    failed = [CallRecord("get_app", {"id": "a1"}, False, orjson.dumps(gold).decode())]
    assert unseen([read], failed, keys) is read  # an error result shows nothing
    empty = GoldRead("search", {"q": "zz"}, frozenset())  # the gold found nothing
    assert unseen([empty], saw([]), keys) is empty  # any empty result is not that answer
    asked = [CallRecord("search", {"q": "zz", "limit": 5}, True, "[]")]
    assert unseen([empty], asked, keys) is None


def test_pruning_removes_failing_tasks_and_refreshes_the_index(toy_spec, tmp_path):
    from agentworld_gym.registry import build_index, read_index
    from agentworld_gym.spec import EnvSpec
    from agentworld_gym.synthesis.tasks.catalog import drop_tasks, update_index

    toy_spec.save(tmp_path / "toy")
    build_index(tmp_path)
    assert drop_tasks(tmp_path / "toy", {"count-open", "no-such-task"}) == 1
    update_index(tmp_path)
    kept = [t.id for t in EnvSpec.load(tmp_path / "toy").tasks]
    assert "count-open" not in kept and len(kept) == len(toy_spec.tasks) - 1
    assert [e.n_tasks for e in read_index(tmp_path)] == [len(kept)]
    assert drop_tasks(tmp_path / "toy", {"count-open"}) == 0  # nothing left to drop
