"""Machine checks of rubric criteria: answer matches, state predicates, required calls.

Each check is a JSON object with a ``type``::

    {"type": "answer_contains", "value": "x" | ["x", "y"], "case_sensitive": false}
    {"type": "answer_equals", "value": 42 | "text", "tolerance": 0.5}
    {"type": "record", "collection": "pages", "key": "<id>", "path": "a.b.0.c",
     "equals": v}                    # or "exists": true/false, or "contains": v
    {"type": "count", "collection": "pages", "where": {"a.b": v, "c": {"$ne": v}},
     "equals": n}                    # or "min": n / "max": n
    {"type": "tool_called", "name": "tool", "arguments": {subset}, "min_times": 1}

``where`` values match by equality, or by an operator object: ``{"$contains": x}``,
``{"$ne": x}``, ``{"$in": [..]}``, ``{"$exists": bool}``. Numbers compare with tolerance 1e-9.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from agentworld_gym.errors import VerifierError
from agentworld_gym.verifiers.base import Episode

_MISSING: Any = object()
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


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


def numbers_in(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def _answer_contains(check: dict[str, Any], ep: Episode) -> tuple[bool, str]:
    values = check["value"] if isinstance(check["value"], list) else [check["value"]]
    answer = ep.answer if check.get("case_sensitive") else normalise(ep.answer)
    missing = [
        v
        for v in values
        if (str(v) if check.get("case_sensitive") else normalise(str(v))) not in answer
    ]
    return not missing, f"missing {missing}" if missing else "all present"


def _answer_equals(check: dict[str, Any], ep: Episode) -> tuple[bool, str]:
    expected = check["value"]
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        tol = float(check.get("tolerance", 0.0)) + 1e-9
        found = numbers_in(ep.answer)
        ok = any(abs(x - expected) <= tol for x in found)
        return ok, f"numbers in answer: {found[:10]}, expected {expected} ± {tol:g}"
    ok = normalise(ep.answer) == normalise(str(expected))
    return ok, "equal" if ok else f"expected {expected!r}"


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


CHECKS: dict[str, tuple[Callable[[dict[str, Any], Episode], tuple[bool, str]], tuple[str, ...]]] = {
    "answer_contains": (_answer_contains, ("value",)),
    "answer_equals": (_answer_equals, ("value",)),
    "record": (_record, ("collection", "key")),
    "count": (_count, ("collection",)),
    "tool_called": (_tool_called, ("name",)),
}


def validate_check(check: dict[str, Any]) -> None:
    """Raise :class:`VerifierError` naming what is wrong with a check definition."""
    kind = check.get("type")
    if kind not in CHECKS:
        raise VerifierError(f"unknown check type {kind!r}; known: {', '.join(CHECKS)}")
    missing = [k for k in CHECKS[kind][1] if k not in check]
    if missing:
        raise VerifierError(f"check {kind!r} needs {', '.join(missing)}")


def run_check(check: dict[str, Any], episode: Episode) -> tuple[bool, str]:
    fn, _ = CHECKS[check["type"]]
    return fn(check, episode)
