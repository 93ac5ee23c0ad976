"""Machine checks of rubric criteria: answer matches, state predicates, required calls.

Each check is a JSON object with a ``type``::

    {"type": "answer", "expect": [{"value": 42, "kind": "number", "tolerance": 0.5,
     "name": "budget"}, ...], "ordered": false}   # ordered: the values in this order
    {"type": "answer_contains", "value": "x" | ["x", "y"]}   # = answer, kinds inferred
    {"type": "answer_equals", "value": 42 | "text", "tolerance": 0.5}
    {"type": "state", "records": {...}, "created": {...}, "documents": {...}}
                                     # the exact end state (see verifiers/state.py)
    {"type": "record", "collection": "pages", "key": "<id>", "path": "a.b.0.c",
     "equals": v}                    # or "exists": true/false, or "contains": v
    {"type": "count", "collection": "pages", "where": {"a.b": v, "c": {"$ne": v}},
     "equals": n}                    # or "min": n / "max": n
    {"type": "tool_called", "name": "tool", "arguments": {subset}, "min_times": 1}

``where`` values match by equality, or by an operator object: ``{"$contains": x}``,
``{"$ne": x}``, ``{"$in": [..]}``, ``{"$exists": bool}``. Numbers compare with tolerance 1e-9.

Answer checks parse the final answer by the expected value's type (numbers in words, with
units and separators; dates in any common format; booleans; names and ids up to case, quotes
and punctuation; see :mod:`agentworld_gym.verifiers.answers`) and are exclusive: an answer
that also asserts competing candidates — numbers or dates the request did not ask for, rival
values from the data (:mod:`agentworld_gym.verifiers.competitors`) — meets none of them.
Every answer check of one rubric shares one reading of the answer, so the values the other
criteria ask for are not competitors.

An expected value with a ``name`` is an answer field: an agent may submit it structured
(``submit`` with ``{"answer": ..., "fields": {"budget": 30000}}``), where the field's value is
read by the same rules, alone; without the field the free-text answer is read as usual.

A check returns ``(score, reason)`` with ``score`` in [0, 1] (``True``/``False`` for the
all-or-nothing ones); a criterion is met at score 1.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from agentworld_gym.errors import VerifierError
from agentworld_gym.verifiers.answers import (
    AnswerResult,
    Expected,
    check_answer,
    tokens,
)
from agentworld_gym.verifiers.base import Episode
from agentworld_gym.verifiers.competitors import pool_for
from agentworld_gym.verifiers.state import check_state

_MISSING: Any = object()


def get_path(value: Any, path: str) -> Any:
    """``get_path({"a": [{"b": 1}]}, "a.0.b") == 1``; a missing step gives ``_MISSING``."""
    if not path:
        return value
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        elif isinstance(value, list) and part.lstrip("-").isdigit():
            idx = int(part)
            value = value[idx] if -len(value) <= idx < len(value) else _MISSING
        else:
            return _MISSING
        if value is _MISSING:
            return value
    return value


def leaves(value: Any) -> Iterator[Any]:
    """Every non-null scalar inside a JSON value, depth first (dict values, list items)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    elif value is not None:
        yield value


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.replace("*", "").split()).strip(" .!\"'`")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
    return a == b


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        return isinstance(item, str) and item.casefold() in container.casefold()
    if isinstance(container, list):
        return any(_equal(x, item) or (isinstance(x, dict) and _subset(item, x)) for x in container)
    return False


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _subset(v, actual[k]) for k, v in expected.items()
        )
    return _equal(expected, actual)


def matches(record: dict[str, Any], where: dict[str, Any]) -> bool:
    """Whether a record satisfies every ``path: condition`` of ``where``."""
    for path, cond in where.items():
        value = get_path(record, path)
        if isinstance(cond, dict) and cond and all(k.startswith("$") for k in cond):
            for op, arg in cond.items():
                if op == "$contains":
                    ok = value is not _MISSING and _contains(value, arg)
                elif op == "$ne":
                    ok = value is _MISSING or not _equal(value, arg)
                elif op == "$in":
                    ok = value is not _MISSING and any(_equal(value, a) for a in arg)
                elif op == "$exists":
                    ok = (value is not _MISSING and value is not None) == bool(arg)
                else:
                    raise VerifierError(f"unknown where-operator {op!r}")
                if not ok:
                    return False
        elif value is _MISSING or not _equal(value, cond):
            return False
    return True


ANSWER_CHECKS = frozenset({"answer", "answer_contains", "answer_equals"})


def answer_fields(check: dict[str, Any]) -> dict[str, Any]:
    """The named values of an ``answer`` check (its answer fields)."""
    if check["type"] != "answer":
        return {}
    return {e["name"]: e["value"] for e in check["expect"] if isinstance(e.get("name"), str)}


def answer_expected(check: dict[str, Any]) -> list[Expected]:
    """The values an answer check asks for, typed (kinds inferred where not declared)."""
    if check["type"] == "answer":
        return [
            Expected(e["value"], e.get("kind", ""), float(e.get("tolerance", 0.0)))
            for e in check["expect"]
        ]
    values = check["value"] if isinstance(check["value"], list) else [check["value"]]
    tolerance = float(check.get("tolerance", 0.0))
    return [Expected(v, "", tolerance) for v in values]


@dataclass
class AnswerReading:
    """One reading of an episode's answer against every value a rubric asks for."""

    asked: list[Expected]
    _result: AnswerResult | None = field(default=None, repr=False)

    def result(self, ep: Episode) -> AnswerResult:
        if self._result is None:
            key = "competitors:" + repr((ep.instruction, [e.value for e in self.asked]))
            pool = ep.initial.memo(key, lambda db: pool_for(db, self.asked, ep.instruction))
            self._result = check_answer(ep.answer, self.asked, request=ep.instruction, pool=pool)
        return self._result


def _answer(check: dict[str, Any], ep: Episode, reading: AnswerReading | None) -> tuple[float, str]:
    own = answer_expected(check)
    names = {e["value"]: e["name"] for e in check.get("expect", []) if e.get("name") in ep.fields}
    if names:
        return _fields(check, ep, names)
    if reading is None:
        reading = AnswerReading(own)
    result = reading.result(ep)
    if result.extra:
        return 0.0, result.reason
    found = [e.value for e in own if e.value in result.found]
    missing = [e.value for e in own if e.value not in result.found]
    score = len(found) / len(own) if own else 1.0
    if check.get("ordered") and not _in_order(ep.answer, found):
        return score / 2, f"found {len(found)}/{len(own)}, not in the order asked"
    return score, f"missing {missing}" if missing else f"found {len(found)}/{len(own)}"


def _fields(check: dict[str, Any], ep: Episode, names: dict[Any, str]) -> tuple[float, str]:
    """Score an answer check on the submitted fields (each read alone, exclusively)."""
    own = answer_expected(check)
    met, wrong = 0, []
    for e in own:
        name = names.get(e.value)
        if name is None:
            continue
        value = ep.fields[name]
        said = value if isinstance(value, str) else orjson.dumps(value).decode()
        if check_answer(said, [e], request=ep.instruction).met:
            met += 1
        else:
            wrong.append(name)
    score = met / len(own) if own else 1.0
    return score, f"fields wrong or missing: {wrong}" if wrong else f"fields {met}/{len(own)}"


def _in_order(answer: str, values: list[Any]) -> bool:
    """Whether the values' first mentions in ``answer`` come in this order."""
    said = " " + " ".join(tokens(answer)) + " "
    where = [said.find(" " + " ".join(tokens(str(v))) + " ") for v in values]
    return where == sorted(where)


def _record(check: dict[str, Any], ep: Episode) -> tuple[bool, str]:
    rec = ep.final.get(check["collection"], check["key"])
    if "exists" in check and "path" not in check:
        ok = (rec is not None) == bool(check["exists"])
        return ok, "present" if rec is not None else "absent"
    if rec is None:
        return False, f"{check['collection']}/{check['key']} does not exist"
    value = get_path(rec, check.get("path", ""))
    if "exists" in check:
        ok = (value is not _MISSING and value is not None) == bool(check["exists"])
    elif "contains" in check:
        ok = value is not _MISSING and _contains(value, check["contains"])
    else:
        ok = value is not _MISSING and _equal(value, check.get("equals"))
    shown = "<missing>" if value is _MISSING else repr(value)[:80]
    return ok, f"{check.get('path', '')} = {shown}"


def _state(check: dict[str, Any], ep: Episode) -> tuple[float, str]:
    return check_state(check, ep.initial, ep.final)


def _count(check: dict[str, Any], ep: Episode) -> tuple[bool, str]:
    where = check.get("where", {})
    n = sum(1 for rec in ep.final.scan(check["collection"]) if matches(rec, where))
    ok = True
    if "equals" in check:
        ok &= n == check["equals"]
    if "min" in check:
        ok &= n >= check["min"]
    if "max" in check:
        ok &= n <= check["max"]
    return ok, f"count = {n}"


def _tool_called(check: dict[str, Any], ep: Episode) -> tuple[bool, str]:
    want = check.get("arguments", {})
    n = sum(1 for c in ep.calls if c.ok and c.name == check["name"] and _subset(want, c.arguments))
    return n >= int(check.get("min_times", 1)), f"{check['name']} called {n} time(s)"


CheckFn = Callable[[dict[str, Any], Episode], tuple[float, str]]
CHECKS: dict[str, tuple[CheckFn | None, tuple[str, ...]]] = {
    "answer": (None, ("expect",)),
    "answer_contains": (None, ("value",)),
    "answer_equals": (None, ("value",)),
    "state": (_state, ()),
    "record": (_record, ("collection", "key")),
    "count": (_count, ("collection",)),
    "tool_called": (_tool_called, ("name",)),
}
"""Check type → (function, required fields); answer checks run through :func:`_answer`."""


def validate_check(check: dict[str, Any]) -> None:
    """Raise :class:`VerifierError` naming what is wrong with a check definition."""
    kind = check.get("type")
    if kind not in CHECKS:
        raise VerifierError(f"unknown check type {kind!r}; known: {', '.join(CHECKS)}")
    missing = [k for k in CHECKS[kind][1] if k not in check]
    if missing:
        raise VerifierError(f"check {kind!r} needs {', '.join(missing)}")
    if kind == "answer" and not all(isinstance(e, dict) and "value" in e for e in check["expect"]):
        raise VerifierError("check 'answer' needs expect: a list of {'value': ...} objects")


def run_check(
    check: dict[str, Any], episode: Episode, reading: AnswerReading | None = None
) -> tuple[float, str]:
    """``(score in [0, 1], reason)``; ``reading`` shares one reading of the answer between
    the answer checks of a rubric."""
    if check["type"] in ANSWER_CHECKS:
        turn = check.get("turn")
        if isinstance(turn, int) and not isinstance(turn, bool) and episode.answers:
            # a multi-turn task: this check reads the answer to user turn ``turn``
            answers = episode.answers
            said = answers[turn] if -len(answers) <= turn < len(answers) else ""
            if said is not episode.answer:
                episode = replace(episode, answer=said, fields={})
                reading = None
        return _answer(check, episode, reading)
    fn = CHECKS[check["type"]][0]
    score, reason = fn(check, episode)  # type: ignore[misc]
    return float(score), reason
