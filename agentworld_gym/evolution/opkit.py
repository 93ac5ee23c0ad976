"""What task synthesis over ``op`` tools needs: the tools read as data, chains run for real.

:class:`OpTaskBuilder` holds one environment's ``op`` tools (:class:`OpTool`), its records,
primary keys and references, executes candidate gold chains through the same
:class:`~agentworld_gym.tools.Toolbox` the agent uses, fills key/scope/paging arguments
from a record, and assembles :class:`~agentworld_gym.spec.TaskSpec` objects. The patterns
themselves live in :mod:`.fallback`.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import agentworld_gym.ops  # noqa: F401  (registers the "op" implementation)
from agentworld_gym.errors import ToolError
from agentworld_gym.evolution.protocols import Guidelines
from agentworld_gym.evolution.values import answerable, coerce_to_schema
from agentworld_gym.replay import resolve_refs
from agentworld_gym.spec import EnvSpec, TaskSpec, ToolSpec
from agentworld_gym.tools import Toolbox, ToolContext

PREFERRED_FIELDS = ("name", "title", "email", "status", "label", "city", "type", "code", "role")
SYNTHESIZER_NAME = "evolution/fallback"


def noun(collection: str) -> str:
    """``"pets"`` -> ``"pet"`` (good enough for instructions)."""
    word = collection.replace("_", " ")
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


@dataclasses.dataclass
class OpTool:
    """An ``op`` tool with its implementation at hand."""

    tool: ToolSpec
    op: str
    collection: str
    impl: dict[str, Any]

    @property
    def props(self) -> dict[str, Any]:
        return self.tool.parameters.get("properties", {})

    @property
    def required(self) -> set[str]:
        return set(self.tool.parameters.get("required", []))


class OpTaskBuilder:
    """One environment's ``op`` tools and records, and how to run and package chains."""

    def __init__(self, spec: EnvSpec, seed: int, guidelines: Guidelines | None) -> None:
        self.spec = spec
        self.seed = seed
        self.rng = random.Random(seed)
        self.g = guidelines or Guidelines(env_id=spec.id)
        self.ops = [
            OpTool(
                t, t.implementation["op"], t.implementation.get("collection", ""), t.implementation
            )
            for t in spec.tools
            if t.implementation.get("type") == "op"
        ]
        self.db = spec.database
        self.pks = {c: m.get("primary_key", "id") for c, m in spec.collections.items()}
        self.refs = {c: dict(m.get("references", {})) for c, m in spec.collections.items()}
        self.toolbox: Toolbox | None = None
        self.seen = {t.instruction for t in spec.tasks}
        self.used: set[tuple[str, str]] = set()

    # -- execution ------------------------------------------------------------------------
    def run(self, calls: list[tuple[OpTool, dict[str, Any]]]) -> list[Any] | None:
        """Execute a chain on a fresh fork; ``None`` if a call fails."""
        if self.toolbox is None:
            self.toolbox = Toolbox(self.spec)
        ctx = ToolContext(self.db.fork(), self.spec.id, "synth")
        outputs: list[Any] = []
        for op, args in calls:
            try:
                outputs.append(self.toolbox.call(ctx, op.tool.name, resolve_refs(args, outputs)))
            except ToolError:
                return None
        return outputs

    # -- argument filling -------------------------------------------------------------------
    def rows(self, collection: str) -> list[dict[str, Any]]:
        return list(self.db.scan(collection)) if collection in self.db.collections else []

    def base_args(self, op: OpTool, record: dict[str, Any] | None) -> dict[str, Any] | None:
        """Key, parent-scope and paging arguments; ``None`` if one does not fit its schema.

        Other required arguments are the caller's to add; a chain that still lacks one is
        refused by the runtime's schema check when it runs.
        """
        args: dict[str, Any] = {}
        key = op.impl.get("key")
        if key and record is not None and op.op in ("get", "update", "delete"):
            args[key] = record[self.pks[op.collection]]
        for parent in op.impl.get("parents", []):
            if record is not None and parent.get("field", parent["arg"]) in record:
                args[parent["arg"]] = record[parent.get("field", parent["arg"])]
        page = op.impl.get("page") or {}
        if page.get("size") in op.props:
            args[page["size"]] = int(page.get("max", 100))
        out = {}
        for name, value in args.items():
            value = coerce_to_schema(value, op.props.get(name, {}))
            if value is None:
                return None
            out[name] = value
        return out

    def tools_for(self, kind: str, collection: str | None = None) -> list[OpTool]:
        kinds = ("list", "search") if kind == "list" else (kind,)
        return [o for o in self.ops if o.op in kinds and collection in (None, o.collection)]

    def targets(self, collection: str) -> list[dict[str, Any]]:
        """Records in draw order; with distractors, those with look-alikes come first."""
        rows = self.rows(collection)
        self.rng.shuffle(rows)
        if self.g.distractors > 0 and len(rows) > 1:
            pk = self.pks[collection]
            score = {id(r): max(similarity(r, o, pk) for o in rows if o is not r) for r in rows}
            rows.sort(key=lambda r: -score[id(r)])
        pk = self.pks.get(collection, "id")
        rows.sort(key=lambda r: (collection, str(r.get(pk))) in self.used)
        return rows

    # -- patterns ---------------------------------------------------------------------------
    # -- assembly -----------------------------------------------------------------------------
    def shuffled(self, items: list) -> list:
        items = list(items)
        self.rng.shuffle(items)
        return items

    def task(
        self,
        text: str,
        answer: str,
        calls: list[tuple[OpTool, dict]],
        criteria: list[dict],
        pattern: str,
        derive: dict | None = None,
        kind: str = "graph",
        target: tuple[str, Any] | None = None,
    ) -> TaskSpec | None:
        if text in self.seen:
            return None
        if target is not None:
            self.used.add((target[0], str(target[1])))
        gold: dict[str, Any] = {
            "type": "tool_chain",
            "calls": [{"name": op.tool.name, "arguments": args} for op, args in calls],
            "answer": answer,
        }
        if derive:
            gold["derive"] = derive
        writes = sum(1 for op, _ in calls if op.tool.kind != "read")
        return TaskSpec(
            id="",
            instruction=text,
            verifier={"type": "rubric", "criteria": criteria},
            kind=kind,
            reference_answer=answer,
            gold=gold,
            difficulty={
                "pattern": pattern,
                "chain_length": len(calls),
                "expected_turns": len(calls) + 1,
                "writes": writes,
                "distractors": self.g.distractors,
            },
            provenance={"synthesizer": SYNTHESIZER_NAME, "seed": self.seed},
        )


def similarity(a: dict, b: dict, pk: str) -> float:
    keys = [k for k in a if k != pk]
    return sum(1 for k in keys if a.get(k) == b.get(k)) / max(1, len(keys))


def pick_field(record: dict, rows: list[dict], pk: str) -> str | None:
    fields = [f for f in record if f != pk and answerable(record[f])]
    unique = [f for f in fields if sum(1 for r in rows if r.get(f) == record[f]) == 1]
    ranked = sorted(unique or fields, key=lambda f: (f.lower() not in PREFERRED_FIELDS, f))
    return ranked[0] if ranked else None


def answer_contains(field: str, value: Any) -> dict[str, Any]:
    return {
        "text": f"The answer states the {field}: {value}",
        "check": {"type": "answer_contains", "value": str(value)},
    }


def items_path(output: Any, n: int) -> str | None:
    """Where the list of ``n`` results is in a list tool's output ("" for a bare list)."""
    if isinstance(output, list):
        return "" if len(output) == n else None
    if isinstance(output, dict):
        for key, value in output.items():
            if isinstance(value, list) and len(value) == n:
                return key
    return None
