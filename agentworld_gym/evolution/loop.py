"""The self-evolution loop: ``run_evolution(config, trainer, synthesizer, catalog_root, out_dir)``.

One round, always in this order::

    train(pool)  ->  arena  ->  fresh eval tasks  ->  evaluate  ->  [held-out suite]
                 ->  diagnose  ->  co-evolve weak envs  ->  commit new versions  ->  summary

A run folder holds ``config.json`` and one ``round_<r>/`` per round with ``pool.json``,
``train.json``, ``arena.json``, ``eval_tasks.json``, ``episodes.jsonl``, ``diagnosis.json``,
``diagnosis.md`` (+ ``plots/``), ``evolved/<slug>.json`` (complexification, carried-over
tasks, guidelines), ``new_tasks.json``, ``versions.json`` (the new versions' catalog
folders and database fingerprints), ``registry_journal.json``, the trainer's
``checkpoint/`` (if it can save one) and, written last, ``summary.json``. With
``EvolutionConfig.held_out_suite`` a round also evaluates that registered suite (BFCL, τ²...)
as a held-out pool, never trained on, diagnosed or evolved: ``held_out_episodes.jsonl`` and
``held_out.json`` (success per suite category with task counts and 95% Wilson intervals, also
in the summary under ``held_out``).

A round with a summary is finished and skipped when the run is started again; an unfinished
one is rolled back (its registry commit undone) and redone, after the trainer is restored
from the last finished round's checkpoint. Seeds mix the run seed with the round (and the
environment), so a redone round draws the same arena and tasks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.evolution.arena import Arena, latest_entries, sample_arena
from agentworld_gym.evolution.catalog import commit_versions, register, rollback, write_journal
from agentworld_gym.evolution.coevolve import evolve_env, normalise_instruction, validated
from agentworld_gym.evolution.config import DiagnosisMode, EvolutionConfig
from agentworld_gym.evolution.diagnosis import Diagnosis, class_totals, diagnose
from agentworld_gym.evolution.episodes import (
    EpisodeRecord,
    EvalTask,
    load_episodes,
    save_episodes,
)
from agentworld_gym.evolution.llm_diagnosis import LLMDiagnoser
from agentworld_gym.evolution.protocols import (
    Checkpointable,
    TaskSynthesizer,
    Trainer,
    TrainingPool,
)
from agentworld_gym.evolution.report import write_diagnosis_report
from agentworld_gym.registry import IndexEntry, read_index
from agentworld_gym.spec import EnvSpec
from agentworld_gym.suites import Suite, get_suite, suite_rows
from agentworld_gym.verifiers import succeeded

logger = logging.getLogger(__name__)

SUMMARY = "summary.json"


def mix_seed(*parts: Any) -> int:
    """A stable 48-bit seed from any parts (the run seed, the round, an env id...)."""
    text = ":".join(str(p) for p in parts)
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def _dump(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str))


def round_dir(out_dir: str | Path, round_index: int) -> Path:
    return Path(out_dir) / f"round_{round_index:03d}"


# -- stages ----------------------------------------------------------------------------------
def eval_tasks_for(
    entries: list[IndexEntry],
    synthesizer: TaskSynthesizer,
    config: EvolutionConfig,
    round_index: int,
) -> tuple[list[EvalTask], dict[str, EnvSpec], dict[str, Any]]:
    """Fresh, verified evaluation tasks for every arena environment.

    Synthesized tasks that repeat an instruction of the environment are dropped (never seen
    in training); with ``fill_eval_with_test_split`` the held-out test tasks top up an
    environment that got fewer than ``eval_tasks_per_env``.
    """
    tasks: list[EvalTask] = []
    specs: dict[str, EnvSpec] = {}
    report: dict[str, Any] = {}
    n = config.eval_tasks_per_env
    for entry in entries:
        spec = EnvSpec.load(entry.folder)
        seed = mix_seed(config.seed, "eval", round_index, entry.id, entry.version)
        seen = {normalise_instruction(t.instruction) for t in spec.tasks}
        fresh = validated(spec, list(synthesizer.synthesize(spec, n, seed, None))[:n], seen)
        chosen = [
            dataclasses.replace(t, id=f"eval-r{round_index}-{i:03d}", split="test")
            for i, t in enumerate(fresh)
        ]
        held_out = 0
        if config.fill_eval_with_test_split and len(chosen) < n:
            extra = spec.tasks_in("test")[: n - len(chosen)]
            chosen += extra
            held_out = len(extra)
        report[entry.gym_id] = {"synthesized": len(fresh), "held_out": held_out}
        if not chosen:
            logger.warning("%s: no evaluation task (synthesizer gave none)", entry.gym_id)
            continue
        runtime = spec.runtime
        if config.eval_max_turns is not None:
            runtime = dataclasses.replace(runtime, max_turns=config.eval_max_turns)
        eval_spec = dataclasses.replace(spec, tasks=chosen, runtime=runtime)
        eval_spec.__dict__["database"] = spec.database
        specs[entry.gym_id] = eval_spec
        l1 = entry.taxonomy.get("l1", "") or "uncategorized"
        tasks += [EvalTask(eval_spec, t.id, entry.gym_id, l1) for t in chosen]
    return tasks, specs, report


def held_out_suite(config: EvolutionConfig) -> Suite | None:
    """The suite ``config.held_out_suite`` names, checked runnable (``None`` if unset)."""
    if not config.held_out_suite:
        return None
    suite = get_suite(config.held_out_suite)
    suite.check()
    return suite


def held_out_tasks(suite: Suite, per_env: int | None) -> list[EvalTask]:
    """The suite's tasks (the first ``per_env`` of each environment's split), each labelled
    with its suite category."""
    from agentworld_gym.integrations.openai_eval import select_tasks
    from agentworld_gym.registry import load_spec

    refs = select_tasks(list(suite.envs), suite.split, per_env)
    specs = {ref.env_id: load_spec(ref.env_id) for ref in refs}
    return [
        EvalTask(specs[ref.env_id], ref.task_id, ref.env_id, suite.envs[ref.env_id], suite.name)
        for ref in refs
    ]


def _evaluate(trainer: Trainer, tasks: list[EvalTask], threshold: float) -> list[EpisodeRecord]:
    """The trainer's records, checked and labelled consistently (ids, category, success)."""
    records = list(trainer.evaluate(tasks))
    if len(records) != len(tasks):
        raise RuntimeError(
            f"trainer.evaluate returned {len(records)} records for {len(tasks)} tasks; "
            "it must return one EpisodeRecord per task, in order"
        )
    out = []
    for task, rec in zip(tasks, records, strict=True):
        rec = rec if isinstance(rec, EpisodeRecord) else EpisodeRecord.from_dict(rec)
        rec.env_id, rec.task_id, rec.l1 = task.env_id, task.task_id, task.l1
        rec.success = succeeded(rec.verification, rec.reward, threshold)
        out.append(rec)
    return out


def _refine_with_llm(
    diag: Diagnosis,
    diagnoser: LLMDiagnoser,
    records: list[EpisodeRecord],
    specs: dict[str, EnvSpec],
) -> None:
    tools_by_env: dict[str, list] = {}
    for t in diag.tools:
        tools_by_env.setdefault(t.env_id, []).append(t)
    stats = {e.env_id: e for e in diag.envs}
    for gid, rules in list(diag.guidelines.items()):
        failed = [r for r in records if r.env_id == gid and not r.success]
        diag.guidelines[gid] = diagnoser.refine(
            rules, stats[gid], tools_by_env.get(gid, []), failed, specs.get(gid)
        )


# -- one round -------------------------------------------------------------------------------
@dataclasses.dataclass
class _Round:
    """What the stages of one round hand each other."""

    index: int
    config: EvolutionConfig
    catalog_root: Path
    folder: Path

    def dump(self, name: str, value: Any) -> None:
        _dump(self.folder / name, value)


def _train_stage(r: _Round, trainer: Trainer, focus: list[str]) -> tuple[list[IndexEntry], Any]:
    """Train on the live pool (the newest version of every env); evolved envs weigh more."""
    index = read_index(r.catalog_root)
    write_journal(r.folder / "registry_journal.json", index, [])
    register(r.catalog_root)
    entries = latest_entries(index)
    pool = TrainingPool(
        env_ids=[e.gym_id for e in entries],
        folders={e.gym_id: str(e.folder) for e in entries},
        weights={gid: r.config.focus_weight for gid in focus if gid},
        catalog_root=str(r.catalog_root),
        round=r.index,
    )
    r.dump("pool.json", dataclasses.asdict(pool))
    steps = r.config.train_steps_per_round
    metrics = trainer.train(pool, steps) if steps else None
    r.dump("train.json", {"steps": steps, "metrics": metrics})
    return entries, metrics


def _evaluation_stage(
    r: _Round, trainer: Trainer, synthesizer: TaskSynthesizer, entries: list[IndexEntry]
) -> tuple[Arena, dict[str, EnvSpec], list[EpisodeRecord]]:
    """Draw the arena, write fresh evaluation tasks, run the policy on them."""
    config = r.config
    seed = mix_seed(config.seed, "arena", r.index)
    arena = sample_arena(
        entries, config.k_per_category, seed, redistribute=config.redistribute_remainder
    )
    r.dump("arena.json", arena.to_dict())
    tasks, specs, report = eval_tasks_for(arena.entries, synthesizer, config, r.index)
    listed = {gid: [t.to_dict() for t in s.tasks] for gid, s in specs.items()}
    r.dump("eval_tasks.json", {"report": report, "tasks": listed})
    records = _evaluate(trainer, tasks, config.success_threshold)
    save_episodes(r.folder / "episodes.jsonl", records)
    return arena, specs, records


def _held_out_stage(r: _Round, trainer: Trainer, suite: Suite) -> dict[str, Any]:
    """Run the policy on the held-out suite; its rows per category (never diagnosed)."""
    per_env = r.config.held_out_tasks_per_env
    records = _evaluate(trainer, held_out_tasks(suite, per_env), 1.0)
    save_episodes(r.folder / "held_out_episodes.jsonl", records)
    rows = suite_rows(suite, records)
    result = {
        "suite": suite.name,
        "split": suite.split,
        "tasks_per_env": per_env,
        "rows": [row.to_json() for row in rows],
    }
    r.dump("held_out.json", result)
    total = rows[-1]
    lo, hi = total.ci95
    logger.info(
        "round %d: held-out suite %s: success %.1f%% [%.1f%%, %.1f%%] on %d tasks (%d errors)",
        r.index,
        suite.name,
        100 * total.success_rate,
        100 * lo,
        100 * hi,
        total.tasks,
        total.errors,
    )
    return result


def _diagnosis_stage(
    r: _Round,
    records: list[EpisodeRecord],
    specs: dict[str, EnvSpec],
    diagnoser: LLMDiagnoser | None,
) -> Diagnosis:
    config = r.config
    diag = diagnose(
        records,
        specs,
        round_index=r.index,
        weak_env_count=config.weak_env_count,
        prior_strength=config.prior_strength,
        evidence_scale=config.evidence_scale,
    )
    if config.diagnosis is DiagnosisMode.llm:
        if diagnoser is None:
            logger.warning("diagnosis=llm but no diagnoser backend given: rules only")
        else:
            _refine_with_llm(diag, diagnoser, records, specs)
    write_diagnosis_report(diag, r.folder, plots=config.plots)
    return diag


def _coevolution_stage(
    r: _Round,
    synthesizer: TaskSynthesizer,
    diag: Diagnosis,
    arena: Arena,
    specs: dict[str, EnvSpec],
) -> tuple[list[str], list[str]]:
    """Evolve every weak env, commit the new versions; ``(new gym ids, refused gym ids)``."""
    evolved: list[EnvSpec] = []
    refused: list[str] = []
    new_tasks: dict[str, list[dict]] = {}
    eval_texts = {t.instruction for s in specs.values() for t in s.tasks}
    folders = {e.gym_id: e.folder for e in arena.entries}
    for gid in diag.weak_envs:
        base = EnvSpec.load(folders[gid])
        result = evolve_env(
            base,
            diag.guidelines[gid],
            r.config,
            synthesizer,
            round_index=r.index,
            seed=mix_seed(r.config.seed, "evolve", r.index, base.id, base.version),
            exclude_instructions=eval_texts,
        )
        r.dump(f"evolved/{base.id}.json", result.report)
        if result.spec is None:
            refused.append(gid)
            continue
        evolved.append(result.spec)
        new_tasks[result.spec.gym_id] = [
            t.to_dict()
            for t in result.spec.tasks
            if t.provenance.get("origin") == "evolution" and t.provenance.get("round") == r.index
        ]
    r.dump("new_tasks.json", new_tasks)
    journal = r.folder / "registry_journal.json"
    commit = commit_versions(r.catalog_root, evolved, journal=journal)
    versions = [
        {
            "gym_id": spec.gym_id,
            "folder": str(r.catalog_root / name),
            "from_version": spec.version - 1,
            "tasks": len(spec.tasks),
            "db_fingerprint": spec.database.fingerprint(),
        }
        for spec, name in zip(evolved, commit.written, strict=True)
    ]
    r.dump("versions.json", versions)
    return commit.gym_ids, refused


def run_round(
    round_index: int,
    config: EvolutionConfig,
    trainer: Trainer,
    synthesizer: TaskSynthesizer,
    catalog_root: Path,
    folder: Path,
    *,
    focus: list[str] | None = None,
    diagnoser: LLMDiagnoser | None = None,
) -> dict[str, Any]:
    """Run round ``round_index`` into ``folder``; returns its summary (see module docstring)."""
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    r = _Round(round_index, config, Path(catalog_root), folder)
    entries, metrics = _train_stage(r, trainer, focus or [])
    arena, specs, records = _evaluation_stage(r, trainer, synthesizer, entries)
    suite = held_out_suite(config)
    held_out = _held_out_stage(r, trainer, suite) if suite is not None else None
    diag = _diagnosis_stage(r, records, specs, diagnoser)
    new_versions, refused = _coevolution_stage(r, synthesizer, diag, arena, specs)
    if isinstance(trainer, Checkpointable):
        trainer.save_checkpoint(folder / "checkpoint")
    summary = {
        "round": round_index,
        "episodes": diag.episodes,
        "success_rate": diag.success_rate,
        "mean_reward": sum(x.reward for x in records) / len(records) if records else 0.0,
        "success_by_category": {c.l1: c.success_rate for c in diag.categories},
        "arena": [e.gym_id for e in arena.entries],
        "eval_tasks": len(records),
        "failure_classes": dict(class_totals(diag)),
        "weak_envs": diag.weak_envs,
        "new_versions": new_versions,
        "refused": refused,
        "train_metrics": metrics,
        "seconds": round(time.perf_counter() - started, 2),
    }
    if held_out is not None:
        summary["held_out"] = held_out
    r.dump(SUMMARY, summary)
    return summary


# -- the run -----------------------------------------------------------------------------------
def run_evolution(
    config: EvolutionConfig,
    trainer: Trainer,
    synthesizer: TaskSynthesizer | None,
    catalog_root: str | Path,
    out_dir: str | Path,
    *,
    diagnoser: LLMDiagnoser | None = None,
) -> list[dict[str, Any]]:
    """Run (or resume) the self-evolution loop; returns every round's summary.

    Args:
        config: the loop's settings.
        trainer: trains and evaluates the policy (:class:`~.protocols.Trainer`); if it is
            :class:`~.protocols.Checkpointable` the run can resume with its policy.
        synthesizer: writes evaluation and training tasks; ``None`` picks
            :func:`~.adapters.default_synthesizer`.
        catalog_root: the catalog to evolve in place (new versions are added to it).
        out_dir: the run folder (created; reused when resuming).
        diagnoser: an :class:`~.llm_diagnosis.LLMDiagnoser` for ``diagnosis=llm``.
    """
    if synthesizer is None:
        from agentworld_gym.evolution.adapters import default_synthesizer

        synthesizer = default_synthesizer()
    root, out = Path(catalog_root), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not read_index(root):
        raise FileNotFoundError(f"{root} has no index.json with environments to evolve")
    held_out_suite(config)  # an unknown or unavailable suite fails before any round
    _dump(out / "config.json", dataclasses.asdict(config))
    summaries: list[dict[str, Any]] = []
    last_done: Path | None = None
    for r in range(config.rounds):
        folder = round_dir(out, r)
        if (folder / SUMMARY).is_file():
            summaries.append(orjson.loads((folder / SUMMARY).read_bytes()))
            last_done = folder
            logger.info("round %d already finished: skipped", r)
            continue
        if folder.exists():
            rollback(root, folder / "registry_journal.json")
            shutil.rmtree(folder)
        if last_done is not None and isinstance(trainer, Checkpointable):
            if (last_done / "checkpoint").exists():
                trainer.load_checkpoint(last_done / "checkpoint")
            last_done = None
        focus = summaries[-1]["new_versions"] if summaries else []
        summary = run_round(
            r, config, trainer, synthesizer, root, folder, focus=focus, diagnoser=diagnoser
        )
        summaries.append(summary)
        logger.info(
            "round %d: success %.1f%%, weak %s, new %s",
            r,
            100 * summary["success_rate"],
            summary["weak_envs"],
            summary["new_versions"],
        )
    return summaries


def load_round(out_dir: str | Path, round_index: int) -> dict[str, Any]:
    """A finished round's summary, diagnosis and episodes (for notebooks and tests)."""
    folder = round_dir(out_dir, round_index)
    return {
        "summary": orjson.loads((folder / SUMMARY).read_bytes()),
        "diagnosis": orjson.loads((folder / "diagnosis.json").read_bytes()),
        "episodes": load_episodes(folder / "episodes.jsonl"),
        "failure_classes": Counter(
            f["primary"] for f in orjson.loads((folder / "diagnosis.json").read_bytes())["failures"]
        ),
    }
