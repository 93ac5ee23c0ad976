"""Task synthesis over a catalog: every environment, in worker processes, written in place.

Environments are independent, so they are spread over a process pool; results come back in
environment order and each environment's generators are seeded from ``(seed, env id)``, so
``tasks.json`` is byte-for-byte the same whatever the number of workers. ``--write`` keeps the
tasks other authors wrote (hand-written, seed tasks), replaces this synthesizer's earlier
output, writes one task per line (compact, diff-friendly) and updates ``n_tasks`` in the
catalog index.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.errors import RegistrationError
from agentworld_gym.registry import INDEX_FILE, read_index, write_index
from agentworld_gym.spec import EnvSpec
from agentworld_gym.synthesis.parallel import ordered_map
from agentworld_gym.synthesis.tasks.candidate import SYNTHESIZER
from agentworld_gym.synthesis.tasks.pipeline import (
    EnvReport,
    EnvSynthesizer,
    TaskSynthConfig,
    existing_signatures,
    others,
    split_and_name,
)


@dataclass
class EnvResult:
    env_id: str
    folder: str
    tasks: list[dict[str, Any]]
    """This synthesizer's new tasks."""
    report: EnvReport
    error: str = ""
    kept: list[str] = field(default_factory=list)
    """Kinds of the other authors' tasks that stay."""
    dropped: list[str] = field(default_factory=list)
    """Ids of other synthesizers' tasks that failed acceptance (removed on ``--write``)."""


@dataclass
class CatalogReport:
    """Totals of one ``agentworld synth tasks`` run."""

    envs: list[EnvResult] = field(default_factory=list)
    seconds: float = 0.0
    written: int = 0

    def totals(self) -> dict[str, Any]:
        kept = Counter()
        tried = Counter()
        judged = Counter()
        rejected: Counter[str] = Counter()
        dropped: Counter[str] = Counter()
        kinds = Counter()
        others = Counter()
        for e in self.envs:
            kept.update(e.report.kept)
            tried.update(e.report.tried)
            judged.update(e.report.judged)
            rejected.update(e.report.rejected)
            dropped.update(e.report.dropped)
            kinds.update(t["kind"] for t in e.tasks)
            others.update(e.kept)
        n_kept, n_judged = sum(kept.values()), sum(judged.values())
        long = [t for e in self.envs for t in e.tasks if t["difficulty"].get("long_horizon")]
        long_calls = [len(t["gold"]["calls"]) for t in long]
        per_env = sorted(len(e.tasks) + len(e.kept) for e in self.envs)
        return {
            "envs": len(self.envs),
            "failed_envs": sum(1 for e in self.envs if e.error),
            "envs_under_10": sum(1 for n in per_env if n < 10),
            "tasks_per_env": {
                "min": per_env[0] if per_env else 0,
                "median": per_env[len(per_env) // 2] if per_env else 0,
            },
            "tasks": n_kept,
            "by_kind": dict(kinds),
            "other_tasks_kept": dict(others),
            "other_tasks_dropped": dict(dropped.most_common()),
            "draws": sum(tried.values()),
            "candidates": n_judged,
            "acceptance": round(n_kept / n_judged, 3) if n_judged else 0.0,
            "acceptance_by_kind": {
                k: round(kept[k] / judged[k], 3) for k in sorted(judged) if judged[k]
            },
            "long_horizon": {
                "tasks": len(long),
                "mean_calls": round(sum(long_calls) / len(long_calls), 2) if long else 0,
                "min_calls": min(long_calls, default=0),
            },
            "rejections": dict(rejected.most_common()),
            "seconds": round(self.seconds, 2),
            "tasks_per_minute": round(60 * n_kept / self.seconds) if self.seconds else 0,
            "written": self.written,
        }


def env_folders(root: Path, only: Iterable[str] = (), synthesized: bool = False) -> list[Path]:
    """Environment folders of a catalog root: those named in ``only``, else every one (with
    ``synthesized``, not those whose provenance says their tasks are hand-written, such as
    notion's: they are synthesized for only when named)."""
    wanted = list(only)
    if wanted:
        out = []
        for name in wanted:
            folder = Path(name) if Path(name, "env.json").is_file() else root / name
            if not (folder / "env.json").is_file():
                import difflib

                known = [p.parent.name for p in root.glob("*/env.json")]
                close = difflib.get_close_matches(name, known, n=3)
                hint = f" Did you mean {', '.join(close)}?" if close else ""
                raise RegistrationError(f"no environment {name!r} under {root}.{hint}")
            out.append(folder)
        return out
    return sorted(p.parent for p in root.glob("*/env.json") if not synthesized or _synthesized(p))


def _synthesized(env_json: Path) -> bool:
    provenance = orjson.loads(env_json.read_bytes()).get("provenance") or {}
    return provenance.get("tasks") != "hand-written"


def _work(job: tuple[str, dict[str, Any], Any]) -> EnvResult:
    folder, cfg, llm_config = job
    config = TaskSynthConfig(**cfg)
    spec = EnvSpec.load(folder)
    llm = None
    if llm_config is not None:
        from agentworld_gym.llm import make_backend

        llm = make_backend(llm_config)
    synth = EnvSynthesizer(spec, config, llm)
    dropped = synth.audit(spec.tasks) if config.prune_existing else {}
    existing = [t for t in spec.tasks if t.id not in dropped]
    cands, report = synth.run(existing_signatures(existing))
    report.dropped.update(dropped.values())
    tasks = split_and_name(spec.id, cands, config.test_share, config.seed, others(existing))
    kept = [t.kind for t in existing if (t.provenance or {}).get("synthesizer") != SYNTHESIZER]
    rows = [t.to_dict() for t in tasks]
    return EnvResult(spec.id, folder, rows, report, kept=kept, dropped=sorted(dropped))


def _safe_work(job: tuple[str, dict[str, Any], Any]) -> EnvResult:
    """One environment; an environment that breaks synthesis is reported, not fatal."""
    try:
        return _work(job)
    except Exception as exc:  # one odd environment must not stop a 1,000-environment run
        env_id = Path(job[0]).name
        return EnvResult(env_id, job[0], [], EnvReport(env_id), f"{type(exc).__name__}: {exc}")


def synthesize_catalog(
    folders: list[Path],
    config: TaskSynthConfig,
    workers: int = 2,
    write: bool = False,
    llm_config: Any = None,
    progress: Callable[[EnvResult, int, int], None] | None = None,
) -> CatalogReport:
    """Synthesize tasks for every folder; with ``write`` update their ``tasks.json``."""
    start = time.perf_counter()
    cfg = dataclasses.asdict(config)
    jobs = [(str(f), cfg, llm_config) for f in folders]
    report = CatalogReport()
    for i, res in enumerate(ordered_map(_safe_work, jobs, workers)):
        report.envs.append(res)
        if write and not res.error:
            write_tasks(Path(res.folder), res.tasks, set(res.dropped))
            report.written += 1
        if progress is not None:
            progress(res, i + 1, len(jobs))
    if write:
        for root in {Path(f).parent for f in folders}:
            update_index(root)
    report.seconds = time.perf_counter() - start
    return report


def write_tasks(
    folder: Path, new: list[dict[str, Any]], drop: set[str] | frozenset[str] = frozenset()
) -> Path:
    """Replace this synthesizer's tasks in ``folder/tasks.json``, keeping everyone else's
    except those in ``drop`` (other synthesizers' tasks that failed acceptance)."""
    path = folder / "tasks.json"
    old = orjson.loads(path.read_bytes()) if path.is_file() else []
    keep = [
        t
        for t in old
        if (t.get("provenance") or {}).get("synthesizer") != SYNTHESIZER and t["id"] not in drop
    ]
    return _write_rows(path, keep + new)


def drop_tasks(folder: Path, drop: set[str] | frozenset[str]) -> int:
    """Remove the tasks ``drop`` names from ``folder/tasks.json``; how many were removed."""
    path = folder / "tasks.json"
    old = orjson.loads(path.read_bytes()) if path.is_file() else []
    keep = [t for t in old if t["id"] not in drop]
    if len(keep) < len(old):
        _write_rows(path, keep)
    return len(old) - len(keep)


def _write_rows(path: Path, tasks: list[dict[str, Any]]) -> Path:
    """One task a line (diffs stay readable)."""
    rows = [orjson.dumps(t) for t in tasks]
    path.write_bytes(b"[\n" + b",\n".join(rows) + b"\n]\n" if rows else b"[]\n")
    return path


def update_index(root: Path) -> None:
    """Refresh ``n_tasks`` of every indexed environment under ``root``."""
    if not (root / INDEX_FILE).is_file():
        return
    entries = []
    for e in read_index(root):
        path = e.folder / "tasks.json"
        n = len(orjson.loads(path.read_bytes())) if path.is_file() else 0
        entries.append(dataclasses.replace(e, n_tasks=n))
    write_index(root, entries)
