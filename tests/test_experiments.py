"""Hydra experiments: every config composes into the structured schema, and the entry point
runs end to end (and as a sweep) with a tiny model and tiny budgets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("hydra")
ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("torch").set_num_threads(1)
sys.path[:0] = [str(ROOT), str(ROOT / "experiments")]

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from algorithms.grpo.config import GRPOConfig  # noqa: E402
from algorithms.pipeline import TrainConfig, register_configs, run  # noqa: E402
from algorithms.sft import SFTConfig  # noqa: E402

register_configs()
TINY = [
    "model=tiny",
    "threads=1",
    "logger=disabled",
    "logger.progress=false",
    "warm_start.epochs=0.3",
    "algo.steps=1",
    "algo.tasks_per_step=1",
    "algo.group_size=2",
    "algo.rollout.max_turns=1",
    "algo.rollout.max_new_tokens=4",
    "eval.max_tasks=2",
    "eval.max_turns=1",
    "eval.max_new_tokens=4",
]


def load(overrides: list[str], name: str = "train") -> TrainConfig:
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name=name, overrides=overrides)
    return OmegaConf.to_object(cfg)


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["algo=sft"],
        ["model=tiny", "llm=vllm", "env_pool=notion", "logger=online"],
        ["env_pool=all", "logger=disabled", "llm=openai", "llm.model=m"],
        ["algo.loss_aggregation=sequence", "algo.scale_rewards_by_std=false"],
    ],
)
def test_configs_compose_into_dataclasses(overrides):
    cfg = load(overrides)
    assert isinstance(cfg, TrainConfig)
    assert isinstance(cfg.algo, SFTConfig if "algo=sft" in overrides else GRPOConfig)
    assert isinstance(cfg.warm_start, SFTConfig)


def test_gpu_config_composes():
    cfg = load([], name="gpu")
    assert cfg.llm.backend == "vllm" and cfg.algo.dynamic_sampling


def test_bad_override_names_the_field():
    with pytest.raises(Exception, match="loss_aggregation"):
        load(["algo.loss_aggregation=mean"])


def test_pipeline_runs_sft_grpo_and_eval(tmp_path):
    cfg = load([*TINY, "eval.extra_envs=[]"])
    assert cfg.env_pool.rule.enabled and not cfg.env_pool.catalogs  # catalog envs only
    summary = run(cfg, tmp_path)
    for name in ("metrics.jsonl", "summary.json", "eval_report.json", "eval_table.md", "eval.png"):
        assert (tmp_path / name).is_file(), name
    assert (tmp_path / "training_curves.png").is_file()
    held = set(summary["split/heldout_envs"]) | set(summary["split/heldout_category_envs"])
    assert held and not held & set(summary["env_ids"])
    for label in ("base", "sft", "trained"):
        assert f"{label}/held-out envs/success" in summary
    assert summary["grpo/reward_without_ok_call"] >= 0.0
    report = json.loads((tmp_path / "eval_report.json").read_text())
    assert "trained-sft" in report["held-out envs"]["diff"]
    # per-episode results, so that evaluations from separate runs can be paired later
    from algorithms import heldout

    results = heldout.read_results(tmp_path / "eval_results.json")
    assert set(results) == {"base", "sft", "trained"}
    assert 0.0 <= results["trained"]["held-out envs"].answered <= 1.0
    again = heldout.report(results, cfg.eval.bootstrap_resamples)
    assert json.loads(json.dumps(again)) == report
    from pair_evals import main as pair_evals

    pair_evals([str(tmp_path / "paired"), f"base={tmp_path}", f"sft={tmp_path}:trained"])
    paired = json.loads((tmp_path / "paired" / "eval_report.json").read_text())
    assert (
        paired["held-out envs"]["diff"]["sft-base"]
        == report["held-out envs"]["diff"]["trained-base"]
    )
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {r["phase"] for r in rows} >= {"eval_base", "sft", "grpo", "eval_trained"}
    assert (tmp_path / "checkpoints").is_dir()


def test_eval_results_count_the_episodes_that_ended_with_an_answer():
    from types import SimpleNamespace

    from algorithms.evaluate import summarise
    from algorithms.grpo.rollout import Trajectory
    from algorithms.pool import TaskRef

    ends = ["answer", "max_turns", "answer", "token_budget"]
    trajs = [Trajectory(TaskRef("e", f"t{i}"), end=end) for i, end in enumerate(ends)]
    result = summarise(trajs, SimpleNamespace(categories={}))
    assert result.answered == 0.5 and result.success == 0.0


def test_sweep_gives_each_run_its_own_folder(tmp_path):
    cmd = [
        sys.executable,
        str(ROOT / "experiments" / "train.py"),
        "-m",
        *TINY,
        "warm_start.enabled=false",
        "eval.before=false",
        "algo.lr=1e-3,2e-3",
        f"hydra.sweep.dir={tmp_path}",
    ]
    env = {**os.environ, "WANDB_MODE": "disabled"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = sorted(p for p in tmp_path.iterdir() if (p / "summary.json").is_file())
    assert [p.name for p in runs] == ["0", "1"]


def test_scaling_config_composes_and_collects_points(tmp_path):
    import scaling

    cfg = load([], name="scaling")
    assert cfg.env_pool.rule.enabled and cfg.warm_start.steps and not cfg.eval.before
    assert cfg.eval.parts == ["heldout_envs"] and cfg.eval.gold_nll
    for job, envs, success in (("0", 4, 0.1), ("1", 12, 0.3)):
        folder = tmp_path / job
        folder.mkdir()
        (folder / "summary.json").write_text(json.dumps({"env_ids": ["e"] * envs}))
        trained = {"success": success, "ci95": [0.0, 0.5], "episodes": 50}
        trained |= {"gold_nll": 1.0 - success, "gold_nll_ci95": [0.5, 1.0]}
        row = {"trained": trained, "diff": {}}
        (folder / "eval_report.json").write_text(json.dumps({"held-out envs": row}))
    points = scaling.collect(tmp_path)
    assert [p["train_envs"] for p in points] == [4, 12]
    table = scaling.write(points, tmp_path)
    assert "| 12 | 30.0% [0.0%, 50.0%] (n=50) | 0.700 [0.500, 1.000] |" in table
    assert "held-out category" not in table  # a set no point evaluated gets no column
    assert (tmp_path / "scaling.png").is_file()
