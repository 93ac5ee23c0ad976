"""Self-evolution: a warm-started policy and its environments, improved round after round.

    python experiments/evolve.py                        # the CPU demo (make evolve): 2 rounds
    python experiments/evolve.py out_dir=runs/evo       # run it again, same out_dir: it resumes
    python experiments/evolve.py out_dir=runs/evo evolution.rounds=3   # one more round
    python experiments/evolve.py evolution.k_per_category=2 evolution.train_steps_per_round=4
    python experiments/evolve.py catalog=envs_generated extra_envs=[] evolution=default \\
        model=qwen2_5_1_5b algo=grpo_gpu llm=vllm warm_start.enabled=false      # real scale
    python experiments/evolve.py llm=openai llm.model=NAME llm.base_url=URL  # no training:
        # evolve the environments against a served model's failures
    python experiments/evolve.py evolution.diagnosis=llm diagnoser.backend=openai \\
        diagnoser.model=NAME diagnoser.base_url=URL      # an LLM refines the diagnosis
    python experiments/evolve.py evolution.held_out_suite=bfcl-multi-turn \\
        evolution.held_out_tasks_per_env=20   # also a held-out benchmark every round
    python experiments/evolve.py -m evolution.k_per_category=1,2 \\
        'out_dir=multirun/evo-k${evolution.k_per_category}'     # a sweep: one out_dir per job
    python experiments/evolve.py --help                 # config groups and every value

The policy is built like ``experiments/train.py``'s (groups ``model``, ``llm``, ``algo``; the
embedded SmolLM2-135M by default), warm-started by SFT on the gold trajectories of the
catalog's training tasks, then every round runs
``GRPO (evolution.train_steps_per_round steps) → arena (evolution.k_per_category envs per
L1 category) → fresh evaluation tasks → diagnosis → weak envs co-evolved (richer database,
carried-over and new tasks) → new versions committed``. The catalog that evolves is a *copy*
in the run folder (``catalog=demo``: the three demo environments of ``demo_envs.py``, plus
``extra_envs`` taken from the registered catalog); the source is never changed unless
``copy_catalog=false``.

The run folder (``out_dir``, also Hydra's run folder) holds ``catalog/`` (the evolving copy),
``warm_start/`` (SFT checkpoints and the env ids it used), ``round_<r>/`` (eval tasks,
``episodes.jsonl``, ``diagnosis.json``/``.md`` + plots, ``evolved/``, ``new_tasks.json``,
``versions.json``, the policy ``checkpoint/``, ``summary.json``), ``metrics.jsonl``,
``training_curves.png``, ``success_by_round.png``, ``run_config.json``, ``summary.json``
and ``evolve.log``. ``agentworld evolve report OUT_DIR`` prints per-round success by category.

Resuming (same ``out_dir``): finished rounds are skipped; an interrupted round is rolled back
(its catalog commit undone) and redone. The policy is restored exactly: the finished warm
start is reloaded from its checkpoint (not retrained), then the last finished round's
checkpoint restores the trained weights (LoRA adapters, or every weight), the optimizer,
the GRPO step (which fixes the learning-rate schedule and the tasks each step draws) and
the RNG states. With full fine-tuning and ``algo.beta > 0`` the KL reference after a resume
is the restored policy, not the warm-started one (with LoRA it is unchanged). wandb resumes
its run; ``metrics.jsonl`` is appended to.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import hydra  # noqa: E402
from demo_envs import ensure_demo_catalog  # noqa: E402
from hydra.utils import instantiate, to_absolute_path  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from agentworld_gym.errors import ConfigError  # noqa: E402
from agentworld_gym.evolution import EvolutionConfig, Trainer, run_evolution  # noqa: E402
from agentworld_gym.evolution.arena import latest_entries  # noqa: E402
from agentworld_gym.evolution.catalog import register  # noqa: E402
from agentworld_gym.evolution.config import DiagnosisMode  # noqa: E402
from agentworld_gym.evolution.loop import SUMMARY, round_dir  # noqa: E402
from agentworld_gym.evolution.protocols import TaskSynthesizer  # noqa: E402
from agentworld_gym.llm.base import LLMConfig  # noqa: E402
from agentworld_gym.llm.vllm_backend import VLLMConfig  # noqa: E402
from agentworld_gym.registry import entry_for, read_index, resolve, write_index  # noqa: E402
from agentworld_gym.spec import EnvSpec  # noqa: E402
from algorithms import pipeline  # noqa: E402
from algorithms.grpo.config import GRPOConfig  # noqa: E402
from algorithms.models import ModelConfig  # noqa: E402
from algorithms.sft import SFTConfig  # noqa: E402
from algorithms.tracking import LoggerConfig, Tracker  # noqa: E402

logger = logging.getLogger(__name__)

TRAINABLE = ("transformers", "embedded", "vllm")
"""``llm.backend`` values that train the ``model`` in process; any other only evaluates."""
NOT_COMPARED = ("out_dir", "evolution.rounds", "threads", "logger.")
"""Settings that may change when a run is resumed without a warning."""


class SynthesizerChoice(StrEnum):
    """Who writes evaluation and training tasks (``synthesizer=fallback``)."""

    auto = "auto"
    """``agentworld_gym.synthesis.tasks`` when it has a usable entry point, else ``fallback``."""
    fallback = "fallback"
    """The built-in seeded synthesizer over declarative ``op`` tools (Python-tool envs get
    none: their evaluation uses their held-out test tasks)."""


@dataclass
class EvolveConfig:
    """One self-evolution run: the policy, how it trains, the catalog it co-evolves with."""

    evolution: EvolutionConfig = field(default_factory=EvolutionConfig)
    """The loop (group ``evolution``: ``demo`` or ``default``): rounds, arena size, eval tasks,
    GRPO steps per round (``train_steps_per_round``; ``algo.steps`` is not used), weak envs."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy (group ``model``), as in ``experiments/train.py``."""
    llm: LLMConfig = field(
        default_factory=lambda: LLMConfig(model="policy", backend="transformers")
    )
    """Generation (group ``llm``): ``transformers``/``vllm`` train ``model`` in process; any
    other backend (``openai``...) is evaluated as it is, without training."""
    vllm: VLLMConfig = field(default_factory=VLLMConfig)
    """vLLM engine settings (``llm.backend=vllm``)."""
    algo: GRPOConfig = field(default_factory=GRPOConfig)
    """GRPO settings of every round's training (group ``algo``)."""
    warm_start: SFTConfig = field(default_factory=lambda: SFTConfig(enabled=False))
    """SFT on the gold trajectories of the catalog's training tasks before round 0 (a small
    model that has never seen the tool-call format scores 0 without it)."""
    warm_start_envs: list[str] = field(default_factory=list)
    """Environments (names) whose training tasks the warm start uses; empty = every
    environment of the catalog as the run starts."""
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    """Where training metrics go (group ``logger``)."""
    catalog: str = "demo"
    """The catalog to evolve: ``demo`` (the demo environments of ``demo_envs.py``) or a
    folder with an ``index.json`` (``envs_generated``)."""
    extra_envs: list[str] = field(default_factory=list)
    """Environments added to the copy: registered names (``whapi-locations``) or folders."""
    copy_catalog: bool = True
    """Evolve a copy in ``out_dir/catalog`` (made once, reused on resume); ``false`` adds the
    new versions to ``catalog`` itself."""
    out_dir: str = "outputs/evolve"
    """The run folder; the same folder resumes the run."""
    trainer: Any = None
    """``None``: GRPO on ``model`` (or evaluation only, per ``llm``). Otherwise a node for
    ``hydra.utils.instantiate`` (``{_target_: pkg.Class, ...}``) giving any object with
    ``train(pool, steps)`` and ``evaluate(tasks)`` (``agentworld_gym.evolution.Trainer``)."""
    synthesizer: SynthesizerChoice = SynthesizerChoice.auto
    """Who writes evaluation and training tasks."""
    diagnoser: LLMConfig = field(default_factory=lambda: LLMConfig(model=""))
    """The diagnosis agent's LLM (``evolution.diagnosis=llm``)."""
    eval_temperature: float = 0.0
    """Sampling temperature of evaluation episodes (0 = greedy)."""
    eval_max_new_tokens: int = 256
    """Tokens per assistant turn in evaluation episodes."""
    seed: int = 0
    """torch seed set before the model is built."""
    threads: int | None = None
    """torch CPU threads (``None``: the cores other processes leave free, see
    :func:`agentworld_gym.llm.hardware.auto_threads`)."""


def register_configs() -> None:
    """Register the schemas (``conf/evolve.yaml`` and ``conf/evolution/*.yaml`` extend them)."""
    from hydra.core.config_store import ConfigStore

    pipeline.register_configs()
    cs = ConfigStore.instance()
    cs.store(name="evolve_schema", node=EvolveConfig)
    cs.store(group="evolution", name="evolution_schema", node=EvolutionConfig)


register_configs()


# -- the catalog -------------------------------------------------------------------------------
def source_catalog(cfg: EvolveConfig) -> Path:
    """The folder ``cfg.catalog`` names (the demo catalog is written on first use)."""
    if cfg.catalog == "demo":
        return ensure_demo_catalog()
    root = Path(to_absolute_path(cfg.catalog))
    if not read_index(root):
        raise ConfigError(
            f"catalog={cfg.catalog!r}: {root} has no index.json with environments; use "
            "'demo' or a catalog folder such as envs_generated"
        )
    return root


def env_folder(name: str) -> Path:
    """An environment folder (with ``env.json``) or a registered name → its folder."""
    path = Path(to_absolute_path(name))
    if (path / "env.json").is_file():
        return path
    return resolve(name).folder


def prepare_catalog(cfg: EvolveConfig, out_dir: Path) -> Path:
    """The catalog the run evolves: ``out_dir/catalog`` (copied once from the source and
    ``extra_envs``; a resumed run keeps its evolved copy), or the source itself."""
    source = source_catalog(cfg)
    extra = [env_folder(name) for name in cfg.extra_envs]
    if not cfg.copy_catalog:
        if extra:
            raise ConfigError("extra_envs needs copy_catalog=true (they are added to the copy)")
        return source
    target = out_dir / "catalog"
    if (target / "index.json").is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    tmp = out_dir / ".catalog-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    entries = read_index(source)
    for entry in entries:
        shutil.copytree(entry.folder, tmp / entry.path)
    ids = {e.id for e in entries}
    for folder in extra:
        spec = EnvSpec.load(folder)
        if spec.id in ids or (tmp / folder.name).exists():
            raise ConfigError(f"extra_envs: {spec.id} ({folder}) is already in the catalog")
        ids.add(spec.id)
        shutil.copytree(folder, tmp / folder.name)
        entries.append(entry_for(spec, folder.name))
    write_index(tmp, entries)
    os.replace(tmp, target)
    logger.info("evolving a copy of %s (+%d extra envs) in %s", source, len(extra), target)
    return target


# -- the trainer ---------------------------------------------------------------------------
class _NothingLeft:
    """Stands in for the trainer when every round is finished (nothing to build or load)."""

    def train(self, pool: Any, steps: int) -> dict[str, Any] | None:
        raise RuntimeError("every round is finished; nothing should be trained")

    def evaluate(self, tasks: list[Any]) -> list[Any]:
        raise RuntimeError("every round is finished; nothing should be evaluated")


def warm_start_ids(cfg: EvolveConfig, catalog: Path, out_dir: Path) -> list[str]:
    """The env ids the warm start trains on: ``warm_start_envs`` (or every env) at their
    newest versions when the run started — recorded, so that a resumed run finds the same
    finished warm start."""
    path = out_dir / "warm_start" / "envs.json"
    if path.is_file():
        return json.loads(path.read_text())
    entries = latest_entries(read_index(catalog))
    if cfg.warm_start_envs:
        entries = [resolve(name) for name in cfg.warm_start_envs]
    ids = [e.gym_id for e in entries]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ids, indent=2))
    return ids


def build_trainer(cfg: EvolveConfig, catalog: Path, out_dir: Path, tracker: Tracker) -> Trainer:
    """The configured trainer: a custom ``trainer`` node, GRPO on ``model`` (warm-started
    first when ``warm_start.enabled``), or evaluation only of a served ``llm``."""
    from algorithms.evolution_trainer import EvalOnlyTrainer, GRPOEvolutionTrainer

    sampling = {"temperature": cfg.eval_temperature, "max_tokens": cfg.eval_max_new_tokens}
    if cfg.trainer is not None:
        return instantiate(cfg.trainer)
    if cfg.llm.backend not in TRAINABLE:
        from agentworld_gym.llm import make_backend

        return EvalOnlyTrainer(make_backend(cfg.llm), sampling)
    import torch

    from algorithms.models import load_policy
    from algorithms.pool import EnvPoolConfig, TaskPool

    torch.manual_seed(cfg.seed)
    policy = load_policy(cfg.model)
    generator = policy.generator
    if cfg.llm.backend == "vllm":
        from agentworld_gym.llm.vllm_backend import VLLMBackend

        generator = VLLMBackend.for_policy(
            policy.model, policy.tokenizer, cfg.llm, cfg.model, cfg.vllm
        )
    if cfg.warm_start.enabled:
        pool = TaskPool(EnvPoolConfig(envs=warm_start_ids(cfg, catalog, out_dir)))
        try:
            with warnings.catch_warnings():  # resumed: the recorded versions may be old ones
                warnings.filterwarnings("ignore", ".*is out of date", DeprecationWarning)
                policy, _ = pipeline.warm_start(policy, pool, cfg.warm_start, tracker, out_dir)
        finally:
            pool.close()
        generator.sync_weights(policy.model)
    return GRPOEvolutionTrainer(policy, cfg.algo, tracker, None, sampling, generator)


def make_synthesizer(choice: SynthesizerChoice) -> TaskSynthesizer:
    from agentworld_gym.evolution.adapters import default_synthesizer
    from agentworld_gym.evolution.fallback import FallbackSynthesizer

    return FallbackSynthesizer() if choice is SynthesizerChoice.fallback else default_synthesizer()


def make_diagnoser(cfg: EvolveConfig) -> Any:
    """The LLM diagnosis agent (``evolution.diagnosis=llm``), else ``None``."""
    if cfg.evolution.diagnosis is not DiagnosisMode.llm:
        return None
    if not cfg.diagnoser.model:
        raise ConfigError(
            "evolution.diagnosis=llm needs diagnoser.model (and diagnoser.backend, "
            "diagnoser.base_url for a server), e.g. diagnoser.backend=embedded diagnoser.model=x"
        )
    from agentworld_gym.evolution.llm_diagnosis import LLMDiagnoser
    from agentworld_gym.llm import make_backend

    return LLMDiagnoser(make_backend(cfg.diagnoser))


# -- the run ---------------------------------------------------------------------------------
def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: value}


def record_config(cfg: EvolveConfig, out_dir: Path) -> None:
    """Write ``run_config.json``; warn when a resumed run changes settings that matter."""
    path = out_dir / "run_config.json"
    new = pipeline.as_dict(cfg)
    if path.is_file() and any(out_dir.glob(f"round_*/{SUMMARY}")):
        old, now = _flat(json.loads(path.read_text())), _flat(new)
        changed = sorted(
            k
            for k in old.keys() | now.keys()
            if old.get(k) != now.get(k) and not k.startswith(NOT_COMPARED)
        )
        if changed:
            warnings.warn(
                f"{out_dir} was started with other values of {', '.join(changed)}: finished "
                "rounds are kept as they are, the rest run with the new values",
                stacklevel=2,
            )
    path.write_text(json.dumps(new, indent=2))


def run(cfg: EvolveConfig, out_dir: Path) -> list[dict[str, Any]]:
    """Run (or resume) the self-evolution run into ``out_dir``; returns the round summaries."""
    from agentworld_gym.evolution.report import format_run_report, plot_run

    t_start = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from agentworld_gym.llm.hardware import set_threads

    set_threads(cfg.threads)
    record_config(cfg, out)
    catalog = prepare_catalog(cfg, out)
    register(catalog)
    synthesizer = make_synthesizer(cfg.synthesizer)
    diagnoser = make_diagnoser(cfg)
    if all((round_dir(out, r) / SUMMARY).is_file() for r in range(cfg.evolution.rounds)):
        logger.info("every round of %s is finished: nothing to train", out)
        summaries = run_evolution(
            cfg.evolution, _NothingLeft(), synthesizer, catalog, out, diagnoser=diagnoser
        )
    else:
        summaries = _train_and_evolve(cfg, catalog, out, synthesizer, diagnoser, t_start)
    if cfg.evolution.plots:
        plot_run(out)
    print(format_run_report(out))
    print(f"Run folder: {out} (wall time {time.perf_counter() - t_start:.0f} s)")
    return summaries


def _train_and_evolve(
    cfg: EvolveConfig,
    catalog: Path,
    out: Path,
    synthesizer: TaskSynthesizer,
    diagnoser: Any,
    t_start: float,
) -> list[dict[str, Any]]:
    tracker = Tracker(cfg.logger, out, pipeline.as_dict(cfg))
    try:
        trainer = build_trainer(cfg, catalog, out, tracker)
        summaries = run_evolution(
            cfg.evolution, trainer, synthesizer, catalog, out, diagnoser=diagnoser
        )
        final = summaries[-1]
        held_out = {"final/held_out": final["held_out"]} if "held_out" in final else {}
        tracker.summary(
            {
                "rounds": len(summaries),
                "success_by_round": [s["success_rate"] for s in summaries],
                "final/success": final["success_rate"],
                "final/success_by_category": final["success_by_category"],
                **held_out,
                "new_versions": [v for s in summaries for v in s["new_versions"]],
                "catalog": str(catalog),
                "wall_time_s": time.perf_counter() - t_start,  # of this invocation
            }
        )
    finally:
        tracker.close()
    return summaries


@hydra.main(version_base="1.3", config_path="../conf", config_name="evolve")
def main(cfg: DictConfig) -> float:
    config: EvolveConfig = OmegaConf.to_object(cfg)
    summaries = run(config, Path(to_absolute_path(config.out_dir)))
    return summaries[-1]["success_rate"]


if __name__ == "__main__":
    main()
