"""The adversarial gate: lazy and greedy policies earn nothing, correct variants earn 1.0."""

from __future__ import annotations

import random

import pytest

from agentworld_gym.adversarial import ADVERSARIES, NO_WORK, Gate, gate_env, table
from agentworld_gym.registry import load_spec
from agentworld_gym.synthesis.tasks.verifier.seal import seal_spec


@pytest.fixture
def sealed_toy(toy_spec):
    assert seal_spec(toy_spec) == {}
    return toy_spec


@pytest.fixture
def sealed_rich_toy():
    """The toy whose items carry a second number (an estimate): an answer that lists a
    whole item then names a number the request did not ask for."""
    from toy_env import ITEMS, make_spec

    spec = make_spec()
    spec.records = {**spec.records, "items": [{**r, "estimate": r["points"] + 4} for r in ITEMS]}
    assert seal_spec(spec) == {}
    return spec


def _by_policy(gate) -> dict[str, list]:
    out: dict[str, list] = {}
    for a in gate.attempts:
        out.setdefault(a.policy, []).append(a)
    return out


def test_a_sealed_write_task_resists_every_adversary(sealed_rich_toy):
    result = Gate(sealed_rich_toy).attack(sealed_rich_toy.task("close-i1"))
    runs = _by_policy(result)
    policies = {"empty", "echo", "numbers", "random", "dump", "work_dump"}
    assert policies | {"drop_write", "alter_write"} <= set(runs)
    for name in ADVERSARIES:
        assert not any(a.success for a in runs.get(name, [])), name
    for name in NO_WORK:
        assert max(a.reward for a in runs[name]) < 0.3, name
    assert runs["gold"][0].success and runs["rephrased"][0].success
    assert result.passed, result.problems


def test_a_loose_verifier_is_caught(toy_spec):
    # unsealed: "count-open" pays for the answer alone and checks no state at all
    task = toy_spec.task("count-open")
    task.verifier["criteria"] = [
        {"text": "says 2", "check": {"type": "answer_equals", "value": 2}},
    ]
    task.instruction = "How many items are open? (2 is a good guess.)"
    result = Gate(toy_spec).attack(task)
    assert not result.passed
    assert any("echo" in p for p in result.problems)


def test_doing_the_work_then_listing_every_value_is_caught(sealed_toy):
    # the plain toy's item carries one number, its points: after the gold calls, "every
    # value I saw" names exactly the asked 3 and nothing competes with it
    result = Gate(sealed_toy).attack(sealed_toy.task("close-i1"))
    assert any(p.startswith("adversary work_dump succeeds") for p in result.problems)
    assert not result.passed


def test_an_answer_no_tool_returns_fails_the_gate(sealed_toy):
    task = sealed_toy.task("close-i1")
    task.verifier["criteria"].append(
        {"text": "names it", "check": {"type": "answer_contains", "value": "Zanzibar ledger"}}
    )
    task.gold["answer"] = "3 points, Zanzibar ledger"
    problems = Gate(sealed_toy).attack(task).problems
    assert any("'Zanzibar ledger' is returned by no tool" in p for p in problems)


def test_the_table_counts_every_policy(sealed_toy):
    results = gate_env(sealed_toy, [sealed_toy.task("close-i1"), sealed_toy.task("count-open")])
    text = table(results)
    assert "gold" in text and "numbers" in text
    assert text.splitlines()[-1].endswith("tasks pass the gate")


def test_notion_passes_the_gate():
    spec = load_spec("notion")
    results = gate_env(spec)
    failed = {r.task_id: r.problems for r in results if not r.passed}
    assert failed == {}


def test_a_seeded_catalog_sample_passes_the_gate():
    """The CI gate: a fixed sample of synthesized tasks (the whole catalog runs with
    ``agentworld validate --adversarial --all``)."""
    from agentworld_gym.registry import list_envs

    entries = [e for e in list_envs() if e.id != "notion"]
    rng = random.Random(0)
    picks = rng.sample([(e.gym_id, i) for e in entries for i in range(e.n_tasks)], 200)
    by_env: dict[str, list[int]] = {}
    for gym_id, i in picks:
        by_env.setdefault(gym_id, []).append(i)
    failed = {}
    for gym_id, idx in sorted(by_env.items()):
        spec = load_spec(gym_id)
        for r in gate_env(spec, [spec.tasks[i] for i in idx]):
            if not r.passed:
                failed[r.task_id] = r.problems
    assert failed == {}


def test_a_guessed_answer_without_a_working_call_is_paid_nothing(toy_spec):
    # "How many items are open?": "2" meets every criterion of the rubric, but no tool ran
    from agentworld_gym.env import AgentWorldEnv
    from agentworld_gym.spec import RuntimeSpec

    assert RuntimeSpec().answer_needs_call  # the default (the toy turns it off)
    paying = AgentWorldEnv(toy_spec, split="all")
    paying.reset(options={"task_id": "count-open"})
    assert paying.step("2")[1] == 1.0  # what the rule closes
    toy_spec.runtime.answer_needs_call = True
    toy_env = AgentWorldEnv(toy_spec, split="all")
    toy_env.reset(options={"task_id": "count-open"})
    _, reward, terminated, _, info = toy_env.step("2")
    assert terminated and reward == 0.0 and info["verification"]["success"] is False
    assert "no successful" in info["verification"]["unpaid"]
    toy_env.reset(options={"task_id": "count-open"})
    toy_env.step('{"name": "no_such_tool", "arguments": {}}')  # a call that fails counts not
    assert toy_env.step("2")[1] == 0.0
    toy_env.reset(options={"task_id": "count-open"})
    toy_env.step('{"name": "list_items", "arguments": {"status": "open"}}')
    _, reward, _, _, info = toy_env.step("2")
    assert reward == 1.0 and info["verification"]["success"]
    assert "unpaid" not in info["verification"]
