"""Validation by execution: keep only tools, tasks and environments that demonstrably work.

Everything runs through the same runtime an agent uses (:class:`~agentworld_gym.tools.Toolbox`
and :class:`~agentworld_gym.env.AgentWorldEnv`); there is no second interpreter here.

1. Every tool is called with schema-valid arguments built from the seed records; it must
   succeed and its result must validate against the spec's declared response schema. Missing
   keys must answer 404, taken keys 409.
2. Per collection, create → get → update → list → delete must behave like a store.
3. Every seed task's gold chain must replay to reward 1.0.
4. The environment must pass ``gymnasium.utils.env_checker.check_env``.

A failing tool is dropped with its reason (the environment stays if enough tools remain); a
failing environment is rejected with its reason.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

from fastjsonschema.draft07 import CodeGeneratorDraft07

import agentworld_gym.ops  # noqa: F401  (registers the "op" implementation)
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import ToolArgumentError, ToolError, ToolExecutionError
from agentworld_gym.replay import replay_gold
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.synthesis.envs.model import EnvModel, ToolPlan
from agentworld_gym.synthesis.envs.seed import Generator, coerce
from agentworld_gym.synthesis.envs.tasks import args_for
from agentworld_gym.tools import Toolbox, ToolContext

_FORMATS = {
    **{k: re.compile(v) for k, v in CodeGeneratorDraft07.FORMAT_REGEXS.items()},
    "uuid": re.compile(
        r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
        r"[0-9a-fA-F]{12}\Z"
    ),
}
_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def schema_error(value: Any, schema: Any, path: str = "data") -> str | None:
    """The first way ``value`` violates ``schema`` (the normalised JSON Schema subset).

    Interpreted rather than compiled: each response is checked once, and compiling large
    real-world response schemas (GitHub's, Azure's) costs far more than walking them. The
    format patterns are fastjsonschema's, so the verdicts match the runtime's validator.
    """
    if not isinstance(schema, dict) or not schema:
        return None
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    if kinds and not any(_TYPES[k](value) for k in kinds if k in _TYPES):
        return f"{path} must be {' or '.join(kinds)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path} must be one of {schema['enum'][:5]}"
    if isinstance(value, str):
        fmt = _FORMATS.get(schema.get("format", ""))
        if fmt is not None and not fmt.match(value):
            return f"{path} must be {schema['format']}"
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 1e9):
            return f"{path} has a length outside its bounds"
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if value < schema.get("minimum", -math.inf) or value > schema.get("maximum", math.inf):
            return f"{path} is outside its bounds"
    elif isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", 1e9):
            return f"{path} has a length outside its bounds"
        for i, item in enumerate(value):
            error = schema_error(item, schema.get("items"), f"{path}[{i}]")
            if error:
                return error
    elif isinstance(value, dict):
        props = schema.get("properties") or {}
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            return f"{path} must contain {missing}"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                return f"{path} must not contain {extra}"
        extra_schema = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra_schema if isinstance(extra_schema, dict) else None)
            error = schema_error(item, sub, f"{path}.{key}")
            if error:
                return error
    return None


class Checker:
    """Runs the tool-level and round-trip checks of one compiled environment."""

    def __init__(
        self, spec: EnvSpec, model: EnvModel, records: dict[str, list[dict]], gen: Generator
    ) -> None:
        self.spec = spec
        self.model = model
        self.records = records
        self.gen = gen
        self.toolbox = Toolbox(spec)
        self.base = spec.database

    def drop(self, names: set[str]) -> None:
        """Forget failing tools (the model and the toolbox shrink together)."""
        self.model.tools = [p for p in self.model.tools if p.spec.name not in names]
        for name in names:
            self.toolbox.tools.pop(name, None)

    def _ctx(self) -> ToolContext:
        return ToolContext(self.base.fork(), self.spec.id, "validation")

    def _call(self, ctx: ToolContext, plan: ToolPlan, args: dict[str, Any]) -> Any:
        return self.toolbox.call(ctx, plan.spec.name, args, strict=True)

    def _record_for(self, plan: ToolPlan) -> dict[str, Any] | None:
        rows = self.records.get(plan.shape.noun) or []
        return rows[0] if rows else None

    def check_tool(self, plan: ToolPlan) -> str | None:
        """``None`` when the tool works, else why not."""
        coll = self.model.collections[plan.shape.noun]
        record = self._record_for(plan)
        args = args_for(plan, record, self.gen, coll)
        try:
            result = self._call(self._ctx(), plan, args)
        except ToolError as exc:  # a runtime bug raises something else, and surfaces
            return f"call failed: {str(exc)[:120]}"
        if plan.shape.response != "empty":
            error = schema_error(result, plan.shape.op.response)
            if error:
                return f"response does not match its schema: {error[:120]}"
        impl = plan.spec.implementation
        key_schema = plan.args[impl["key"]].schema if "key" in impl else {}
        if "key" in impl and not impl.get("upsert") and not key_schema.get("enum"):
            missing = dict(args)
            key_arg = impl["key"]
            missing[key_arg] = self._absent_key(plan.args[key_arg].schema, coll.name)
            try:
                self._call(self._ctx(), plan, missing)
                return "a missing key did not answer 404"
            except ToolExecutionError:
                pass
            except ToolArgumentError:  # no schema-valid key is absent (a tiny range)
                pass
        if plan.shape.kind == "create" and impl.get("key_gen") == "arg":
            ctx = self._ctx()
            try:
                self._call(ctx, plan, args)
                self._call(ctx, plan, args)
                return "creating a taken key did not answer 409"
            except ToolExecutionError:
                pass
        return None

    def _absent_key(self, schema: dict[str, Any], collection: str) -> Any:
        """A schema-valid key that no record of ``collection`` has."""
        for _ in range(10):
            value = coerce(self.gen.value(schema, "id", "", 1), schema)
            if value is not None and self.base.get(collection, value) is None:
                return value
        return coerce(987654321, schema)

    def round_trip(self, name: str) -> dict[str, str]:
        """create → get → update → list → delete on collection ``name``: failing tools."""
        coll = self.model.collections[name]
        plans = {
            k: [p for p in self.model.tools if p.shape.noun == name and p.shape.kind == k]
            for k in ("create", "get", "update", "list", "delete")
        }
        create = next(iter(plans["create"]), None)
        get = next((p for p in plans["get"] if "key" in p.spec.implementation), None)
        if create is None or get is None:
            return {}
        ctx = self._ctx()
        parent = self._record_for(create)
        try:
            self._call(ctx, create, args_for(create, parent, self.gen, coll))
        except ToolError as exc:
            return {create.spec.name: f"round trip create failed: {str(exc)[:100]}"}
        new = [k for k in ctx.db.changed_keys().get(name, [])]
        record = ctx.db.get(name, new[0]) if new else None
        if record is None:
            return {create.spec.name: "round trip: create stored no record"}
        try:
            self._call(ctx, get, args_for(get, record, self.gen, coll))
        except ToolError:
            return {create.spec.name: "round trip: the created record cannot be read back"}
        failures: dict[str, str] = {}
        for update in plans["update"]:
            if "key" not in update.spec.implementation:
                continue
            fields = [
                (n, a)
                for n, a in update.args.items()
                if a.role == "body"
                and a.schema.get("type") == "string"
                and not a.schema.get("enum")
                and "." not in (a.field or ".")
            ]
            args = args_for(update, record, self.gen, coll)
            if fields:
                args[fields[0][0]] = "round-trip value"
            try:
                self._call(ctx, update, args)
                after = ctx.db.get(name, record[coll.pk])
                if fields and (after or {}).get(fields[0][1].field) != "round-trip value":
                    failures[update.spec.name] = "round trip: update did not change the record"
            except ToolError as exc:
                failures[update.spec.name] = f"round trip update failed: {str(exc)[:100]}"
            break
        for delete in plans["delete"]:
            if "key" not in delete.spec.implementation:
                continue
            try:
                self._call(ctx, delete, args_for(delete, record, self.gen, coll))
            except ToolError as exc:
                failures[delete.spec.name] = f"round trip delete failed: {str(exc)[:100]}"
                break
            if ctx.db.get(name, record[coll.pk]) is not None:
                failures[delete.spec.name] = "round trip: the record survived delete"
            break
        return failures


def check_tasks(spec: EnvSpec) -> tuple[list[TaskSpec], list[str]]:
    """The tasks whose gold chain replays to 1.0, and why the others failed."""
    if not spec.tasks:
        return [], []
    env = AgentWorldEnv(spec, split="all", max_turns=50)
    kept, failed = [], []
    for task in spec.tasks:
        result = replay_gold(env, task)
        if result.ok:
            kept.append(task)
        else:
            failed.append(
                f"{task.difficulty.get('pattern')}: " + "; ".join(result.errors)[:120]
                if result.errors
                else f"{task.difficulty.get('pattern')}: reward {result.reward:.2f}"
            )
    return kept, failed


def check_gym(spec: EnvSpec) -> str | None:
    """``None`` when the environment passes Gymnasium's env checker."""
    from gymnasium.utils.env_checker import check_env

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(AgentWorldEnv(spec, split="all"), skip_render_check=True)
    except Exception as exc:  # the checker fails with assertions, type and value errors
        return f"check_env: {type(exc).__name__}: {str(exc)[:120]}"
    return None
