"""Two rounds of self-evolution with a fake trainer on a temp catalog, resume, and the report."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import orjson
import pytest

from agentworld_gym.cli import main
from agentworld_gym.evolution import (
    EvalTask,
    EvolutionConfig,
    TrainingPool,
    evaluate_with_policy,
    run_evolution,
)
from agentworld_gym.evolution import loop as loop_module
from agentworld_gym.evolution.fallback import FallbackSynthesizer
from agentworld_gym.evolution.toy_catalog import build_toy_catalog
from agentworld_gym.registry import read_index
from agentworld_gym.replay import resolve_refs, validate
from agentworld_gym.spec import EnvSpec

MODES = ("good", "wrong_answer", "no_tool", "malformed")


class OraclePolicy:
    """A deterministic stand-in for an LLM: it knows every gold chain and has a 'skill' per
    environment — ``good`` replays the gold and answers right, ``wrong_answer`` replays it
    and answers wrong, ``no_tool`` answers at once, ``malformed`` emits broken calls."""

    def __init__(self) -> None:
        self.gold: dict[tuple[str, str], dict] = {}
        self.skill: dict[str, str] = {}

    def mode(self, env_name: str) -> str:
        slug = env_name.rsplit(" ", 1)[-1]
        return self.skill.get(slug, MODES[int(slug.rsplit("-", 1)[-1]) % len(MODES)])

    def chat(self, messages, tools=None, **sampling):
        system, instruction = messages[0]["content"], messages[1]["content"]
        env_name = system.split(" working in ", 1)[1].split(". ", 1)[0]
        gold = self.gold[(env_name, instruction)]
        mode = self.mode(env_name)
        step = sum(1 for m in messages if m["role"] == "assistant")
        if mode == "no_tool":
            return {"role": "assistant", "content": "I believe it is 42."}
        if mode == "malformed":
            return {"role": "assistant", "content": '<tool_call>{"name": get_team}</tool_call>'}
        calls = gold["calls"]
        if step < len(calls):
            outputs = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
            args = resolve_refs(calls[step]["arguments"], outputs)
            call = {"name": calls[step]["name"], "arguments": json.dumps(args)}
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{step}", "type": "function", "function": call}],
            }
        answer = gold["answer"] if mode == "good" else "Sorry, it is unknown."
        return {"role": "assistant", "content": answer}


class FakeTrainer:
    """Trains by 'learning' the environments it is told to focus on; evaluates with the
    oracle policy through the library's own episode runner."""

    def __init__(self) -> None:
        self.policy = OraclePolicy()
        self.calls: list[tuple[int, int, dict]] = []
        self.saved: list[Path] = []
        self.loaded: list[Path] = []

    def train(self, pool: TrainingPool, steps: int):
        assert pool.env_ids and all(Path(pool.folders[g]).is_dir() for g in pool.env_ids)
        self.calls.append((pool.round, steps, dict(pool.weights)))
        for gid in pool.weights:
            self.policy.skill[gid.split("/")[1].rsplit("-v", 1)[0]] = "good"
        return {"loss": 1.0 / (1 + len(self.calls))}

    def evaluate(self, tasks: list[EvalTask]):
        for t in tasks:
            task = t.spec.task(t.task_id)
            key = (t.spec.name, task.instruction)
            self.policy.gold[key] = {"calls": task.gold["calls"], "answer": task.gold["answer"]}
        return evaluate_with_policy(tasks, self.policy)

    def save_checkpoint(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "skill.json").write_text(json.dumps(self.policy.skill))
        self.saved.append(folder)

    def load_checkpoint(self, folder: Path) -> None:
        self.policy.skill = json.loads((folder / "skill.json").read_text())
        self.loaded.append(folder)


CATEGORIES = {"L1-04 Finance & Markets": 3, "L1-07 Software Development": 2, "L1-15 Health": 1}


def _config(rounds: int) -> EvolutionConfig:
    return EvolutionConfig(
        rounds=rounds,
        k_per_category=2,
        eval_tasks_per_env=3,
        train_steps_per_round=5,
        weak_env_count=2,
        train_tasks_per_weak_env=4,
        seed=3,
        eval_max_turns=4,
    )


@pytest.fixture
def catalog(tmp_path, request):
    root = tmp_path / "catalog"
    tag = hashlib.sha256(request.node.name.encode()).hexdigest()[:6]
    build_toy_catalog(root, CATEGORIES, seed=1, prefix=f"loop{tag}")
    return root


@pytest.mark.filterwarnings("ignore:.*is out of date")
def test_two_rounds_diagnose_evolve_and_report(catalog, tmp_path, capsys):
    out = tmp_path / "run"
    trainer = FakeTrainer()
    summaries = run_evolution(_config(2), trainer, FallbackSynthesizer(), catalog, out)
    assert [s["round"] for s in summaries] == [0, 1]
    first, second = summaries
    # round 0: a balanced arena (2 + 2 + 1), fresh eval tasks, failures of several classes
    assert len(first["arena"]) == 5 and first["eval_tasks"] == 15
    assert len(first["failure_classes"]) >= 2
    assert set(first["failure_classes"]) <= {"no_tool_use", "malformed_call", "wrong_answer"}
    assert all(OraclePolicy().mode(gid.split("/")[1][:-3]) != "good" for gid in first["weak_envs"])
    assert len(first["weak_envs"]) == 2 and len(first["new_versions"]) == 2
    assert all(v.endswith("-v1") for v in first["new_versions"])
    # round 1 trains on the new versions with a focus weight, and the policy got better
    assert trainer.calls[1][2] == {gid: 2.0 for gid in first["new_versions"]}
    assert second["success_rate"] > first["success_rate"]
    r0 = out / "round_000"
    for name in (
        "pool.json",
        "arena.json",
        "eval_tasks.json",
        "episodes.jsonl",
        "diagnosis.json",
        "diagnosis.md",
        "new_tasks.json",
        "summary.json",
    ):
        assert (r0 / name).is_file(), name
    assert (r0 / "plots" / "success_by_category.png").is_file()
    diag = orjson.loads((r0 / "diagnosis.json").read_bytes())
    assert diag["weak_envs"] == first["weak_envs"] and diag["guidelines"]
    # eval tasks were never training tasks
    evals = orjson.loads((r0 / "eval_tasks.json").read_bytes())["tasks"]
    for gid, tasks in evals.items():
        spec = EnvSpec.load(next(e.folder for e in read_index(catalog) if e.gym_id == gid))
        seen = {t.instruction for t in spec.tasks_in("train")}
        assert not seen & {t["instruction"] for t in tasks if t["id"].startswith("eval-")}
    # the new versions are in the catalog, verified, with new tasks of this round
    index = {(e.id, e.version): e for e in read_index(catalog)}
    for gid in first["new_versions"]:
        slug = gid.split("/")[1].rsplit("-v", 1)[0]
        entry = index[(slug, 1)]
        assert entry.path == f"{slug}.v1" and (slug, 0) in index
        spec = EnvSpec.load(entry.folder)
        assert all(r.ok for r in validate(spec))
        new = [t for t in spec.tasks if t.provenance.get("origin") == "evolution"]
        assert new and all(t.provenance["round"] == 0 for t in new)
        assert spec.provenance["evolution"][0]["round"] == 0
        report = orjson.loads((r0 / "evolved" / f"{slug}.json").read_bytes())
        assert report["violations"] == [] and report["to_version"] == 1
    new_tasks = orjson.loads((r0 / "new_tasks.json").read_bytes())
    assert set(new_tasks) == set(first["new_versions"])
    # resume: finished rounds are skipped, the policy is restored, round 2 runs
    again = FakeTrainer()
    more = run_evolution(_config(3), again, FallbackSynthesizer(), catalog, out)
    assert [s["round"] for s in more] == [0, 1, 2] and more[:2] == summaries
    assert [c[0] for c in again.calls] == [2] and again.loaded == [out / "round_001" / "checkpoint"]
    # the report command
    assert main(["evolve", "report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "L1-04 Finance & Markets" in text and "overall" in text and "r2" in text
    assert (out / "success_by_round.png").stat().st_size > 1000


def test_an_interrupted_round_is_rolled_back_and_redone(catalog, tmp_path, monkeypatch):
    out = tmp_path / "run"
    config = _config(1)
    real = loop_module._dump

    def crash_at_summary(path, value):
        if path.name == loop_module.SUMMARY:
            raise RuntimeError("power cut")
        return real(path, value)

    monkeypatch.setattr(loop_module, "_dump", crash_at_summary)
    with pytest.raises(RuntimeError, match="power cut"):
        run_evolution(config, FakeTrainer(), FallbackSynthesizer(), catalog, out)
    assert any(e.version == 1 for e in read_index(catalog))  # the commit had happened
    monkeypatch.undo()
    summaries = run_evolution(config, FakeTrainer(), FallbackSynthesizer(), catalog, out)
    versions = sorted((e.id, e.version) for e in read_index(catalog))
    assert len(versions) == len(set(versions)) == 6 + 2
    assert max(v for _, v in versions) == 1  # redone as v1, not stacked as v2
    assert len(summaries[0]["new_versions"]) == 2


def test_config_composes_with_omegaconf_and_validates():
    omegaconf = pytest.importorskip("omegaconf")
    from agentworld_gym.errors import ConfigError
    from agentworld_gym.evolution import DiagnosisMode

    cfg = omegaconf.OmegaConf.structured(EvolutionConfig)
    cfg.diagnosis = "llm"
    cfg.complexify.near_duplicates = 5
    plain = omegaconf.OmegaConf.to_object(cfg)
    assert isinstance(plain, EvolutionConfig) and plain.diagnosis is DiagnosisMode.llm
    assert plain.complexify.near_duplicates == 5
    with pytest.raises(ConfigError, match="k_per_category=0"):
        EvolutionConfig(k_per_category=0)


def test_the_task_synthesis_adapter_passes_known_knobs_and_falls_back(monkeypatch, catalog):
    import sys
    import types

    from agentworld_gym.evolution.adapters import SynthesisTasksAdapter, default_synthesizer
    from agentworld_gym.evolution.protocols import Guidelines

    seen = {}

    def synthesize_tasks(spec, n, seed, walk_length=2, distractors=0):
        seen.update(n=n, seed=seed, walk_length=walk_length, distractors=distractors)
        return []

    fake = types.ModuleType("agentworld_gym.synthesis.tasks")
    fake.synthesize_tasks = synthesize_tasks
    monkeypatch.setitem(sys.modules, "agentworld_gym.synthesis.tasks", fake)
    synth = default_synthesizer()
    assert isinstance(synth, SynthesisTasksAdapter)
    spec = EnvSpec.load(read_index(catalog)[0].folder)
    tasks = synth.synthesize(spec, 2, 7, Guidelines(spec.id, walk_length=4, distractors=1))
    assert seen == {"n": 2, "seed": 7, "walk_length": 4, "distractors": 1}
    assert len(tasks) == 2  # the package gave none: the built-in synthesizer filled in
    monkeypatch.setitem(sys.modules, "agentworld_gym.synthesis.tasks", None)
    assert isinstance(default_synthesizer(), FallbackSynthesizer)
