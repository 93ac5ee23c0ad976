"""Admissible actions: the tool calls that make sense in the current state, as a finite list.

A text action space is infinite, which is what LLM policies want and what small policies
(SB3's MLPs, bandits, tabular agents, a 0.5B model picking from a menu) cannot use. This module
enumerates a finite, state-dependent menu of actions from two things only: the tools' JSON
Schemas and the values seen so far in the episode (the task text and the tool results). No
environment-specific knowledge is involved, so it works for every catalog environment.

How a call is built:

- an argument with an ``enum`` (or ``const``, or a ``boolean``) takes each of its values;
- a string argument takes the values seen under a matching key (``item_id`` matches ``item_id``
  and, as an id, ``id``), newest observation first; a required string with no such value takes
  the quoted strings of the task (``'Plan Q3'``), or, for an id, the id-shaped values the task
  names, quoted or not (``sub_1f3a``: often the only place an account or subscription id is
  given); ``format: uuid`` keeps uuid-shaped values;
- a number takes the numbers seen under a matching key, then the numbers in the task;
- objects and arrays are not enumerated: a tool that *requires* one is not admissible.

Required arguments are combined (at most ``max_per_tool`` calls per tool); each optional
argument with candidates adds variants with that one argument set. Every call is checked
against the tool's schema. Tools take turns filling the menu, so a tool with many ids does not
crowd out the others. ``submit`` actions come first: one per short value of the latest tool
result (top-level values first, list lengths included, so "how many ...?" can be answered).
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Iterator
from typing import Any, SupportsFloat

import fastjsonschema
import gymnasium as gym
import orjson

from agentworld_gym.actions import SUBMIT_TOOL
from agentworld_gym.validation import compile_validator

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_QUOTED = re.compile(r"'([^'\n]{1,120})'|\"([^\"\n]{1,120})\"|“([^”\n]{1,120})”")
_NUMBER = re.compile(r"(?<![\w.:/-])\d+(?:\.\d+)?(?![\w:/-]|\.\d)")  # not parts of dates
_ID_TOKEN = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z_])[\w][\w-]{2,80}(?![\w-])")
"""An id written in the task without quotes: letters and digits together (``sub_1f3a``)."""
_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.DOTALL)
_MAX_VALUE_CHARS = 120
_MAX_ANSWER_CHARS = 200

Scalar = str | int | float | bool


def _norm(key: str) -> str:
    return re.sub(r"[^0-9a-z]", "", key.lower())


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and value is not None


def _walk(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Breadth-first ``(key, scalar)`` pairs of a JSON value; list items keep their list's key."""
    queue: deque[tuple[str, Any]] = deque([(key, value)])
    while queue:
        k, v = queue.popleft()
        if isinstance(v, dict):
            for child_key, child in v.items():
                queue.append((str(child_key), child))
        elif isinstance(v, list):
            for item in v:
                queue.append((k, item))
        elif _is_scalar(v):
            yield k, v


def answer_candidates(value: Any, limit: int) -> list[str]:
    """Short answers a tool result supports: its scalars (top level first) and list lengths."""
    found: list[str] = []
    seen: set[str] = set()
    queue: deque[Any] = deque([value])
    while queue and len(found) < limit:
        v = queue.popleft()
        if isinstance(v, dict):
            queue.extend(v.values())
            continue
        if isinstance(v, list):
            text = str(len(v))
            queue.extend(v)
        elif isinstance(v, bool) or not _is_scalar(v):
            continue
        elif isinstance(v, float) and v.is_integer():
            text = str(int(v))
        else:
            text = str(v)
        if text and len(text) <= _MAX_ANSWER_CHARS and text not in seen:
            seen.add(text)
            found.append(text)
    return found


class ValueMemory:
    """The values an agent has seen in one episode, by key, newest observation first."""

    def __init__(self, task_text: str = "") -> None:
        self.task_strings = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(task_text)]
        quoted = set(self.task_strings)
        self.task_ids = [s for s in self.task_strings if _looks_like_id(s)]
        self.task_ids += [t for t in dict.fromkeys(_ID_TOKEN.findall(task_text)) if t not in quoted]
        """Id-shaped values the task names (quoted or not): what an id argument can start
        from before any tool has returned one."""
        self.task_numbers: list[int | float] = []
        for match in _NUMBER.finditer(task_text):
            number = float(match.group())
            self.task_numbers.append(int(number) if number.is_integer() else number)
        self._observations: list[dict[str, list[Scalar]]] = []

    def observe(self, value: Any) -> None:
        """Remember the scalars of one tool result (a decoded JSON value)."""
        by_key: dict[str, list[Scalar]] = {}
        for key, scalar in _walk(value):
            if isinstance(scalar, str) and len(scalar) > _MAX_VALUE_CHARS:
                continue
            by_key.setdefault(_norm(key), []).append(scalar)
        self._observations.append(by_key)

    def values_for(self, name: str) -> list[Scalar]:
        """Values seen under ``name``'s key (an ``*_id`` name also matches ``id``), newest first."""
        key = _norm(name)
        keys = [key]
        if key.endswith("id") and key != "id":
            keys.append("id")
        values: list[Scalar] = []
        seen: set[tuple[type, Scalar]] = set()
        for k in keys:
            for observation in reversed(self._observations):
                for value in observation.get(k, ()):
                    marker = (type(value), value)
                    if marker not in seen:
                        seen.add(marker)
                        values.append(value)
        return values


def _looks_like_id(text: str) -> bool:
    return bool(_UUID.match(text)) or (
        " " not in text and any(c.isdigit() for c in text) and any(c.isalpha() for c in text)
    )


def _json_type(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind


def argument_candidates(
    name: str, schema: dict[str, Any], memory: ValueMemory, required: bool
) -> list[Any]:
    """Values worth trying for one argument (empty: leave it out, or the tool is unusable)."""
    if not isinstance(schema, dict):
        return []
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    kind = _json_type(schema)
    if kind == "boolean":
        return [True, False]
    if kind == "string":
        values = [v for v in memory.values_for(name) if isinstance(v, str)]
        if schema.get("format") == "uuid":
            values = [v for v in values if _UUID.match(v)]
        if not values and required:
            if _norm(name).endswith("id"):
                values = list(memory.task_ids)  # an id the task names
            else:
                values = list(memory.task_strings)  # a title or query named in the task
        return values
    if kind in ("integer", "number"):
        if required:
            sources = [*memory.values_for(name), *memory.task_numbers]
        else:  # optional numbers (page sizes, limits) are noise unless the task names them
            sources = list(memory.task_numbers)
        out: list[Any] = []
        for value in sources:
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if kind == "integer":
                if isinstance(value, float) and not value.is_integer():
                    continue
                value = int(value)
            if value not in out:
                out.append(value)
        return out
    return []


class ToolMenu:
    """Builds the admissible calls of one tool from its parameter schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        function = schema["function"]
        self.name: str = function["name"]
        params = function.get("parameters") or {"type": "object", "properties": {}}
        self.properties: dict[str, Any] = params.get("properties", {}) or {}
        self.required: list[str] = [p for p in params.get("required", []) if p in self.properties]
        self.optional = [p for p in self.properties if p not in self.required]
        try:
            self._validate = compile_validator(params)  # the env's own (split for big schemas)
        except fastjsonschema.JsonSchemaDefinitionException:
            self._validate = None

    def _valid(self, arguments: dict[str, Any]) -> bool:
        if self._validate is None:
            return False
        try:
            self._validate(arguments)
        except fastjsonschema.JsonSchemaValueException:
            return False
        return True

    def calls(self, memory: ValueMemory, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` valid argument objects, required-only combinations first."""
        pools = []
        for param in self.required:
            values = argument_candidates(param, self.properties[param], memory, True)
            if not values:
                return []
            pools.append(values)
        options = {
            p: argument_candidates(p, self.properties[p], memory, False) for p in self.optional
        }
        out: list[dict[str, Any]] = []
        for combo in itertools.islice(itertools.product(*pools), limit * 4):
            base = dict(zip(self.required, combo, strict=True))
            variants = [base] + [{**base, p: v} for p, vs in options.items() for v in vs]
            for arguments in variants:
                if self._valid(arguments):
                    out.append(arguments)
                if len(out) >= limit:
                    return out
        return out


def _results_of(observation: str, info: dict[str, Any]) -> list[Any]:
    """The decoded tool results of a step that succeeded (errors teach no values)."""
    results = info.get("tool_results") or []
    if not results or not all(r.get("ok") for r in results):
        return []
    texts = _RESPONSE.findall(observation) if len(results) > 1 else [observation]
    decoded = []
    for text in texts:
        try:
            decoded.append(orjson.loads(text))
        except orjson.JSONDecodeError:
            decoded.append(text)
    return decoded


class AdmissibleActions(gym.Wrapper):
    """Adds ``info["admissible_actions"]``: the tool calls that make sense now, as action text.

    Each entry is a JSON action (``{"name": ..., "arguments": {...}}``) that ``step`` accepts
    as is; ``submit`` actions answering with values from the latest tool result come first. The
    list depends only on the schemas and the values seen in this episode, so it is the same for
    the same history. See the module docstring for how calls are built.

    Args:
        env: an AgentWorld environment (possibly wrapped).
        max_actions: cap on the list length (tool calls take turns; answers are kept).
        max_per_tool: cap on the calls of any one tool.
        max_answers: cap on the ``submit`` actions.

    >>> import gymnasium as gym, agentworld_gym
    >>> env = AdmissibleActions(gym.make("AgentWorld/notion-v0"))
    >>> obs, info = env.reset(seed=0)
    >>> info["admissible_actions"][:2]
    ['{"name":"submit","arguments":{"answer":""}}', '{"name":"API-get-users","arguments":{}}']
    """

    def __init__(
        self,
        env: gym.Env,
        max_actions: int = 64,
        max_per_tool: int = 16,
        max_answers: int = 8,
    ) -> None:
        super().__init__(env)
        if max_actions < 1 or max_answers < 1 or max_per_tool < 1:
            raise ValueError(
                "max_actions, max_per_tool and max_answers must be at least 1, got "
                f"{max_actions}, {max_per_tool}, {max_answers}"
            )
        self.max_actions = max_actions
        self.max_per_tool = max_per_tool
        self.max_answers = min(max_answers, max_actions)
        self._menus: list[ToolMenu] = []
        self._menu_spec: Any = None
        self._memory = ValueMemory()
        self._answers: list[str] = []
        self.admissible_actions: list[str] = []
        self.answer_actions: list[str] = []
        """The ``submit`` actions of the current menu."""
        self.calls_by_tool: dict[str, list[str]] = {}
        """Every tool's admissible calls (up to ``max_per_tool``), before the menu is capped."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        spec = getattr(self.env.unwrapped, "spec_data", None)
        if spec is None or spec is not self._menu_spec:  # compile the schemas once per spec
            tools = info.get("tools", [])
            self._menus = [ToolMenu(t) for t in tools if t["function"]["name"] != SUBMIT_TOOL]
            self._menu_spec = spec
        task = self.env.unwrapped.task
        self._memory = ValueMemory(task.instruction if task is not None else str(obs))
        self._answers = []
        info["admissible_actions"] = self._refresh()
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        results = _results_of(obs, info) if isinstance(obs, str) else []
        for result in results:
            self._memory.observe(result)
        if results:
            self._answers = answer_candidates(results[-1], self.max_answers)
        info["admissible_actions"] = self._refresh()
        return obs, reward, terminated, truncated, info

    def _refresh(self) -> list[str]:
        self.answer_actions = [_action(SUBMIT_TOOL, {"answer": a}) for a in self._answers or [""]]
        self.calls_by_tool = {
            menu.name: [_action(menu.name, a) for a in menu.calls(self._memory, self.max_per_tool)]
            for menu in self._menus
        }
        budget = self.max_actions - len(self.answer_actions)
        calls: list[str] = []
        for row in itertools.zip_longest(*self.calls_by_tool.values()):
            calls += [call for call in row if call is not None][: budget - len(calls)]
        self.admissible_actions = self.answer_actions + calls
        return list(self.admissible_actions)


def _action(name: str, arguments: dict[str, Any]) -> str:
    return orjson.dumps({"name": name, "arguments": arguments}).decode()
