"""A registered suite as the evolution arena's held-out pool: BFCL run by a scripted policy."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentworld_gym.cli import main
from agentworld_gym.errors import ConfigError, LLMRequestError
from agentworld_gym.evolution import EvalTask, EvolutionConfig, evaluate_with_policy, run_evolution
from agentworld_gym.evolution.fallback import FallbackSynthesizer
from agentworld_gym.evolution.toy_catalog import build_toy_catalog
from agentworld_gym.suites import wilson_interval

SUITE = "bfcl-multi-turn-miss-param"


class ScriptedBackend:
    """Plays BFCL's ground truth on suite tasks, times out on one of them, and answers the
    arena's tasks at once (a wrong answer: the arena and its diagnosis still run)."""

    def __init__(self, timeout_on: str | None = None) -> None:
        self.gold = None
        if timeout_on is not None:
            from agentworld_gym.benchmarks_ext.bfcl.replay import BFCLGoldPolicy

            self.gold = BFCLGoldPolicy("miss_param")
        self.timeout_on = timeout_on

    def chat(self, messages: Any, tools: Any = None, **sampling: Any) -> dict[str, Any]:
        first = next((m["content"] for m in messages if m["role"] == "user"), "")
        if first == self.timeout_on:
            raise LLMRequestError("request timed out after 1.0 s")
        if self.gold is not None and first in self.gold.plays:
            return self.gold(messages, tools)
        return {"role": "assistant", "content": "I do not know."}


class ScriptedTrainer:
    def __init__(self, backend: ScriptedBackend) -> None:
        self.backend = backend
        self.evaluated: list[list[str]] = []

    def train(self, pool: Any, steps: int) -> None:
        return None

    def evaluate(self, tasks: list[EvalTask]) -> list:
        self.evaluated.append([t.suite for t in tasks])
        return evaluate_with_policy(tasks, self.backend)


def _config(**held_out: Any) -> EvolutionConfig:
    return EvolutionConfig(
        rounds=1,
        k_per_category=1,
        eval_tasks_per_env=2,
        train_steps_per_round=0,
        weak_env_count=0,
        seed=1,
        eval_max_turns=3,
        plots=False,
        **held_out,
    )


@pytest.mark.filterwarnings("ignore:.*is out of date")
def test_a_suite_is_the_held_out_pool_of_the_arena(tmp_path, capsys):
    pytest.importorskip("bfcl_eval")
    pytest.importorskip("mpmath")
    from agentworld_gym.registry import load_spec

    catalog = tmp_path / "catalog"
    build_toy_catalog(catalog, {"L1-04 Finance & Markets": 1}, seed=1, prefix="heldout")
    tasks = load_spec(f"AgentWorld/{SUITE}-v0").tasks_in("test")
    trainer = ScriptedTrainer(ScriptedBackend(timeout_on=tasks[1].instruction))
    config = _config(held_out_suite=SUITE, held_out_tasks_per_env=3)
    (summary,) = run_evolution(config, trainer, FallbackSynthesizer(), catalog, tmp_path / "run")
    # the arena ran as always; the suite after it, as its own evaluation
    assert [set(s) for s in trainer.evaluated] == [{""}, {SUITE}]
    assert summary["eval_tasks"] == 2 and summary["episodes"] == 2
    held_out = summary["held_out"]
    assert held_out["suite"] == SUITE and held_out["tasks_per_env"] == 3
    rows = {row["category"]: row for row in held_out["rows"]}
    assert list(rows) == ["miss_param", "all"]
    lo, hi = wilson_interval(2, 3)
    assert rows["miss_param"] == {
        "category": "miss_param",
        "tasks": 3,
        "successes": 2,
        "success_rate": pytest.approx(2 / 3),
        "ci95": [pytest.approx(lo), pytest.approx(hi)],
        "errors": 1,
    }
    folder = tmp_path / "run" / "round_000"
    assert orjson.loads((folder / "held_out.json").read_bytes()) == held_out
    lines = (folder / "held_out_episodes.jsonl").read_bytes().splitlines()
    errors = [orjson.loads(line).get("error") for line in lines]
    assert errors[0] is None and "timed out" in errors[1] and errors[2] is None
    # the arena's own records are written as before (no error field)
    arena = (folder / "episodes.jsonl").read_bytes().splitlines()
    assert all("error" not in orjson.loads(line) for line in arena)
    assert main(["evolve", "report", str(tmp_path / "run")]) == 0
    text = capsys.readouterr().out
    assert f"round 0: held-out suite {SUITE}" in text
    row = next(line for line in text.splitlines() if line.startswith("miss_param"))
    assert row.split()[1:3] == ["3", "66.7%"] and row.split()[-1] == "1"


def test_without_a_suite_nothing_changes_and_a_bad_one_fails_first(tmp_path):
    catalog = tmp_path / "catalog"
    build_toy_catalog(catalog, {"L1-15 Health": 1}, seed=2, prefix="heldoutnone")
    trainer = ScriptedTrainer(ScriptedBackend())
    with pytest.raises(ConfigError, match="unknown suite"):
        bad = _config(held_out_suite="no-such-suite")
        run_evolution(bad, trainer, FallbackSynthesizer(), catalog, tmp_path / "bad")
    assert not (tmp_path / "bad" / "round_000").exists() and not trainer.evaluated
    (summary,) = run_evolution(_config(), trainer, FallbackSynthesizer(), catalog, tmp_path / "ok")
    assert "held_out" not in summary and trainer.evaluated == [["", ""]]
    assert not (tmp_path / "ok" / "round_000" / "held_out.json").exists()
    with pytest.raises(ConfigError, match="held_out_tasks_per_env=0"):
        EvolutionConfig(held_out_tasks_per_env=0)
