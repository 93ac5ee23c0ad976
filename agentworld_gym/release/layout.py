"""Read a local copy of the Agent-World release, checking every file it relies on.

Layout (``PATH`` is the release root, or its ``environment_mix/`` folder)::

    environment_mix/index.json                    [{env_id, name, description, taxonomy, ...}]
    environment_mix/<id>_step4_checkpoint.json    {metadata: {...}, data: {ToolDesignAgent:
                                                    {tool_schemas: [{name, description,
                                                    parameters, implementation}]}}}
    environment_mix/<id>/*.json                   the database, one file per collection
    environment_mix/questions/<id>.json           {tasks: [{task, reference_answer,
                                                    grading_rubric: {success_criteria,
                                                    verified_tool_chain: [{tool, args}]}}]}

Every problem is a :class:`ReleaseFormatError` that names the file and says what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_gym.errors import SpecError

MIX = "environment_mix"
INDEX = "index.json"
CHECKPOINT = "{env_id}_step4_checkpoint.json"


class ReleaseFormatError(SpecError):
    """A release file is missing or malformed; the message names it."""


@dataclass
class ReleaseTool:
    name: str
    description: str
    parameters: dict[str, Any]
    source: str


@dataclass
class ReleaseQuestion:
    task: str
    reference_answer: str
    criteria: list[str]
    chain: list[dict[str, Any]]


@dataclass
class ReleaseEnv:
    """One environment of the release, read and checked."""

    env_id: str
    name: str
    description: str
    taxonomy: dict[str, Any]
    metadata: dict[str, Any]
    tools: list[ReleaseTool]
    db_dir: Path
    checkpoint: Path
    questions: list[ReleaseQuestion] = field(default_factory=list)
    questions_file: Path | None = None


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise ReleaseFormatError(f"{path}: file not found")
    try:
        return json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise ReleaseFormatError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "the file is damaged or truncated"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReleaseFormatError(f"{path}: cannot be read: {exc}") from None


def locate(path: str | Path) -> Path:
    """The ``environment_mix`` folder of a release given its root (or the folder itself)."""
    root = Path(path).expanduser()
    if not root.exists():
        raise ReleaseFormatError(f"{root}: no such file or directory")
    if not root.is_dir():
        raise ReleaseFormatError(
            f"{root}: is a file; expected the release folder (with {MIX}/{INDEX})"
        )
    for mix in (root / MIX, root):
        if (mix / INDEX).is_file() and any(mix.glob(CHECKPOINT.format(env_id="*"))):
            return mix
    if (root / MIX).is_dir():
        missing = root / MIX / INDEX
        if missing.is_file():
            missing = root / MIX / CHECKPOINT.format(env_id="<id>")
        raise ReleaseFormatError(f"{missing}: not found; {root} is not a complete release")
    seen = sorted(p.name for p in root.iterdir())[:8]
    raise ReleaseFormatError(
        f"{root} is not an Agent-World release: expected {MIX}/{INDEX} and "
        f"{MIX}/<id>_step4_checkpoint.json files (found: {', '.join(seen) or 'nothing'})"
    )


def read_index(mix: Path) -> list[dict[str, Any]]:
    """The entries of ``index.json`` (each with a string ``env_id``)."""
    path = mix / INDEX
    data = _read_json(path)
    if not isinstance(data, list):
        raise ReleaseFormatError(f"{path}: expected a JSON list of environments")
    entries = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or "env_id" not in entry:
            raise ReleaseFormatError(f"{path}: entry {i} is not an object with an 'env_id'")
        entries.append({**entry, "env_id": str(entry["env_id"])})
    return entries


def _require(obj: Any, key: str, kind: type, path: Path, where: str) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        got = "missing" if value is None else f"a {type(value).__name__}"
        raise ReleaseFormatError(f"{path}: {where}{key} must be a {kind.__name__}, got {got}")
    return value


def _tools(data: dict[str, Any], path: Path) -> list[ReleaseTool]:
    agent = _require(data, "data", dict, path, "")
    design = _require(agent, "ToolDesignAgent", dict, path, "data.")
    schemas = _require(design, "tool_schemas", list, path, "data.ToolDesignAgent.")
    tools, names = [], set()
    for i, raw in enumerate(schemas):
        where = f"data.ToolDesignAgent.tool_schemas[{i}]."
        name = _require(raw, "name", str, path, where)
        source = _require(raw, "implementation", str, path, where)
        params = raw.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(params, dict):
            raise ReleaseFormatError(f"{path}: {where}parameters must be a JSON Schema object")
        if not name.strip():
            raise ReleaseFormatError(f"{path}: {where}name is empty")
        if name in names:
            raise ReleaseFormatError(f"{path}: tool {name!r} is defined twice")
        names.add(name)
        tools.append(ReleaseTool(name, str(raw.get("description", "")), params, source))
    if not tools:
        raise ReleaseFormatError(f"{path}: data.ToolDesignAgent.tool_schemas is empty")
    return tools


def _questions(path: Path) -> list[ReleaseQuestion]:
    data = _read_json(path)
    tasks = _require(data, "tasks", list, path, "")
    out = []
    for i, raw in enumerate(tasks):
        where = f"tasks[{i}]."
        task = _require(raw, "task", str, path, where)
        rubric = _require(raw, "grading_rubric", dict, path, where)
        criteria = rubric.get("success_criteria", [])
        chain = rubric.get("verified_tool_chain", [])
        if not isinstance(criteria, list) or not all(isinstance(c, str) for c in criteria):
            raise ReleaseFormatError(f"{path}: {where}success_criteria must be a list of strings")
        if not isinstance(chain, list):
            raise ReleaseFormatError(f"{path}: {where}verified_tool_chain must be a list")
        for j, step in enumerate(chain):
            if not isinstance(step, dict) or not isinstance(step.get("tool"), str):
                raise ReleaseFormatError(
                    f"{path}: {where}verified_tool_chain[{j}] must be an object with a 'tool'"
                )
            if not isinstance(step.get("args", {}), dict):
                raise ReleaseFormatError(
                    f"{path}: {where}verified_tool_chain[{j}].args must be an object"
                )
        answer = raw.get("reference_answer", "")
        if not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        out.append(ReleaseQuestion(task, answer, list(criteria), chain))
    return out


def read_env(mix: Path, entry: dict[str, Any]) -> ReleaseEnv:
    """One environment: checkpoint (tools), database folder and questions, all checked."""
    env_id = entry["env_id"]
    checkpoint = mix / CHECKPOINT.format(env_id=env_id)
    data = _read_json(checkpoint)
    if not isinstance(data, dict):
        raise ReleaseFormatError(f"{checkpoint}: expected a JSON object")
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    tools = _tools(data, checkpoint)
    db_dir = mix / env_id
    if not db_dir.is_dir():
        raise ReleaseFormatError(f"{db_dir}: database folder of environment {env_id} not found")
    for path in sorted(db_dir.glob("*.json")):
        _read_json(path)
    questions_file = mix / "questions" / f"{env_id}.json"
    questions = _questions(questions_file) if questions_file.is_file() else []
    taxonomy = metadata.get("taxonomy") or entry.get("taxonomy") or {}
    return ReleaseEnv(
        env_id=env_id,
        name=str(metadata.get("name") or entry.get("name") or f"Environment {env_id}"),
        description=str(metadata.get("description") or entry.get("description") or ""),
        taxonomy=taxonomy if isinstance(taxonomy, dict) else {},
        metadata=metadata,
        tools=tools,
        db_dir=db_dir,
        checkpoint=checkpoint,
        questions=questions,
        questions_file=questions_file if questions_file.is_file() else None,
    )
