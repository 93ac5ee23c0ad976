"""experiments/evolve.py: the configs compose into ``EvolveConfig``, overrides reach the loop,
and the entry point runs rounds end to end on a toy catalog — with a fake trainer, and with
our GRPO on the tiny model — and resumes a run folder."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import orjson
import pytest

pytest.importorskip("hydra")
pytest.importorskip("torch").set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "experiments")]

import evolve  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from agentworld_gym.cli import main as cli  # noqa: E402
from agentworld_gym.errors import ConfigError  # noqa: E402
from agentworld_gym.evolution import EvalTask, EvolutionConfig, evaluate_with_policy  # noqa: E402
from agentworld_gym.evolution.toy_catalog import build_toy_catalog  # noqa: E402
from agentworld_gym.registry import read_index  # noqa: E402
from algorithms.grpo.config import GRPOConfig  # noqa: E402

ROUND_FILES = (
    "pool.json",
    "train.json",
    "arena.json",
    "eval_tasks.json",
    "episodes.jsonl",
    "diagnosis.json",
    "diagnosis.md",
    "new_tasks.json",
    "versions.json",
    "summary.json",
)
CATEGORIES = {"L1-04 Finance & Markets": 2, "L1-07 Software Development": 1, "L1-15 Health": 1}


def load(overrides: list[str]) -> evolve.EvolveConfig:
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="evolve", overrides=overrides)
    return OmegaConf.to_object(cfg)


class AnswerOnly:
    """Answers at once: the answer it was given for the instruction, else nonsense."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}

    def chat(self, messages, tools=None, **sampling):
        answer = self.answers.get(messages[-1]["content"], "no idea")
        return {"role": "assistant", "content": answer}


class FakeTrainer:
    """Counts what the loop asks of it; evaluation runs real episodes through the env."""

    instances = 0
    trained: list[int] = []

    def __init__(self, good_suffix: str = "-00") -> None:
        type(self).instances += 1
        self.good_suffix = good_suffix

    def train(self, pool, steps):
        type(self).trained.append(pool.round)
        return {"loss": 0.5}

    def evaluate(self, tasks: list[EvalTask]):
        policy = AnswerOnly()
        for t in tasks:
            task = t.spec.task(t.task_id)
            if t.spec.id.endswith(self.good_suffix):
                policy.answers[task.instruction] = str(task.gold.get("answer", ""))
        return evaluate_with_policy(tasks, policy)


@pytest.fixture
def source(tmp_path, request) -> Path:
    root = tmp_path / "source"
    tag = hashlib.sha256(request.node.name.encode()).hexdigest()[:6]
    build_toy_catalog(root, CATEGORIES, seed=2, prefix=f"evo{tag}")
    return root


def _overrides(source: Path, out: Path, rounds: int) -> list[str]:
    return [
        f"catalog={source}",
        "extra_envs=[]",
        "warm_start_envs=[]",
        f"out_dir={out}",
        "logger=disabled",
        "logger.progress=false",
        "logger.plots=false",
        f"evolution.rounds={rounds}",
        "evolution.k_per_category=1",
        "evolution.eval_tasks_per_env=2",
        "evolution.weak_env_count=2",
        "evolution.train_tasks_per_weak_env=3",
        "evolution.plots=false",
        "evolution.seed=1",
    ]


# -- composition ------------------------------------------------------------------------------
def test_demo_config_composes_into_dataclasses():
    cfg = load([])
    assert isinstance(cfg, evolve.EvolveConfig)
    assert isinstance(cfg.evolution, EvolutionConfig) and isinstance(cfg.algo, GRPOConfig)
    assert cfg.evolution.rounds == 2 and cfg.evolution.k_per_category == 1
    assert cfg.model.name == "embedded" and cfg.llm.backend == "transformers"
    assert cfg.warm_start.enabled and cfg.catalog == "demo" and cfg.copy_catalog
    assert cfg.synthesizer is evolve.SynthesizerChoice.fallback and cfg.trainer is None


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["evolution.rounds=1", "evolution.k_per_category=1"], (1, 1, 2)),
        (["evolution.rounds=4", "evolution.k_per_category=3"], (4, 3, 2)),
        (["evolution=default"], (3, 5, 100)),
        (["evolution=default", "evolution.train_steps_per_round=7"], (3, 5, 7)),
    ],
)
def test_overrides_reach_the_loop_config(overrides, expected):
    e = load(overrides).evolution
    assert (e.rounds, e.k_per_category, e.train_steps_per_round) == expected


def test_group_options_and_trainer_node_compose():
    cfg = load(
        [
            "model=tiny",
            "algo=grpo_gpu",
            "evolution.diagnosis=llm",
            "synthesizer=auto",
            "trainer={_target_:mod.Cls,x:1}",
        ]
    )
    assert cfg.model.name == "tiny" and cfg.algo.steps == 200
    assert cfg.evolution.diagnosis.value == "llm"
    assert cfg.trainer == {"_target_": "mod.Cls", "x": 1}


def test_bad_values_name_the_field():
    with pytest.raises(ConfigError, match="rounds"):
        load(["evolution.rounds=0"])
    with pytest.raises(Exception, match="k_per_categry"):
        load(["evolution.k_per_categry=1"])
    with pytest.raises(ConfigError, match="diagnoser.model"):
        evolve.make_diagnoser(load(["evolution.diagnosis=llm"]))


# -- end to end ---------------------------------------------------------------------------------
def test_two_rounds_then_resume_with_a_fake_trainer(source, tmp_path, capsys):
    out = tmp_path / "run"
    index_before = (source / "index.json").read_bytes()
    trainer = f"trainer={{_target_:{__name__}.FakeTrainer}}"
    FakeTrainer.instances, FakeTrainer.trained = 0, []
    summaries = evolve.run(load([*_overrides(source, out, 2), trainer]), out)
    assert [s["round"] for s in summaries] == [0, 1] and FakeTrainer.trained == [0, 1]
    first = summaries[0]
    assert len(first["arena"]) == 3  # one env per L1 category
    assert first["weak_envs"] and first["new_versions"] and first["failure_classes"]
    for r in (0, 1):
        folder = out / f"round_{r:03d}"
        for name in ROUND_FILES:
            assert (folder / name).is_file(), (r, name)
        assert list((folder / "evolved").glob("*.json"))
        episodes = (folder / "episodes.jsonl").read_text().splitlines()
        assert len(episodes) == summaries[r]["eval_tasks"] > 0
        diagnosis = orjson.loads((folder / "diagnosis.json").read_bytes())
        assert diagnosis["weak_envs"] == summaries[r]["weak_envs"]
        versions = orjson.loads((folder / "versions.json").read_bytes())
        assert {v["gym_id"] for v in versions} == set(summaries[r]["new_versions"])
    new_tasks = orjson.loads((out / "round_000" / "new_tasks.json").read_bytes())
    assert any(new_tasks.values())
    # the evolved catalog is a copy in the run folder; the source is untouched
    assert (source / "index.json").read_bytes() == index_before
    assert not list(source.glob("*.v1"))
    copy = {(e.id, e.version) for e in read_index(out / "catalog")}
    for gid in first["new_versions"]:
        slug, version = gid.split("/")[1].rsplit("-v", 1)
        assert (slug, int(version)) in copy and (out / "catalog" / f"{slug}.v{version}").is_dir()
    assert json.loads((out / "run_config.json").read_text())["catalog"] == str(source)
    assert json.loads((out / "summary.json").read_text())["rounds"] == 2

    # resume with one more round: rounds 0 and 1 are skipped, round 2 runs
    done = (out / "round_001" / "summary.json").read_bytes()
    more = evolve.run(load([*_overrides(source, out, 3), trainer]), out)
    assert [s["round"] for s in more] == [0, 1, 2] and more[:2] == summaries
    assert FakeTrainer.trained == [0, 1, 2]
    assert (out / "round_001" / "summary.json").read_bytes() == done
    # everything finished: the trainer is not even built
    FakeTrainer.instances = 0
    evolve.run(load([*_overrides(source, out, 3), trainer]), out)
    assert FakeTrainer.instances == 0 and FakeTrainer.trained == [0, 1, 2]
    with pytest.warns(UserWarning, match="evolution.eval_tasks_per_env"):
        evolve.run(
            load([*_overrides(source, out, 3), trainer, "evolution.eval_tasks_per_env=3"]), out
        )

    capsys.readouterr()
    assert cli(["evolve", "report", str(out), "--no-plot"]) == 0
    text = capsys.readouterr().out
    assert "L1-15 Health" in text and "r2" in text


@pytest.mark.filterwarnings("ignore:.*is out of date")
def test_grpo_on_the_tiny_model_warm_starts_and_resumes(source, tmp_path):
    out = tmp_path / "run"
    tiny = [
        "model=tiny",
        "threads=1",
        "warm_start.epochs=0.3",
        "algo.tasks_per_step=1",
        "algo.group_size=2",
        "algo.rollout.max_turns=1",
        "algo.rollout.max_new_tokens=4",
        "eval_max_new_tokens=4",
        "evolution.train_steps_per_round=1",
        "evolution.eval_max_turns=1",
    ]
    first_env = read_index(source)[0]

    def overrides(rounds: int) -> list[str]:
        base = [o for o in _overrides(source, out, rounds) if not o.startswith("warm_start_envs")]
        return [*base, f"warm_start_envs=[{first_env.id}]", *tiny]

    evolve.run(load(overrides(1)), out)
    assert json.loads((out / "warm_start" / "envs.json").read_text()) == [first_env.gym_id]
    assert list((out / "warm_start" / "checkpoints").glob("sft-*"))
    assert list((out / "round_000" / "checkpoint" / "checkpoints").glob("evolve-000001"))
    for name in ROUND_FILES:
        assert (out / "round_000" / name).is_file(), name

    summaries = evolve.run(load(overrides(2)), out)
    assert [s["round"] for s in summaries] == [0, 1]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    grpo_steps = [r["step"] for r in rows if r.get("phase") == "grpo"]
    assert grpo_steps == [1, 2]  # the resumed run continued at step 2, from the checkpoint
    sft_rows = [r for r in rows if r.get("phase") == "sft"]
    assert len(sft_rows) == len({r["step"] for r in sft_rows})  # the warm start did not rerun
    assert list((out / "round_001" / "checkpoint" / "checkpoints").glob("evolve-000002"))


def test_eval_only_trainer_evaluates_a_backend_without_training(source):
    from agentworld_gym.spec import EnvSpec
    from algorithms.evolution_trainer import EvalOnlyTrainer

    entry = read_index(source)[0]
    spec = EnvSpec.load(entry.folder)
    tasks = [EvalTask(spec, t.id, entry.gym_id, "x") for t in spec.tasks[:2]]
    policy = AnswerOnly()
    policy.answers = {t.instruction: str(t.gold.get("answer", "")) for t in spec.tasks[:1]}
    trainer = EvalOnlyTrainer(policy)
    assert trainer.train(None, 5) is None
    records = trainer.evaluate(tasks)
    assert [r.task_id for r in records] == [t.task_id for t in tasks]
