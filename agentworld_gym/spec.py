"""EnvSpec: one environment as plain, versioned, JSON-serialisable data.

An environment lives in one folder::

    <folder>/env.json     EnvSpec without records and tasks (format below)
    <folder>/db/*.json    initial state: one file per collection (a list of records) or document
    <folder>/tasks.json   list of TaskSpec objects

``env.json`` (``format_version`` 1)::

    {"format_version": 1, "id": "notion", "name": "Notion", "version": 0,
     "description": "...", "taxonomy": {"l1": "...", "l2": "...", "l3": "..."},
     "provenance": {"source": "...", "license": "..."},
     "collections": {"pages": {"primary_key": "id"}, "usage_log": {"kind": "document"}, ...},
     "tools": [{"name": "API-get-user", "description": "...", "parameters": {JSON Schema},
                "kind": "read" | "write",
                "implementation": {"type": "python", "entrypoint": "pkg.module:function"}}],
     "runtime": {"max_turns": 30, "clock": "2026-08-05T09:00:00Z", "system_prompt": "..."}}

A task (``tasks.json`` entry)::

    {"id": "notion-0001", "split": "train" | "test", "kind": "graph" | "program" | "manual",
     "instruction": "...", "reference_answer": "...",
     "verifier": {"type": "rubric", "criteria": [...]} | {"type": "script", "source": "..."},
     "gold": {"type": "tool_chain", "calls": [{"name": ..., "arguments": {...}}],
              "answer": "..."},
     "difficulty": {...}, "provenance": {...}}

Gold ``arguments`` may reference earlier outputs as ``"$<step>.<path>"`` (``"$0.results.0.id"``).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.database import Database
from agentworld_gym.errors import SpecError

FORMAT_VERSION = 1
DEFAULT_CLOCK = "2026-08-05T09:00:00Z"


@dataclass
class ToolSpec:
    """A tool as the agent sees it (name, description, JSON Schema) plus how it runs."""

    name: str
    description: str
    parameters: dict[str, Any]
    implementation: dict[str, Any]
    kind: str = "read"
    """``read`` tools never write (no transaction needed); ``write`` tools may."""
    semantics: dict[str, Any] | None = None
    """What the tool does in words (:class:`agentworld_gym.semantics.Meaning` as a dict:
    ``op``, ``verb``, ``noun``, ``destructive``), stamped by environment synthesis from the
    API's method, path and operation id; requests and rubrics word the tool with it. Absent,
    :func:`agentworld_gym.semantics.meaning` classifies the tool from its name and
    description."""

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class TaskSpec:
    """One task: the request, how it is verified, and a gold solution that earns 1.0."""

    id: str
    instruction: str
    verifier: dict[str, Any]
    split: str = "train"
    kind: str = "manual"
    reference_answer: str = ""
    gold: dict[str, Any] | None = None
    difficulty: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    turns: list[dict[str, Any]] = field(default_factory=list)
    """Follow-up user turns (``{"content": "..."}``): after the agent answers the request,
    the next turn's message is the observation, and so on; the episode ends at the answer
    to the last one. Answer checks with ``"turn": k`` read the answer to turn ``k`` (0 is
    the request's)."""

    user: dict[str, Any] | None = None
    """A simulated user's scenario (``{"instructions": ..., "max_turns": ...}`` and/or
    ``{"script": [...]}``, see :mod:`agentworld_gym.users`): after the fixed ``turns``, each
    answer of the agent gets the simulated user's reply, until it has nothing more to say."""

    def to_dict(self) -> dict[str, Any]:
        """The ``tasks.json`` entry (``turns`` and ``user`` only when the task has them)."""
        data = dataclasses.asdict(self)
        for key in ("turns", "user"):
            if not data[key]:
                del data[key]
        return data


@dataclass
class RuntimeSpec:
    """Episode settings: turn budget, pinned clock, the system prompt."""

    max_turns: int = 30
    clock: str = DEFAULT_CLOCK
    system_prompt: str = ""
    answer_needs_call: bool = True
    """A task whose gold solution calls a tool pays nothing to an episode without a
    successful call (a rubric's answer checks would pay a guess). Off only where reward for
    an answer alone is wanted (a toy that trains a model too small to call tools)."""
    answer_needs_evidence: bool = True
    """A task whose rubric checks answer values pays nothing unless the episode's successful
    calls returned what the gold solution's reads return (any tool's result holding the same
    records; :mod:`agentworld_gym.verifiers.evidence`): a count or a yes/no answered right
    by chance after an unrelated call is not paid."""


@dataclass
class EnvSpec:
    """One environment: tools over a database, and tasks."""

    id: str
    name: str
    description: str
    tools: list[ToolSpec]
    collections: dict[str, dict[str, Any]] = field(default_factory=dict)
    version: int = 0
    taxonomy: dict[str, str] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    runtime: RuntimeSpec = field(default_factory=RuntimeSpec)
    tasks: list[TaskSpec] = field(default_factory=list)
    root: Path | None = field(default=None, compare=False, repr=False)
    records: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """Initial state given in memory; when ``None`` it is read from ``root / "db"``."""

    @property
    def gym_id(self) -> str:
        return f"AgentWorld/{self.id}-v{self.version}"

    def task(self, task_id: str) -> TaskSpec:
        for task in self.tasks:
            if task.id == task_id:
                return task
        import difflib

        close = difflib.get_close_matches(task_id, [t.id for t in self.tasks], n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise SpecError(f"environment {self.id!r} has no task {task_id!r}.{hint}")

    def tasks_in(self, split: str | None) -> list[TaskSpec]:
        return [t for t in self.tasks if split in (None, "all", t.split)]

    @functools.cached_property
    def database(self) -> Database:
        """The initial state, loaded once and shared (copy-on-write) by every episode."""
        pks = {name: meta.get("primary_key", "id") for name, meta in self.collections.items()}
        whole = {name for name, meta in self.collections.items() if meta.get("kind") == "document"}
        if self.records is not None:
            records = self.records.items()
            lists = {k: v for k, v in records if isinstance(v, list) and k not in whole}
            docs = {k: v for k, v in records if k not in lists}
            return Database(lists, pks, docs)
        if self.root is None:
            raise SpecError(f"environment {self.id!r} has neither records nor a folder")
        return Database.from_folder(self.root / "db", pks, documents=whole)

    # -- (de)serialisation --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """``env.json`` content (without tasks and records)."""
        data = {"format_version": FORMAT_VERSION}
        for f in dataclasses.fields(self):
            if f.name in ("tasks", "root", "records"):
                continue
            value = getattr(self, f.name)
            data[f.name] = dataclasses.asdict(value) if f.name == "runtime" else value
        data["tools"] = [
            {k: v for k, v in dataclasses.asdict(t).items() if k != "semantics" or v}
            for t in self.tools
        ]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], tasks: list[dict[str, Any]] | None = None) -> EnvSpec:
        version = data.get("format_version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise SpecError(f"env.json format_version {version} is not supported (expected 1)")
        missing = [k for k in ("id", "name", "description", "tools") if k not in data]
        if missing:
            raise SpecError(f"env.json is missing required fields: {', '.join(missing)}")
        fields = {f.name for f in dataclasses.fields(cls)} - {"root", "records", "tasks"}
        unknown = set(data) - fields - {"format_version"}
        if unknown:
            raise SpecError(f"env.json has unknown fields: {', '.join(sorted(unknown))}")
        kwargs = {k: v for k, v in data.items() if k in fields}
        kwargs["tools"] = [_build(ToolSpec, t, "tool") for t in data["tools"]]
        kwargs["runtime"] = _build(RuntimeSpec, data.get("runtime", {}), "runtime")
        kwargs["tasks"] = [_build(TaskSpec, t, "task") for t in tasks or []]
        return cls(**kwargs)

    @classmethod
    def load(cls, folder: str | Path) -> EnvSpec:
        """Read an environment folder (``env.json``, ``tasks.json``, ``db/``)."""
        folder = Path(folder)
        env_file = folder / "env.json"
        if not env_file.is_file():
            raise SpecError(f"{folder} is not an environment folder (no env.json)")
        tasks_file = folder / "tasks.json"
        tasks = orjson.loads(tasks_file.read_bytes()) if tasks_file.is_file() else []
        spec = cls.from_dict(orjson.loads(env_file.read_bytes()), tasks)
        spec.root = folder
        return spec

    def save(self, folder: str | Path) -> Path:
        """Write this environment as a folder; records come from ``records`` or the database."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        opt = orjson.OPT_INDENT_2
        (folder / "env.json").write_bytes(orjson.dumps(self.to_dict(), option=opt))
        tasks = [t.to_dict() for t in self.tasks]
        (folder / "tasks.json").write_bytes(orjson.dumps(tasks, option=opt))
        if self.root is None or Path(self.root).resolve() != folder.resolve():
            self.database.to_folder(folder / "db")
        return folder


def _build(cls: type, data: dict[str, Any], what: str) -> Any:
    if not isinstance(data, dict):
        raise SpecError(f"{what} must be a JSON object, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise SpecError(
            f"{what} {data.get('id', data.get('name', ''))!r} has unknown fields: "
            f"{', '.join(sorted(unknown))}"
        )
    try:
        return cls(**data)
    except TypeError as exc:
        raise SpecError(f"{what} {data.get('id', data.get('name', ''))!r}: {exc}") from None
