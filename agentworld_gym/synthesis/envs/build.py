"""One spec -> zero or more validated environments (the per-spec half of the pipeline).

:func:`process_spec` is a pure function of (spec file, seed): it runs in worker processes,
and the catalog cannot depend on which worker ran what or when.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.spec import EnvSpec, RuntimeSpec
from agentworld_gym.synthesis.envs.compile import build_model
from agentworld_gym.synthesis.envs.cut import Group, cut, signature
from agentworld_gym.synthesis.envs.model import EnvModel
from agentworld_gym.synthesis.envs.normalize import NormSpec, normalise
from agentworld_gym.synthesis.envs.records import MIN_RECORDS, populate
from agentworld_gym.synthesis.envs.seed import Generator
from agentworld_gym.synthesis.envs.source import PACKAGE, license_family, usable_license
from agentworld_gym.synthesis.envs.tasks import TaskBuilder
from agentworld_gym.synthesis.envs.validate import Checker, check_gym, check_tasks
from agentworld_gym.synthesis.tasks.pipeline import (
    EnvSynthesizer,
    TaskSynthConfig,
    existing_signatures,
)
from agentworld_gym.taxonomy import KeywordClassifier

MIN_TOOLS = 5
MIN_TASKS = 3
MIN_SYNTH_TASKS = 10
"""Fewest non-trivial verifiable tasks task synthesis must make for an environment to stay
(the catalog's seed tasks are one-call lookups that task synthesis drops as trivial)."""
TASK_CHECK_N = 18
TASK_CHECK_SEED = 0
"""The task-synthesis run the rule above makes: the catalog's own (``agentworld synth tasks
--n 18 --seed 0``), so a kept environment is one that run gives at least ``MIN_SYNTH_TASKS``."""
SYNTHESIZER = "synth-envs"
_TLD = re.compile(r"\.(com|io|org|net|local|co|dev|app|ai|us|info|me|gov|uk|de|fr)$")
_CLASSIFIER: KeywordClassifier | None = None


@dataclass
class EnvResult:
    """A validated environment, as plain data (cheap to send between processes)."""

    slug: str
    spec: dict[str, Any]
    tasks: list[dict[str, Any]]
    records: dict[str, list[dict[str, Any]]]
    text: dict[str, Any]
    """Fields the taxonomy classifier reads (title, description, tags, ...)."""
    stats: dict[str, Any]


@dataclass
class SpecResult:
    """Everything one spec gave: environments, rejections, what was dropped."""

    key: str
    provider: str
    envs: list[EnvResult] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)
    dropped_ops: Counter[str] = field(default_factory=Counter)
    dropped_tools: Counter[str] = field(default_factory=Counter)


def spec_slugs(keys: list[str]) -> dict[str, str]:
    """A short, unique slug per spec key (``amazonaws.com/acm`` -> ``amazonaws-acm``)."""

    def slug(text: str) -> str:
        return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]+", "-", text.lower())).strip("-")

    short = {}
    for key in keys:
        provider, _, service = key.partition("/")
        short[key] = slug(f"{_TLD.sub('', provider)} {service}")[:48].strip("-")
    counts = Counter(short.values())
    out: dict[str, str] = {}
    taken: set[str] = set()
    for key in sorted(keys):
        name = short[key] if counts[short[key]] == 1 else slug(key.replace("/", " "))[:56]
        if name == "notion" or re.search(r"-v\d+$", name):
            name += "-api"
        unique, n = name, 1
        while unique in taken:  # keys that differ only in punctuation
            n += 1
            unique = f"{name}-{n}"
        taken.add(unique)
        out[key] = unique
    return out


def env_seed(seed: int, slug: str) -> int:
    """The seed of one environment: stable under reordering of the source."""
    return int(hashlib.sha256(f"{seed}:{slug}".encode()).hexdigest()[:12], 16)


def _classifier() -> KeywordClassifier:
    global _CLASSIFIER
    if _CLASSIFIER is None:
        _CLASSIFIER = KeywordClassifier()
    return _CLASSIFIER


def survey(key: str, path: Path) -> tuple[str, str, frozenset[str]]:
    """``(key, provider, method+path signature)``: what the near-duplicate rule needs."""
    doc = orjson.loads(Path(path).read_bytes())
    info = doc.get("info") or {}
    return key, str(info.get("x-providerName") or key.split("/")[0]), signature(doc)


def process_spec(
    key: str, path: Path, slug: str, seed: int, source: str, limit: int = 1_000_000
) -> SpecResult:
    """Normalise, cut, compile, seed, validate: the environments of one spec (at most
    ``limit``, from its largest groups)."""
    doc = orjson.loads(Path(path).read_bytes())
    info = doc.get("info") or {}
    provider = str(info.get("x-providerName") or key.split("/")[0])
    result = SpecResult(key, provider)
    lic = info.get("license") if isinstance(info.get("license"), dict) else {}
    family = license_family(lic.get("name"), lic.get("url"))
    if not usable_license(family):
        result.rejected.append(
            {"spec": key, "reason": f"licence: {family}", "detail": str(lic.get("name", ""))[:80]}
        )
        return result
    spec = normalise(doc, key)
    result.dropped_ops = spec.dropped
    groups = cut(spec)
    if isinstance(groups, str):
        result.rejected.append({"spec": key, "reason": "too small", "detail": groups})
        return result
    slugs: dict[str, Group] = {}
    for group in groups:
        part = re.sub(r"[^a-z0-9]+", "-", group.name.lower()).strip("-")[:24].strip("-")
        env_slug = base = f"{slug}--{part}" if part else slug  # "--": never in a spec slug
        n = 1
        while env_slug in slugs:
            n += 1
            env_slug = f"{base}-{n}"
        slugs[env_slug] = group
    # largest groups first; once `limit` environments pass, the rest are not built at all
    for env_slug, group in sorted(slugs.items(), key=lambda kv: (-len(kv[1].ops), kv[0])):
        if len(result.envs) >= limit:
            result.rejected.append(
                {
                    "spec": key,
                    "env": env_slug,
                    "reason": "spec cap",
                    "detail": f"{key} already gave {limit} environments",
                }
            )
            continue
        built = build_env(spec, group, env_slug, env_seed(seed, env_slug), source, family)
        result.dropped_tools.update(built[1])
        if isinstance(built[0], str):
            result.rejected.append(
                {"spec": key, "env": env_slug, "reason": built[0].split(":")[0], "detail": built[0]}
            )
        else:
            result.envs.append(built[0])
    return result


def build_env(
    spec: NormSpec, group: Group, slug: str, seed: int, source: str, family: str
) -> tuple[EnvResult | str, Counter[str]]:
    """One environment from one group of operations, or why it was rejected."""
    gen = Generator(seed)
    model = build_model(group.ops, gen)
    dropped = Counter(model.dropped)
    if len(model.tools) < MIN_TOOLS:
        return f"too few modelled tools: {len(model.tools)} of {len(group.ops)}", dropped
    records = populate(model, gen)
    title = spec.title + (f": {group.name}" if group.name else "")
    env = EnvSpec(
        id=slug,
        name=title[:100],
        description=_description(spec, group),
        tools=[p.spec for p in model.tools],
        collections={n: c.meta() for n, c in model.collections.items()},
        provenance={
            "source": source,
            "spec": spec.key,
            "provider": spec.provider,
            "service": spec.service,
            "spec_version": spec.version,
            "openapi": spec.openapi,
            "x-origin": spec.origin,
            "license": {**spec.license, "family": family},
            "group": group.name,
            "synthesizer": SYNTHESIZER,
            "seed": seed,
        },
        runtime=RuntimeSpec(max_turns=20),
        records=records,
    )
    checker = Checker(env, model, records, gen)
    for _ in range(3):  # prune failing tools, then re-check what remains
        failures = {p.spec.name: r for p in model.tools if (r := checker.check_tool(p))}
        if not failures:
            for name in model.collections:
                failures.update(checker.round_trip(name))
        if not failures:
            break
        dropped.update(f"validation: {r.split(':')[0]}" for r in failures.values())
        checker.drop(set(failures))
        model = _shrink(model)
        if len(model.tools) < MIN_TOOLS:
            return f"validation: too few working tools ({len(model.tools)})", dropped
    else:
        return "validation: tools keep failing", dropped
    records = {n: records[n] for n in model.collections}
    if sum(len(rows) for rows in records.values()) < MIN_RECORDS:
        return f"seed: fewer than {MIN_RECORDS} records", dropped
    env.tools = [p.spec for p in model.tools]
    env.records = records
    env.collections = {n: c.meta() for n, c in model.collections.items()}
    env.tasks = TaskBuilder(slug, model, records, gen).build()
    kept, failed = check_tasks(env)
    if failed:
        dropped.update(f"task: {f.split(':')[0]}" for f in failed)
    if len(kept) < MIN_TASKS:
        return f"tasks: only {len(kept)} verifiable seed tasks ({', '.join(failed)[:160]})", dropped
    for i, task in enumerate(kept):
        task.id = f"{slug}-{i + 1:04d}"
        task.split = "test" if i == len(kept) - 1 else "train"
    env.tasks = kept
    problem = check_gym(env)
    if problem:
        return f"gym: {problem}", dropped
    data = env.to_dict()
    text = classification_fields(data)
    env.taxonomy = data["taxonomy"] = _classifier().classify(text).to_taxonomy()
    tasks = [t.to_dict() for t in env.tasks]
    n_synth = synthesizable_tasks(data, tasks, records)
    if n_synth < MIN_SYNTH_TASKS:
        return (
            f"tasks: fewer than {MIN_SYNTH_TASKS} non-trivial tasks "
            f"(task synthesis --n {TASK_CHECK_N} --seed {TASK_CHECK_SEED} made {n_synth})",
            dropped,
        )
    stats = {
        "spec": spec.key,
        "provider": spec.provider,
        "tools": len(env.tools),
        "collections": len(model.collections),
        "records": sum(len(v) for v in records.values()),
        "tasks": len(env.tasks),
    }
    return EnvResult(slug, data, tasks, records, text, stats), dropped


def synthesizable_tasks(
    data: dict[str, Any], tasks: list[dict[str, Any]], records: dict[str, Any]
) -> int:
    """How many non-trivial verifiable tasks task synthesis keeps for an environment, as
    ``agentworld synth tasks`` would on its written folder: new tasks plus the seed tasks
    that pass its acceptance rules. Works on a copy, through JSON and with the collections
    in file-name order, as :meth:`Database.from_folder` reads the folder (the order matters)."""
    spec = EnvSpec.from_dict(orjson.loads(orjson.dumps(data)), orjson.loads(orjson.dumps(tasks)))
    spec.records = orjson.loads(orjson.dumps(dict(sorted(records.items()))))
    synth = EnvSynthesizer(spec, TaskSynthConfig(n=TASK_CHECK_N, seed=TASK_CHECK_SEED))
    failed = synth.audit(spec.tasks)
    existing = [t for t in spec.tasks if t.id not in failed]
    cands, _ = synth.run(existing_signatures(existing))
    return len(cands) + len(existing)


def classification_fields(env: dict[str, Any]) -> dict[str, Any]:
    """What the taxonomy classifier reads, taken from ``env.json`` alone (so a catalog can be
    reclassified later, by an LLM for instance, without the source specs)."""
    return {
        "title": env["name"].split(": ")[0],
        "group": env["provenance"].get("group", ""),
        "description": env["description"],
        "operations": [t["description"][:80] for t in env["tools"]][:40],
        "collections": [c.replace("_", " ") for c in env["collections"]],
    }


def _shrink(model: EnvModel) -> EnvModel:
    used = {p.shape.noun for p in model.tools}
    model.collections = {k: v for k, v in model.collections.items() if k in used}
    for coll in model.collections.values():
        coll.scopes = {f: (c if c in used else None) for f, c in coll.scopes.items()}
        coll.references = {f: c for f, c in coll.references.items() if c in used}
    for plan in model.tools:
        for parent in plan.spec.implementation.get("parents", []):
            if parent.get("collection") not in model.collections:
                parent.pop("collection", None)
    return model


def _description(spec: NormSpec, group: Group) -> str:
    text = spec.description or spec.title
    if group.name:
        detail = next((spec.tags[t] for t in spec.tags if t == group.name and spec.tags[t]), "")
        text = f"{text} This environment covers {group.name}" + (f": {detail}" if detail else ".")
    return text[:600]


def source_label(version: str) -> str:
    return f"npm:{PACKAGE}@{version}"
