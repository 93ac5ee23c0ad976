"""The exact end-state check: every requested change, nothing else, volatile values masked."""

from __future__ import annotations

import pytest

from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.verifier.seal import sealed_criteria
from agentworld_gym.verifiers import RubricVerifier
from agentworld_gym.verifiers.base import Episode
from agentworld_gym.verifiers.state import check_state, expected_changes, units

CLOSE_AND_CREATE = [
    {"name": "set_status", "arguments": {"item_id": "i1", "status": "done"}},
    {"name": "create_item", "arguments": {"title": "Plan sprint", "points": 2}},
]


@pytest.fixture
def runner(toy_spec):
    return Runner(toy_spec)


@pytest.fixture
def check(runner):
    gold = runner.run(CLOSE_AND_CREATE, "t")
    probe = runner.run(CLOSE_AND_CREATE, "t-probe", probe=True)
    made = expected_changes(runner.base, gold.db, probe.db)
    assert made is not None
    return made


def _score(runner, check, calls, task_id="other-task"):
    run = runner.run(calls, task_id)
    assert run.ok, run.error
    return check_state(check, runner.base, run.db)


def test_the_gold_changes_are_derived_with_generated_values_masked(check):
    assert units(check) == 2
    assert check["records"]["items"]["i1"] == {"$patch": {"set": {"status": "done"}}}
    (created,) = check["created"]["items"]
    assert created["title"] == "Plan sprint" and created["points"] == 2
    assert created["id"] == {"$volatile": "new", "of": "items"}  # a generated id
    assert created["created"] == {"$volatile": "any"}  # the tool's timestamp


def test_gold_in_another_episode_and_order_meets_the_check(runner, check):
    score, reason = _score(runner, check, list(reversed(CLOSE_AND_CREATE)))
    assert score == 1.0, reason


def test_a_dropped_write_loses_its_share_and_success(runner, check):
    score, reason = _score(runner, check, CLOSE_AND_CREATE[:1])
    assert score == 0.5 and "no new items record" in reason


def test_an_altered_write_value_is_not_the_requested_change(runner, check):
    calls = [CLOSE_AND_CREATE[0], {"name": "create_item", "arguments": {"title": "Plan sprint"}}]
    score, reason = _score(runner, check, calls)  # points 1 instead of 2
    assert score < 1.0 and "1 change(s) not requested" in reason


def test_collateral_writes_cost_credit_and_success(runner, check):
    extra = {"name": "set_status", "arguments": {"item_id": "i2", "status": "done"}}
    score, reason = _score(runner, check, [*CLOSE_AND_CREATE, extra])
    assert score == pytest.approx(2 / 3)
    assert "changed items/i2" in reason


def test_doing_nothing_scores_zero(runner, check):
    score, _ = check_state(check, runner.base, runner.base.fork())
    assert score == 0.0


def test_a_read_only_check_is_met_only_when_nothing_changed(runner):
    calls = [{"name": "get_item", "arguments": {"item_id": "i1"}}]
    gold = runner.run(calls, "t")
    probe = runner.run(calls, "t-p", probe=True)
    nothing = expected_changes(runner.base, gold.db, probe.db)
    assert nothing == {"type": "state"}
    assert check_state(nothing, runner.base, runner.base.fork())[0] == 1.0
    write = [{"name": "set_status", "arguments": {"item_id": "i2", "status": "done"}}]
    assert _score(runner, nothing, write)[0] == 0.0


def test_sealed_rubric_pays_partial_credit_and_success_needs_everything(runner, check):
    criteria = [
        {"text": "reports 3", "weight": 1, "check": {"type": "answer_equals", "value": 3}},
        {
            "text": "old record check",
            "weight": 2,
            "check": {
                "type": "record",
                "collection": "items",
                "key": "i1",
                "path": "status",
                "equals": "done",
            },
        },
    ]
    sealed = sealed_criteria(criteria, check)
    assert [c["check"]["type"] for c in sealed] == ["answer_equals", "state"]
    verifier = RubricVerifier(sealed)
    full = runner.run(CLOSE_AND_CREATE, "x")
    half = runner.run(CLOSE_AND_CREATE[:1], "x")
    done = verifier.verify(Episode(runner.base, full.db, "3", instruction="Close i1"))
    assert done.success and done.reward == 1.0
    part = verifier.verify(Episode(runner.base, half.db, "3", instruction="Close i1"))
    assert not part.success and part.reward == pytest.approx((1 + 4 * 0.5) / 5)


def test_requires_state_pays_a_count_only_for_work_done(runner, check):
    criteria = sealed_criteria(
        [
            {
                "text": "how many",
                "weight": 1,
                "requires": "state",
                "check": {"type": "answer", "expect": [{"value": 2}]},
            }
        ],
        check,
    )
    verifier = RubricVerifier(criteria)
    lazy = verifier.verify(Episode(runner.base, runner.base.fork(), "2", instruction="x"))
    assert lazy.reward == 0.0 and not lazy.success
    assert "counts once met" in lazy.breakdown[0]["reason"]
    full = runner.run(CLOSE_AND_CREATE, "x")
    assert verifier.verify(Episode(runner.base, full.db, "2", instruction="x")).success
