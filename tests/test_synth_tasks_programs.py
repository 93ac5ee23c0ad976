"""Program templates: control flow against hand-computed ground truth, verification scripts."""

from __future__ import annotations

import random

import pytest
from test_synth_tasks import make_op_env

from agentworld_gym.sandbox import run_function
from agentworld_gym.synthesis.tasks.gate.accept import reward_of
from agentworld_gym.synthesis.tasks.model import build_model
from agentworld_gym.synthesis.tasks.request import program as say
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.programs import Caller, capabilities, hit
from agentworld_gym.synthesis.tasks.sample.templates.aggregate import aggregate, group_max
from agentworld_gym.synthesis.tasks.sample.templates.given import batch_update
from agentworld_gym.synthesis.tasks.sample.templates.listing import branch, bulk
from agentworld_gym.synthesis.tasks.sample.templates.shapes import Knobs
from agentworld_gym.synthesis.tasks.verifier.scripts import script

STATE = {
    "projects": [
        {"id": "p1", "name": "Apollo", "status": "active"},
        {"id": "p2", "name": "Borealis", "status": "archived"},
        {"id": "p3", "name": "Cygnus", "status": "active"},
    ],
    "tasks": [
        {"id": "t1", "status": "open", "points": 3, "project_id": "p1", "owner": None},
        {"id": "t2", "status": "open", "points": 8, "project_id": "p1", "owner": "ada"},
        {"id": "t3", "status": "done", "points": 5, "project_id": "p2", "owner": None},
        {"id": "t4", "status": "open", "points": 13, "project_id": "p2", "owner": None},
        {"id": "t5", "status": "open", "points": 1, "project_id": "p3", "owner": None},
    ],
}


def _verify(kind: str, params: dict, final: dict, answer: str) -> float:
    result = run_function(script(kind, params), "verify", [STATE, final, answer])
    assert result.ok, result.error
    return reward_of(result.value)


def _with(changes: dict[str, dict]) -> dict:
    tasks = [{**t, **changes.get(t["id"], {})} for t in STATE["tasks"]]
    return {**STATE, "tasks": [t for t in tasks if "_gone" not in t]}


def test_bulk_update_script_grades_targets_collateral_and_count():
    # "for every open, unassigned task of an active project: assign it to ada; how many?"
    params = {
        "c": "tasks",
        "k": "id",
        "w": [["status", "open"], ["owner", None]],
        "pc": "projects",
        "pk": "id",
        "pw": [["status", "active"]],
        "pf": "project_id",
        "g": "owner",
        "v": "ada",
    }
    targets = {"t1", "t5"}  # t2 is assigned, t3 done, t4 in an archived project
    done = _with({t: {"owner": "ada"} for t in targets})
    assert _verify("update", params, done, "I assigned 2 tasks.") == pytest.approx(1.0)
    assert _verify("update", params, done, "all done") == pytest.approx(0.7)
    assert _verify("update", params, _with({"t1": {"owner": "ada"}}), "2") == pytest.approx(0.65)
    collateral = _with({"t1": {"owner": "ada"}, "t5": {"owner": "ada"}, "t4": {"owner": "ada"}})
    assert _verify("update", params, collateral, "2") == 0.0
    assert _verify("update", params, STATE, "") == 0.0


def test_branch_delete_aggregate_and_group_scripts():
    branch_p = {
        "c": "tasks",
        "k": "id",
        "w": [["status", "open"]],
        "nf": "points",
        "t": 5,
        "g": "owner",
        "a": "senior",
        "b": "junior",
    }
    want = {"t1": "junior", "t2": "senior", "t4": "senior", "t5": "junior"}
    final = _with({k: {"owner": v} for k, v in want.items()})
    assert _verify("branch", branch_p, final, "2 went to senior") == pytest.approx(1.0)
    wrong = _with({k: {"owner": "senior"} for k in want})
    assert _verify("branch", branch_p, wrong, "4") == pytest.approx(0.35)

    delete_p = {"c": "tasks", "k": "id", "w": [["status", "done"]]}
    assert _verify("delete", delete_p, _with({"t3": {"_gone": 1}}), "deleted 1") == 1.0
    assert _verify("delete", delete_p, _with({"t1": {"_gone": 1}}), "1") == 0.0

    total = {
        "c": "tasks",
        "k": "id",
        "w": [["status", "open"]],
        "nf": "points",
        "op": "sum",
        "tol": 0.01,
        "pc": "projects",
        "pk": "id",
        "pw": [["status", "active"]],
        "pf": "project_id",
    }
    assert _verify("aggregate", total, STATE, "The total is 12.") == 1.0  # 3 + 8 + 1
    assert _verify("aggregate", total, STATE, "25") == 0.0
    assert _verify("aggregate", total, STATE, " ".join(map(str, range(30)))) == 0.0  # a dump

    group = {
        "c": "tasks",
        "w": [["status", "open"]],
        "pc": "projects",
        "pk": "id",
        "pw": [],
        "pf": "project_id",
        "lf": "name",
    }
    assert _verify("groupmax", group, STATE, "Apollo, with 2") == pytest.approx(1.0)
    assert _verify("groupmax", group, STATE, "Borealis has 1") == 0.0


def test_program_control_flow_matches_hand_computed_truth():
    spec = make_op_env()
    model = build_model(spec)
    runner = Runner(spec)
    caps = capabilities(model, runner)
    tasks = {t["id"]: t for t in spec.records["tasks"]}
    seen = set()
    for seed in range(40):
        for make in (lambda m, c, r, k: bulk(m, c, r, k, "update"), branch):
            prog = make(model, caps, random.Random(seed), Knobs())
            if prog is None:
                continue
            caller = Caller(runner, "t", 19)
            answer = prog.run(caller)
            p = prog.params
            expected = [t for t in tasks.values() if hit(t, p["w"])]
            if p.get("pc"):  # joined through the task's project
                keep = {q["id"] for q in spec.records["projects"] if hit(q, p["pw"])}
                expected = [t for t in expected if t["project_id"] in keep]
            writes = [c for c in caller.calls if c["name"] == "updateTask"]
            if prog.template == "bulk_update":
                assert f" {len(expected)} " in f" {answer} "
                assert {c["arguments"]["taskId"] for c in writes} <= {t["id"] for t in expected}
            else:
                want = {t["id"]: p["a"] if t["points"] > p["t"] else p["b"] for t in expected}
                for c in writes:
                    assert c["arguments"][p["g"]] == want[c["arguments"]["taskId"]]
                assert str(sum(1 for v in want.values() if v == p["a"])) in answer
            assert caller.calls[0]["name"].startswith("list")
            seen.add(prog.template)
    assert seen == {"bulk_update", "branch_update"}


def test_every_template_instantiates_on_the_tracker():
    spec = make_op_env()
    model = build_model(spec)
    runner = Runner(spec)
    caps = capabilities(model, runner)
    makers = {
        "aggregate": aggregate,
        "group_max": group_max,
        "batch_update": batch_update,
        "bulk_delete": lambda m, c, r, k: bulk(m, c, r, k, "delete"),
    }
    for name, make in makers.items():
        programs = [make(model, caps, random.Random(s), Knobs()) for s in range(30)]
        prog = next(p for p in programs if p is not None)
        answer = prog.run(Caller(runner, "t", 19))
        assert answer and prog.request and prog.control_flow, name


def test_conditions_and_verbs_in_words():
    rng = random.Random(0)
    assert say.np("user", [["is_active", False]], rng) == "inactive users"
    assert say.pred([["online", False]], rng) == "are offline"
    assert say.np("key", [["enabled", False]], rng) == "disabled keys"
    assert "whose is" not in say.np("channel", [["is_global_master", False]], rng)
    assert say.pred([["has_webhook", False]], rng, False) == "doesn't have a webhook"
    assert say.past("publish") == "published" and say.past("stop") == "stopped"
    # a yes/no write says what it makes the records, in the update's words
    assert say.state("public", False) == "private" and say.state("is archived", True) == "archived"
    assert say.state("pinned", False) == "no longer pinned"
    assert say.state("replies", True) == "" and say.state("can view", True) == ""
    assert say.too_long(8, 2, 4) and say.too_long(7, 2, 7) and not say.too_long(8, 3, 6)
    # among three tools the data may pick more records (a clean-up of eight), never many more
    assert not say.too_long(11, 3, 8) and say.too_long(12, 3, 9)


@pytest.mark.parametrize("seed", range(6))
def test_program_requests_name_no_raw_conditions_or_steps(seed):
    spec = make_op_env()
    model, runner = build_model(spec), Runner(spec)
    caps = capabilities(model, runner)
    makers = [aggregate, group_max, batch_update, branch]
    makers += [lambda m, c, r, k, op=op: bulk(m, c, r, k, op) for op in ("update", "delete")]
    for make in makers:
        prog = make(model, caps, random.Random(seed), Knobs())
        if prog is None:
            continue
        again = make(model, caps, random.Random(seed), Knobs())
        assert again is not None and again.request == prog.request  # deterministic
        assert "whose is" not in prog.request and "\n1." not in prog.request
        caller = Caller(runner, "t", 19)
        prog.run(caller)
        assert len(caller.calls) < 8 or len({c["name"] for c in caller.calls}) >= 3


def test_a_yes_no_update_is_worded_as_the_state_it_makes():
    """ "make the rest private", never "set the public of the rest to false"; the audit reads
    it as the update it is."""
    from types import SimpleNamespace

    from agentworld_gym.semantics import Meaning
    from agentworld_gym.synthesis import audit

    verbs = say.Verbs(SimpleNamespace(spec=SimpleNamespace(tools=[])))
    tool = SimpleNamespace(name="patchVideo", op="update")
    rng = random.Random(0)
    clause = verbs.update(tool, rng, "the rest", "public", "false")
    assert clause == "make the rest private"
    assert audit.worded_as(clause, Meaning("update", "update", "", False)) is True
    assert verbs.update(tool, rng, "it", "replies", "false").endswith("replies to false")
    assert verbs.update(tool, rng, "it", "public", '"false"').endswith('to "false"')
