"""``agentworld import-release``: the published Agent-World environments as catalog entries.

Each release environment becomes a folder of a *separate* catalog root (default
:func:`default_catalog_root`, never ``envs_generated/``) with its own ``index.json``::

    <root>/<slug>/env.json       EnvSpec: taxonomy, provenance (release id), tools with the
                                 release's JSON Schemas as-is and ``"release"`` implementations
                                 (each with its Python source verbatim, so ``EnvSpec.save``
                                 copies an environment whole)
    <root>/<slug>/db/            the release's database folder, verbatim (the initial state)
    <root>/<slug>/tasks.json     the questions: instruction, ``release_rubric`` verifier, and the
                                 ``verified_tool_chain`` as a gold ``tool_chain``

Registered as ``AgentWorld/<slug>-v0`` (the slug is read from the name; a clash adds the release
id). Every verified chain is replayed at import through the same runtime the agent uses; its
outcome becomes the task's deterministic expectation (:mod:`.expect`), and a chain that does not
replay, or whose last output differs from the release's ``reference_answer`` (ids and timestamps
masked), makes its task ``split="unverified"`` with the reason, so it is never drawn for training
by accident. Register the root in other processes with ``AGENTWORLD_CATALOGS=<root>``.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import re
import shutil
import tempfile
import unicodedata
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import fastjsonschema
import orjson

from agentworld_gym.errors import (
    AgentWorldError,
    ConfigError,
    RegistrationError,
    SpecError,
    ToolError,
)
from agentworld_gym.registry import DEFAULT_ROOT, entry_for, read_index, register_catalog
from agentworld_gym.registry import write_index as write_catalog_index
from agentworld_gym.release.expect import Masker, is_volatile
from agentworld_gym.release.files import copy_plain, unloadable
from agentworld_gym.release.layout import ReleaseEnv, ReleaseFormatError, locate, read_env
from agentworld_gym.release.layout import read_index as read_release_index
from agentworld_gym.release.runtime import IMPLEMENTATION_TYPE, function_name, runtime_for
from agentworld_gym.release.verifier import VERIFIER_TYPE, expected_outcome
from agentworld_gym.replay import resolve_refs
from agentworld_gym.sandbox import SandboxLimits
from agentworld_gym.spec import DEFAULT_CLOCK, EnvSpec, RuntimeSpec, TaskSpec, ToolSpec
from agentworld_gym.tools import Toolbox, ToolContext
from agentworld_gym.verifiers.answers import tokens

SOURCE = "agent-world-release"
UNVERIFIED = "unverified"
_READ_VERBS = frozenset(
    "get list search find query read fetch view show check count lookup describe calculate "
    "compute estimate preview retrieve browse filter summarize summarise inspect".split()
)


def default_catalog_root() -> Path:
    """``$XDG_CACHE_HOME/agentworld/release`` (``~/.cache/agentworld/release``)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "agentworld" / "release"


@dataclass
class ImportOptions:
    """Settings of ``agentworld import-release``."""

    out: Path = field(default_factory=default_catalog_root)
    """Catalog root to write (its own ``index.json``); ``envs_generated/`` is refused."""
    only: list[str] | None = None
    """Release env ids to import (default: all of the index)."""
    split: str = "train"
    """Split of the tasks whose chain replays (the others are ``"unverified"``)."""
    clock: str = DEFAULT_CLOCK
    """Pinned clock of the episodes (default: the release's generation date)."""
    limits: dict[str, float] = field(default_factory=dict)
    """Per-call sandbox limits written into every tool (``wall_s``, ``cpu_s``, ``memory_mb``)."""
    keep_going: bool = False
    """Report a broken environment and continue, instead of stopping at the first."""
    source: str = SOURCE
    """``provenance.source`` of the imported environments."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """Extra provenance fields (the LLM synthesizer records its model and theme here)."""
    register: bool = True
    """Register the root with Gymnasium in this process when done."""
    allow_default_root: bool = False
    """Allow ``out`` to be ``envs_generated/`` (synthesized environments may go there)."""
    gate: bool = True
    """Run the adversarial gate (:mod:`agentworld_gym.adversarial`) on every reproducible
    task; one that fails it is kept out of the train split, with the reason."""


@dataclass
class EnvReport:
    """What became of one release environment."""

    release_id: str
    gym_id: str = ""
    folder: str = ""
    n_tools: int = 0
    tasks: dict[str, str] = field(default_factory=dict)
    """task id -> ``"ok"`` or why its chain is not reproducible."""
    notes: list[str] = field(default_factory=list)

    @property
    def reproducible(self) -> int:
        return sum(1 for v in self.tasks.values() if v == "ok")


@dataclass
class ImportReport:
    root: Path
    envs: list[EnvReport] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """release id -> why it was not imported (with ``keep_going``)."""
    warnings: list[str] = field(default_factory=list)

    def table(self) -> str:
        lines = [f"{'release id':<12} {'environment':<40} {'tools':>5} {'tasks ok/all':>12}"]
        for e in self.envs:
            lines.append(
                f"{e.release_id:<12} {e.gym_id:<40} {e.n_tools:>5} "
                f"{e.reproducible:>5}/{len(e.tasks):<6}"
            )
            lines += [f"{'':<12} ! {t}: {why}" for t, why in e.tasks.items() if why != "ok"]
            lines += [f"{'':<12} - {note}" for note in e.notes]
        lines += [f"{rid:<12} FAILED: {why}" for rid, why in self.errors.items()]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        envs = [asdict(e) for e in self.envs]
        return {
            "root": str(self.root),
            "envs": envs,
            "errors": dict(self.errors),
            "warnings": list(self.warnings),
        }


def slugify(name: str) -> str:
    """``"Harbor Tasks"`` -> ``"harbor-tasks"`` (ASCII letters, digits and dashes)."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return re.sub(r"-v(\d+)$", r"-\1", slug)[:60].strip("-")


def _taxonomy(raw: dict[str, Any]) -> dict[str, str]:
    l1 = " ".join(str(raw[k]) for k in ("L1_id", "L1_name") if raw.get(k))
    return {"l1": l1, "l2": str(raw.get("L2_name", "")), "l3": str(raw.get("L3_name", ""))}


def _kind(tool_name: str) -> str:
    verb = re.split(r"[-_\s.]", tool_name.lower(), maxsplit=1)[0]
    return "read" if verb in _READ_VERBS else "write"


def import_release(path: str | Path, options: ImportOptions | None = None) -> ImportReport:
    """Import (a part of) a local release copy into a catalog root; see the module docstring.

    Raises:
        ReleaseFormatError: ``path`` is not a release, or a file it needs is damaged (the
            message names the file); with ``keep_going`` per-environment problems are
            reported in :attr:`ImportReport.errors` instead.
    """
    options = options or ImportOptions()
    out = Path(options.out).expanduser()
    if out.resolve() == DEFAULT_ROOT.resolve() and not options.allow_default_root:
        raise ConfigError(
            f"refusing to import into {out}: keep the release in its own catalog root "
            "(--out DIR, default ~/.cache/agentworld/release) so it never mixes with "
            "the synthesized catalog"
        )
    mix = locate(path)
    entries = read_release_index(mix)
    if options.only:
        known = {e["env_id"]: e for e in entries}
        unknown = [i for i in options.only if str(i) not in known]
        if unknown:
            close = difflib.get_close_matches(str(unknown[0]), list(known), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ReleaseFormatError(
                f"{mix / 'index.json'}: no environment {', '.join(map(str, unknown))}.{hint}"
            )
        entries = [known[str(i)] for i in options.only]
    out.mkdir(parents=True, exist_ok=True)
    report = ImportReport(out)
    taken = _existing_slugs(out)
    for entry in entries:
        try:
            release = read_env(mix, entry)
            report.envs.append(_import_env(release, out, options, taken))
        except AgentWorldError as exc:
            if not options.keep_going:
                raise
            report.errors[entry["env_id"]] = str(exc)
    if report.envs:
        _update_index(out, report)
        if options.register:
            try:
                register_catalog(out)
            except RegistrationError as exc:  # the catalog is written; only this process is off
                report.warnings.append(f"not registered in this process: {exc}")
                warnings.warn(report.warnings[-1], stacklevel=2)
    return report


def _existing_slugs(out: Path) -> dict[str, str]:
    """slug -> release id of the environments already in the root."""
    taken = {}
    for env_file in out.glob("*/env.json"):
        try:
            data = orjson.loads(env_file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        taken[env_file.parent.name] = str(data.get("provenance", {}).get("release_env_id", ""))
    return taken


def _slug_for(release: ReleaseEnv, taken: dict[str, str]) -> str:
    slug = slugify(release.name) or f"env-{release.env_id}"
    if taken.get(slug, release.env_id) != release.env_id:
        slug = f"{slug}-{slugify(release.env_id)}"
    taken[slug] = release.env_id
    return slug


def _import_env(
    release: ReleaseEnv, out: Path, options: ImportOptions, taken: dict[str, str]
) -> EnvReport:
    slug = _slug_for(release, taken)
    report = EnvReport(release.env_id)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{slug}-", dir=out))
    try:
        spec = _write_env(release, slug, staging, options, report)
        _write_tasks(release, spec, staging, options, report)
        final = out / slug
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".old-{slug}-", dir=out))
            os.rename(final, old / slug)
            os.rename(staging, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    report.gym_id, report.folder = spec.gym_id, str(out / slug)
    report.n_tools = len(spec.tools)
    return report


def _write_env(
    release: ReleaseEnv, slug: str, folder: Path, options: ImportOptions, report: EnvReport
) -> EnvSpec:
    copy_plain(release.db_dir, folder / "db")
    os.chmod(folder, 0o755)
    tools, modules = [], set()
    for tool in release.tools:
        try:
            fastjsonschema.compile(tool.parameters)
        except (fastjsonschema.JsonSchemaDefinitionException, TypeError, ValueError) as exc:
            report.notes.append(f"dropped tool {tool.name}: invalid parameter schema ({exc})")
            continue
        function = function_name(tool.name)
        if not re.search(rf"^(async\s+)?def\s+{re.escape(function)}\s*\(", tool.source, re.M):
            report.notes.append(f"{tool.name}: its source defines no function {function}()")
        impl: dict[str, Any] = {"type": IMPLEMENTATION_TYPE, "function": function}
        module = f"aw_{function}"
        while module in modules:  # "get-user" and "get_user": same function, two modules
            module += "_"
        if module != f"aw_{function}":
            impl["module"] = module
        modules.add(module)
        if options.limits:
            impl["limits"] = dict(options.limits)
        impl["source"] = tool.source
        tools.append(ToolSpec(tool.name, tool.description, tool.parameters, impl, _kind(tool.name)))
    if not tools:
        raise ReleaseFormatError(f"{release.checkpoint}: no tool has a valid parameter schema")
    disabled = _probe_sources(folder, tools, options)
    for spec in tools:
        if spec.name in disabled:
            spec.implementation["disabled"] = disabled[spec.name]
            report.notes.append(f"disabled tool {spec.name}: {disabled[spec.name]}")
    names = sorted(p.stem for p in (folder / "db").glob("*.json"))
    provenance = {
        "source": options.source,
        "release_env_id": release.env_id,
        "release_index": release.metadata.get("index"),
        "checkpoint": release.checkpoint.name,
        "taxonomy_ids": {k: v for k, v in release.taxonomy.items() if k.endswith("_id")},
        "database_dir_env_var": release.metadata.get("database_dir_env_var", "MCP_DB_DIR"),
        **options.provenance,
    }
    spec = EnvSpec(
        id=slug,
        name=release.name,
        description=release.description,
        tools=tools,
        collections={n: {"kind": "document", "file": f"{n}.json"} for n in names},
        taxonomy=_taxonomy(release.taxonomy),
        provenance=provenance,
        runtime=RuntimeSpec(clock=options.clock),
    )
    (folder / "env.json").write_bytes(orjson.dumps(spec.to_dict(), option=orjson.OPT_INDENT_2))
    spec.root = folder
    return spec


def _probe_sources(folder: Path, tools: list[ToolSpec], options: ImportOptions) -> dict:
    """Tools whose module code cannot even be loaded (hangs, crashes the process): disabled."""
    limits = SandboxLimits(**{"wall_s": 5.0, "cpu_s": 5.0, **options.limits})
    by_tool = {
        t.name: t.implementation.get("module", f"aw_{t.implementation['function']}") for t in tools
    }
    sources = {by_tool[t.name]: t.implementation["source"] for t in tools}
    broken = unloadable(sources, folder / "db", limits)
    return {
        name: f"its module code fails when loaded: {broken[module]}"
        for name, module in by_tool.items()
        if module in broken
    }


@dataclass
class ChainOutcome:
    outputs: list[Any]
    errors: list[str]
    expected: dict[str, Any] | None = None


def replay_chain(spec: EnvSpec, toolbox: Toolbox, task_id: str, calls: list[dict]) -> ChainOutcome:
    """Run a gold chain on a fresh copy of the database through the agent's runtime."""
    clock = spec.runtime.clock.replace("Z", "+00:00")
    db = spec.database.fork()
    ctx = ToolContext(db, spec.id, task_id, clock_start=dt.datetime.fromisoformat(clock))
    outputs: list[Any] = []
    errors: list[str] = []
    for i, call in enumerate(calls):
        try:
            arguments = resolve_refs(call.get("arguments", {}), outputs)
            output = toolbox.call(ctx, call["name"], arguments)
        except (ToolError, SpecError) as exc:
            errors.append(f"step {i} ({call.get('name')}): {exc}")
            break
        outputs.append(output)
        last = i == len(calls) - 1
        if isinstance(output, dict) and "error" in output and not last:
            errors.append(f"step {i} ({call['name']}) returned an error: {_short(output)}")
            break
    outcome = ChainOutcome(outputs, errors)
    if not errors and outputs:
        ignore = sorted(n for n in db.snapshot() if is_volatile(n))
        clock = spec.runtime.clock
        outcome.expected = expected_outcome(spec.database, db, outputs[-1], ignore, clock)
    del ctx  # the episode ends: its worker slot goes back to the pool
    return outcome


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reference_mismatch(reference: str, output: Any, clock: str) -> str | None:
    try:
        expected = json.loads(reference)
    except (json.JSONDecodeError, TypeError):
        return None  # prose answers cannot be compared
    masker = Masker.around(clock)
    if masker.canonical(expected) == masker.canonical(output):
        return None
    return f"last output {_short(output, 120)} differs from the reference {_short(expected, 120)}"


def _write_tasks(
    release: ReleaseEnv, spec: EnvSpec, folder: Path, options: ImportOptions, report: EnvReport
) -> None:
    toolbox = Toolbox(spec)
    runtime = runtime_for(spec)
    ignore = sorted(n for n in spec.collections if is_volatile(n))
    try:
        for i, question in enumerate(release.questions):
            task_id = f"{spec.id}-q{i:03d}"
            calls = [{"name": s["tool"], "arguments": s.get("args", {})} for s in question.chain]
            why = "the question has no verified_tool_chain" if not calls else None
            outcome = replay_chain(spec, toolbox, task_id, calls) if calls else None
            if outcome is not None:
                if outcome.errors:
                    why = "; ".join(outcome.errors)
                elif outcome.outputs:
                    last = outcome.outputs[-1]
                    why = _reference_mismatch(question.reference_answer, last, spec.runtime.clock)
                expected = outcome.expected or {}
                if expected.get("answer_facts"):  # what the request states is no finding
                    said = f" {' '.join(tokens(question.task))} "
                    expected["answer_facts"] = [
                        f
                        for f in expected["answer_facts"]
                        if f" {' '.join(tokens(f))} " not in said
                    ]
                if why is None and not expected.get("state") and not expected.get("answer_facts"):
                    why = "checks nothing: the chain changes nothing and names no fact"
            verifier: dict[str, Any] = {
                "type": VERIFIER_TYPE,
                "criteria": question.criteria,
                "expected": outcome.expected if outcome is not None and why is None else None,
                "ignore": ignore,
            }
            if why is not None:
                verifier["unverified"] = why
            spec.tasks.append(
                TaskSpec(
                    id=task_id,
                    instruction=question.task,
                    verifier=verifier,
                    split=options.split if why is None else UNVERIFIED,
                    kind="manual",
                    reference_answer=question.reference_answer,
                    gold={"type": "tool_chain", "calls": calls, "answer": _gold_answer(verifier)},
                    difficulty={"chain_length": len(calls)},
                    provenance={
                        "source": options.source,
                        "release_env_id": release.env_id,
                        "question": i,
                        "reproducible": why is None,
                    },
                )
            )
            report.tasks[task_id] = "ok" if why is None else why
        if options.gate:
            _gate(spec, report)
    finally:
        runtime.close()
    tasks = [t.to_dict() for t in spec.tasks]
    (folder / "tasks.json").write_bytes(orjson.dumps(tasks, option=orjson.OPT_INDENT_2))


def _gold_answer(verifier: dict[str, Any]) -> str:
    """What the gold run says in the end: the facts its last output names (the release's
    ``reference_answer`` is that output's raw JSON, not an answer a person would give)."""
    facts = (verifier.get("expected") or {}).get("answer_facts") or []
    return "; ".join(map(str, facts)) + "." if facts else "Done."


def _gate(spec: EnvSpec, report: EnvReport) -> None:
    """The adversarial gate on the reproducible tasks; a failing one leaves the train split."""
    from agentworld_gym.adversarial import gate_env

    verified = [t for t in spec.tasks if t.split != UNVERIFIED]
    if not verified:
        return
    for result in gate_env(spec, verified):
        if result.passed:
            continue
        task = spec.task(result.task_id)
        why = "adversarial gate: " + "; ".join(result.problems[:2])
        task.split = UNVERIFIED
        task.provenance["reproducible"] = True
        task.provenance["gate"] = result.problems
        report.tasks[task.id] = why


def _update_index(out: Path, report: ImportReport) -> None:
    entries = {e.id: e for e in read_index(out)}
    for env in report.envs:
        spec = EnvSpec.load(env.folder)
        entries[spec.id] = entry_for(spec, Path(env.folder).name)
    present = [e for e in entries.values() if (out / e.path / "env.json").is_file()]
    write_catalog_index(out, present)
