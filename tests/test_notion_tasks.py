"""AgentWorld/notion-v0 tasks: every gold chain earns 1.0; empty and wrong answers do not."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agentworld_gym.domains.notion.build import DEFAULT_OUT, make_spec
from agentworld_gym.domains.notion.selfcheck import check_tasks
from agentworld_gym.spec import EnvSpec


@pytest.fixture(scope="module")
def spec():
    return make_spec()


def test_task_mix(spec):
    tasks = spec.tasks
    assert len(tasks) >= 40
    kinds = Counter(t.verifier["type"] for t in tasks)
    assert kinds["rubric"] >= 20 and kinds["script"] >= 15
    assert sum(t.split == "test" for t in tasks) >= 10
    assert sum(len(t.gold["calls"]) >= 8 for t in tasks) >= 10
    for t in tasks:
        assert t.kind == "manual" and t.reference_answer and t.difficulty["min_calls"] >= 1
        assert "API-" not in t.instruction and "tool" not in t.instruction.lower()


def test_gold_chains_earn_full_reward_and_wrong_answers_do_not(spec):
    assert check_tasks(spec) == []


def test_generated_folder_is_up_to_date(spec, tmp_path):
    if not (DEFAULT_OUT / "env.json").exists():
        pytest.skip("envs_generated/notion has not been built")
    spec.save(tmp_path)
    for path in sorted(tmp_path.rglob("*.json")):
        committed = DEFAULT_OUT / path.relative_to(tmp_path)
        assert committed.read_bytes() == path.read_bytes(), (
            f"{committed} is stale: run python -m agentworld_gym.domains.notion.build"
        )
    loaded = EnvSpec.load(Path(DEFAULT_OUT))
    assert loaded.gym_id == "AgentWorld/notion-v0" and len(loaded.tools) == 19
