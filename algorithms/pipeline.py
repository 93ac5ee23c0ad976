"""The experiment as one function: warm start → algorithm → evaluation, from one config.

``experiments/train.py`` is a thin Hydra entry point around :func:`run`; the structured config
(:class:`TrainConfig` and the group schemas) is registered in Hydra's ConfigStore by
:func:`register_configs`, and the YAML files under ``conf/`` only override it. Library code
receives plain dataclasses (``OmegaConf.to_object``), never a ``DictConfig``.

Under ``torchrun`` (``WORLD_SIZE > 1``) the same entry point runs on every rank: rank 0 does
everything it does in one process (evaluation, logging, the warm start, the final model) and
every rank trains GRPO data-parallel (:mod:`algorithms.distributed`); the run folder is rank
0's (put it on storage every node sees for multi-node runs: ``hydra.run.dir=...``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_gym.errors import ConfigError
from agentworld_gym.llm.base import LLMConfig
from agentworld_gym.llm.hardware import set_threads
from agentworld_gym.llm.vllm_backend import VLLMConfig
from algorithms import distributed, heldout
from algorithms.distributed import Dist, DistributedConfig
from algorithms.evaluate import EvalConfig, EvalResult
from algorithms.grpo.config import GRPOConfig
from algorithms.models import ModelConfig, Policy, load_policy, merge_adapters
from algorithms.pool import EnvPoolConfig, TaskPool
from algorithms.sft import GoldBudget, SFTConfig, gold_budget, gold_examples, run_sft
from algorithms.tracking import JobEta, LoggerConfig, Tracker

logger = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    """One experiment: which model, which environments, which algorithm, how it is logged."""

    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy (group ``model``)."""
    llm: LLMConfig = field(
        default_factory=lambda: LLMConfig(model="policy", backend="transformers")
    )
    """How rollouts are generated (group ``llm``): ``transformers`` (in process, sharing the
    trained model), ``vllm`` (GPU, weights synced after each update), or ``openai``/any chat
    backend — then the run only evaluates that model (no training)."""
    vllm: VLLMConfig = field(default_factory=VLLMConfig)
    """vLLM engine settings (used when ``llm.backend=vllm``)."""
    env_pool: EnvPoolConfig = field(default_factory=EnvPoolConfig)
    """Environments and splits (group ``env_pool``)."""
    algo: Any = None
    """The main phase (group ``algo``): a :class:`GRPOConfig` or an :class:`SFTConfig`
    (typed ``Any`` so that either option can fill it; ``None`` = GRPO with defaults)."""
    warm_start: SFTConfig = field(default_factory=lambda: SFTConfig(enabled=False))
    """Supervised warm start on gold trajectories before ``algo``."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Held-out evaluation before and after training."""
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    """Where metrics go (group ``logger``)."""
    evolution: Any = None
    """Self-evolution rounds (group ``evolution``; filled in by the evolution loop)."""
    seed: int = 0
    """Global seed (torch, numpy, random) set before the model is built."""
    resume: bool = True
    """Continue from the checkpoints in the output folder when there are any."""
    threads: int | None = None
    """torch CPU threads (``None``: the cores other processes leave free, see
    :func:`agentworld_gym.llm.hardware.auto_threads`)."""
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    """Data parallelism when launched by ``torchrun`` (ignored in one process)."""


def register_configs() -> None:
    """Register the schemas with Hydra's ConfigStore (``conf/`` YAML files extend them)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    cs.store(group="model", name="model_schema", node=ModelConfig)
    cs.store(group="llm", name="llm_schema", node=LLMConfig)
    cs.store(group="env_pool", name="env_pool_schema", node=EnvPoolConfig)
    cs.store(group="algo", name="grpo_schema", node=GRPOConfig)
    cs.store(group="algo", name="sft_schema", node=SFTConfig)
    cs.store(group="logger", name="logger_schema", node=LoggerConfig)


def run(cfg: TrainConfig, out_dir: Path) -> dict[str, Any]:
    """Run the experiment into ``out_dir``; returns the summary (also in ``summary.json``).

    Under ``torchrun``, every rank calls this; ranks other than 0 train and return ``{}``.
    """
    dist = distributed.init(cfg.distributed)
    if not dist.enabled:
        return _run(cfg, Path(out_dir), dist)
    try:
        out_dir = Path(dist.broadcast_object(str(out_dir)))  # rank 0's folder, for everyone
        summary = _run(cfg, out_dir, dist) if dist.is_main else _train_rank(cfg, out_dir, dist)
        dist.barrier()  # every rank done before any leaves the process group
        return summary
    finally:
        distributed.shutdown()


def _train_rank(cfg: TrainConfig, out_dir: Path, dist: Dist) -> dict[str, Any]:
    """A rank other than 0: the same policy and pool, the warm start reloaded from rank 0's
    checkpoint, and its share of GRPO; no evaluation, no logging, no files."""
    import torch

    torch.manual_seed(cfg.seed)
    set_threads(cfg.threads)
    algo = cfg.algo if cfg.algo is not None else GRPOConfig()
    if not isinstance(algo, GRPOConfig):
        raise ConfigError("under torchrun, algo must be grpo (SFT runs in one process)")
    pool = TaskPool(cfg.env_pool)
    try:
        policy = load_policy(cfg.model)
        generator = _generator(cfg, policy)
        if cfg.warm_start.enabled:
            dist.barrier()  # rank 0 trains the warm start; here it is only reloaded
            policy, _ = warm_start(policy, pool, cfg.warm_start, None, out_dir)
            generator.sync_weights(policy.model)
        from algorithms.grpo.trainer import GRPOTrainer

        trainer = GRPOTrainer(policy, pool, algo, None, out_dir, generator, dist=dist)
        trainer.train(resume=cfg.resume)
        return {}
    finally:
        pool.close()


def _generator(cfg: TrainConfig, policy: Policy) -> Any:
    if cfg.llm.backend == "vllm":
        from agentworld_gym.llm.vllm_backend import VLLMBackend

        return VLLMBackend.for_policy(policy.model, policy.tokenizer, cfg.llm, cfg.model, cfg.vllm)
    return policy.generator


def _run(cfg: TrainConfig, out_dir: Path, dist: Dist) -> dict[str, Any]:
    import torch

    t_start = time.perf_counter()
    torch.manual_seed(cfg.seed)
    set_threads(cfg.threads)
    pool = TaskPool(cfg.env_pool)
    if pool.split is not None:
        logger.info("%s", pool.split.describe())
    sets = heldout.eval_sets(pool, cfg.eval) if cfg.eval.before or cfg.eval.after else []
    tracker = Tracker(cfg.logger, out_dir, as_dict(cfg))
    tracker.eta = JobEta(_plan(cfg))
    summary: dict[str, Any] = {"env_ids": pool.env_ids, **_split_summary(pool)}
    results: dict[str, dict[str, EvalResult]] = {}
    try:
        if cfg.llm.backend not in ("transformers", "embedded", "vllm"):
            from agentworld_gym.llm import make_backend

            backend = make_backend(cfg.llm)
            results[cfg.llm.model] = _evaluate(backend, sets, tracker, "eval", cfg.threads)
            return _finish(summary, results, tracker, out_dir, t_start, cfg.eval)
        policy = load_policy(cfg.model)
        generator = _generator(cfg, policy)
        summary.update(check_budgets(policy, pool, cfg))
        if cfg.eval.before:
            results["base"] = _evaluate(generator, sets, tracker, "eval_base", cfg.threads)
        if cfg.warm_start.enabled:
            set_threads(cfg.threads)  # auto: re-read at each phase; other jobs come and go
            policy, metrics = warm_start(policy, pool, cfg.warm_start, tracker, out_dir)
            dist.barrier()  # the other ranks reload it now
            summary.update(metrics)
            generator.sync_weights(policy.model)
            if cfg.eval.before and cfg.eval.after and _training_steps(cfg) > 0:
                results["sft"] = _evaluate(generator, sets, tracker, "eval_sft", cfg.threads)
        algo = cfg.algo if cfg.algo is not None else GRPOConfig()
        final = policy.model
        if isinstance(algo, SFTConfig):
            if dist.enabled:
                raise ConfigError("under torchrun, algo must be grpo (SFT runs in one process)")
            summary.update(run_sft(policy, pool, algo, tracker, out_dir / "sft"))
            generator.sync_weights(policy.model)
        elif isinstance(algo, GRPOConfig):
            from algorithms.grpo.trainer import GRPOTrainer

            set_threads(cfg.threads)
            trainer = GRPOTrainer(policy, pool, algo, tracker, out_dir, generator, dist=dist)
            history = trainer.train(resume=cfg.resume)
            trainer.close()
            final = trainer.gen_model  # the model itself, or its full replica under FSDP
            if history:
                summary["grpo_last"] = history[-1]
                summary.update(hacking_guard(history, algo.tasks_per_step * algo.group_size))
        else:
            raise ConfigError(f"algo must be grpo or sft, got {type(algo).__name__}")
        if cfg.eval.after:
            results["trained"] = _evaluate(generator, sets, tracker, "eval_trained", cfg.threads)
        if hasattr(final, "merge_and_unload"):
            final = final.merge_and_unload()
        final.save_pretrained(out_dir / "final_model")  # a plain model: load with from_pretrained
        policy.tokenizer.save_pretrained(out_dir / "final_model")
        return _finish(summary, results, tracker, out_dir, t_start, cfg.eval)
    finally:
        tracker.close()
        heldout.close_sets(sets)
        pool.close()


def warm_start(
    policy: Policy, pool: TaskPool, config: SFTConfig, tracker: Tracker | None, out_dir: Path
) -> tuple[Policy, dict[str, float]]:
    """SFT on the pool's gold trajectories (checkpoints in ``out_dir/warm_start``, so a rerun
    only reloads a finished one), then the adapters folded in: the warm-started model is
    what "adapters off" means from then on — GRPO's KL reference."""
    metrics = run_sft(policy, pool, config, tracker, Path(out_dir) / "warm_start")
    return merge_adapters(policy), metrics


def budget_problems(budget: GoldBudget, cfg: TrainConfig) -> list[str]:
    """What in the run's episode budgets (``eval``, and ``algo.rollout`` for GRPO) would cut
    the training pool's gold episodes: a call cut at ``max_new_tokens`` is malformed, and an
    episode with no turn left for its answer fails however good the policy is."""
    e = cfg.eval
    out = budget.problems("eval", e.max_turns, e.max_new_tokens, e.max_episode_tokens)
    if isinstance(cfg.algo, GRPOConfig) and cfg.algo.steps > 0:
        r = cfg.algo.rollout
        out += budget.problems("algo.rollout", r.max_turns, r.max_new_tokens, r.max_episode_tokens)
    return out


def check_budgets(policy: Policy, pool: TaskPool, cfg: TrainConfig) -> dict[str, float]:
    """Measure the gold episodes of the pool's training split with the policy's tokenizer,
    warn about every budget that cuts them (:func:`budget_problems`), and return the
    measurements for ``summary.json``."""
    examples = gold_examples(policy, pool, pool.config.train_split, max_tokens=1 << 30)
    if not examples:
        return {}
    budget = gold_budget(examples)
    for problem in budget_problems(budget, cfg):
        warnings.warn(f"{problem}: raise it", stacklevel=2)
    return {
        "gold/most_turns": float(budget.most_turns),
        "gold/longest_turn_tokens": float(budget.longest_turn),
        "gold/longest_episode_tokens": float(budget.longest_episode),
    }


def _plan(cfg: TrainConfig) -> dict[str, int]:
    """The job's units for its ETA: evaluations and GRPO steps (SFT registers its steps when
    it knows how many gold trajectories it has)."""
    steps = _training_steps(cfg)
    evals = int(cfg.eval.before) + int(cfg.eval.after)
    evals += int(cfg.eval.before and cfg.eval.after and cfg.warm_start.enabled and steps > 0)
    return {"eval": evals, "grpo": steps if isinstance(cfg.algo, GRPOConfig) else 0}


def _training_steps(cfg: TrainConfig) -> int:
    return getattr(cfg.algo, "steps", 1) if isinstance(cfg.algo, GRPOConfig) else 1


def hacking_guard(history: list[dict[str, float]], rollouts_per_step: int) -> dict[str, float]:
    """The share of GRPO rollouts rewarded without a single successful tool call, over the
    run and at its worst step, and the share the environments refused to pay (attempts the
    verifiers' rules caught); printed, since a reward curve is only real when the first is
    ~0."""
    shares = [h.get("reward/without_ok_call", 0.0) for h in history]
    refused = [h.get("reward/unpaid", 0.0) for h in history]
    out = {
        "grpo/reward_without_ok_call": sum(shares) / len(shares),
        "grpo/reward_without_ok_call_max": max(shares),
        "grpo/reward_unpaid": sum(refused) / len(refused),
        "grpo/rollouts": float(len(shares) * rollouts_per_step),
    }
    print(
        f"Reward-hacking guard: {out['grpo/reward_without_ok_call']:.1%} of "
        f"{int(out['grpo/rollouts'])} GRPO rollouts got reward > 0 without a successful tool "
        f"call (worst step {out['grpo/reward_without_ok_call_max']:.1%}); the environments "
        f"refused to pay {out['grpo/reward_unpaid']:.1%} (criteria met without a successful "
        "call, or an answer the episode never looked up); curves in training_curves.png"
    )
    return out


def _split_summary(pool: TaskPool) -> dict[str, Any]:
    """The catalog split's parts (env ids) for ``summary.json``."""
    if pool.split is None:
        return {}
    s = pool.split
    return {
        "split/heldout_envs": s.heldout_envs,
        "split/heldout_category": s.category,
        "split/heldout_category_envs": s.heldout_category,
        "split/qualifying_envs": s.qualifying,
    }


def _evaluate(
    model: Any, sets: list[heldout.EvalSet], tracker: Tracker, label: str, threads: int | None
) -> dict[str, EvalResult]:
    set_threads(threads)
    t0 = time.perf_counter()
    logger.info("%s: evaluating on %s ...", label, ", ".join(s.name for s in sets))
    results = heldout.evaluate_sets(model, sets)
    for name, r in results.items():
        logger.info("%s: %s: success %.3f over %d episodes", label, name, r.success, r.episodes)
    metrics = {f"{label}/{name}/success": r.success for name, r in results.items()}
    tracker.log({"phase": label, **metrics, f"perf/{label}_s": time.perf_counter() - t0}, step=0)
    return results


def _finish(summary, results, tracker, out_dir, t_start, eval_cfg: EvalConfig) -> dict[str, Any]:
    if results:
        rep = heldout.report(results, eval_cfg.bootstrap_resamples)
        table = heldout.write(rep, out_dir)
        heldout.write_results(results, out_dir)
        print("\nHeld-out evaluation (success, 95% bootstrap CI; differences paired):")
        print(table)
        for label, per_set in results.items():
            for name, r in per_set.items():
                summary[f"{label}/{name}/success"] = r.success
    summary["wall_time_s"] = time.perf_counter() - t_start
    tracker.summary(summary)
    print(f"Run folder: {out_dir} (wall time {summary['wall_time_s']:.0f} s)")
    return summary


def as_dict(cfg: Any) -> dict[str, Any]:
    """The config as JSON-friendly data (enums as their values) for wandb and the run files."""
    import json

    return json.loads(json.dumps(dataclasses.asdict(cfg), default=str))
