"""What a verified tool chain does to the state and says in the end, compared with ids and
timestamps masked.

The deterministic judge of imported tasks (:mod:`agentworld_gym.release.verifier`) compares an
episode with the replay of the task's ``verified_tool_chain`` on a fresh copy of the database:

* **state**: per file (document), the change the chain made. For a list file it is the multiset
  of records added and removed (order ignored); for anything else the new value. Values are
  *masked* first (:class:`Masker`): date-times near the pinned clock become ``"<ts>"`` and
  UUID- or hash-shaped strings ``"<id>"``, so a record created a minute later or with another
  random id still matches. Log-like files (``usage_log``, ``audit_log``, ...) are ignored: every
  call appends to them.
* **answer**: the *facts* of the chain's last output that an answer should mention: the label
  (``name``, ``title``, ...) of each record in it, or the value itself when it is a scalar.

This approximates the release's prose rubric; it does not read it (see the verifier).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from agentworld_gym.database import Database

TS = "<ts>"
ID = "<id>"
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX_ID = re.compile(r"^(?:[A-Za-z]{1,12}[_-])?(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{16,}$")
_PREFIXED_UUID = re.compile(r"^[A-Za-z]{1,12}[_-][0-9a-fA-F]{8}-[0-9a-fA-F-]{27}$")
_EPOCH_ID = re.compile(r"^[A-Za-z]{1,12}[_-](?P<n>\d{10}|\d{13})(?:[_-][0-9A-Za-z]{1,12})?$")
"""An id made from a clock reading: ``evt-1785920580123`` (epoch ms or s, maybe a suffix)."""
_TIME_KEY = re.compile(r"(^|_)(at|ts|time|timestamp|epoch)$|^(created|updated|modified)$")
_VOLATILE = re.compile(
    r"(^|[_-])(logs?|usage|audit|telemetry|rate_?limits?|access_?log|request_?log|call_?log)"
    r"([_-]|$)",
    re.IGNORECASE,
)
LABEL_KEYS = (
    "name",
    "title",
    "full_name",
    "display_name",
    "subject",
    "label",
    "summary",
    "headline",
    "username",
    "question",
    "text",
)
ID_KEYS = ("id", "uuid", "key", "code", "slug")
MAX_FACTS = 8


def is_volatile(name: str) -> bool:
    """Whether a file looks like a log every call appends to (``usage_log``, ``audit``, ...)."""
    return bool(_VOLATILE.search(name))


@dataclass(frozen=True)
class Masker:
    """Replaces generated values: ids, and date-times inside ``window`` (all when ``None``).

    The window is where the episode clock can be (epoch seconds): a timestamp a tool stamped
    from the pinned clock falls in it, a date the user asked for ("book it for Friday") usually
    does not, and is then still compared.

    >>> Masker()({"id": "3f2c9a1e-0d4b-4c8e-9a7f-1b2c3d4e5f60", "at": "2026-08-05T09:01:00Z"})
    {'id': '<id>', 'at': '<ts>'}
    >>> near = Masker.around("2026-08-05T09:00:00Z")
    >>> near({"at": "2026-08-05T09:01:00Z", "due": "2026-09-01T10:00"})
    {'at': '<ts>', 'due': '2026-09-01T10:00'}
    """

    window: tuple[float, float] | None = None

    @classmethod
    def around(cls, clock: str, days: float = 1.0) -> Masker:
        """Mask timestamps within ``days`` of the pinned clock ``clock`` (ISO 8601)."""
        start = _epoch(clock)
        if start is None:
            return cls()
        return cls((start - days * 86400, start + days * 86400))

    def _in_window(self, epoch: float | None) -> bool:
        if epoch is None:
            return False
        return self.window is None or self.window[0] <= epoch <= self.window[1]

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, str):
            if _DATETIME.match(value) and self._in_window(_epoch(value)):
                return TS
            if _UUID.match(value) or _HEX_ID.match(value) or _PREFIXED_UUID.match(value):
                return ID
            stamped = _EPOCH_ID.match(value)
            if stamped is not None:
                n = int(stamped["n"])
                if self._in_window(n / 1000 if n >= 1e12 else n):
                    return ID
            return value
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, key) for v in value]
        if isinstance(value, int | float) and not isinstance(value, bool):
            if _TIME_KEY.search(key.lower()):
                seconds = value / 1000 if value >= 1e12 else value  # epoch ms or s
                if 1e9 <= seconds <= 5e9 and self._in_window(seconds):
                    return TS
        return value

    def canonical(self, value: Any) -> str:
        """Masked JSON text with sorted keys: equal for values equal up to ids and timestamps."""
        return orjson.dumps(self(value), option=orjson.OPT_SORT_KEYS).decode()


MASK_ALL = Masker()


def _epoch(text: str) -> float | None:
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def mask(value: Any, key: str = "") -> Any:
    """:class:`Masker` with every date-time masked (see it for the windowed variant)."""
    return MASK_ALL(value, key)


def canonical(value: Any, masker: Masker = MASK_ALL) -> str:
    """Masked JSON text with sorted keys: equal for values equal up to ids and timestamps."""
    return masker.canonical(value)


def doc_delta(before: Any, after: Any, masker: Masker = MASK_ALL) -> dict[str, Any] | None:
    """The change from ``before`` to ``after`` (``None`` when equal once masked)."""
    if isinstance(before, list) and isinstance(after, list):
        old = Counter(masker.canonical(item) for item in before)
        new = Counter(masker.canonical(item) for item in after)
        added, removed = new - old, old - new
        if not added and not removed:
            return None
        return {
            "added": [orjson.loads(s) for s in sorted(added.elements())],
            "removed": [orjson.loads(s) for s in sorted(removed.elements())],
        }
    if masker.canonical(before) == masker.canonical(after):
        return None
    return {"value": masker(after)}


def _document(db: Database, name: str) -> Any:
    try:
        return db.document(name)
    except KeyError:
        return None


def state_delta(
    initial: Database, final: Database, ignore: Iterable[str] = (), masker: Masker = MASK_ALL
) -> dict[str, Any]:
    """Per document, the change from ``initial`` to ``final`` (unchanged ones left out)."""
    names = set(initial.snapshot()) | set(final.snapshot())
    skip = set(ignore) | {n for n in names if is_volatile(n)}  # a log a tool creates too
    delta: dict[str, Any] = {}
    for name in sorted(names - skip):
        before, after = _document(initial, name), _document(final, name)
        if before is after:
            continue
        change = doc_delta(before, after, masker)
        if change is not None:
            delta[name] = change
    return delta


def normalise_delta(delta: dict[str, Any], masker: Masker = MASK_ALL) -> dict[str, Any]:
    """A comparable form of a delta (stored deltas may have been re-serialised)."""
    out: dict[str, Any] = {}
    for name, change in delta.items():
        if "value" in change:
            out[name] = ("value", masker.canonical(change["value"]))
        else:
            out[name] = (
                "records",
                tuple(sorted(masker.canonical(r) for r in change.get("added", []))),
                tuple(sorted(masker.canonical(r) for r in change.get("removed", []))),
            )
    return out


def describe_delta(delta: dict[str, Any], limit: int = 600) -> str:
    """A short human-readable summary (for verdict reasons and the LLM judge's evidence)."""
    parts = []
    for name, change in delta.items():
        if "value" in change:
            parts.append(f"{name}: now {orjson.dumps(change['value']).decode()}")
            continue
        added, removed = change.get("added", []), change.get("removed", [])
        text = f"{name}: +{len(added)} -{len(removed)} record(s)"
        if added:
            text += " added " + ", ".join(orjson.dumps(r).decode() for r in added[:3])
        if removed:
            text += " removed " + ", ".join(orjson.dumps(r).decode() for r in removed[:3])
        parts.append(text)
    text = "; ".join(parts) or "no changes"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label(record: dict[str, Any]) -> str | None:
    for key in LABEL_KEYS:
        value = record.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
            return str(value)
    for key in ID_KEYS:
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return None


def _records(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > 6:
        return
    if isinstance(value, dict):
        label = _label(value)
        if label is not None:
            out.append(label)
            return
        for item in value.values():
            _records(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _records(item, out, depth + 1)


def answer_facts(output: Any, masker: Masker = MASK_ALL) -> list[str]:
    """What an answer built from ``output`` should mention (empty: nothing checkable).

    >>> answer_facts({"data": [{"id": "p1", "name": "Lighthouse"}], "meta": {"total": 1}})
    ['Lighthouse']
    >>> answer_facts(42)
    ['42']
    """
    if isinstance(output, bool) or output is None:
        return []
    if isinstance(output, int | float):
        return [str(output)]
    if isinstance(output, str):
        return [output] if 0 < len(output) <= 80 and masker(output) == output else []
    if isinstance(output, dict) and "error" in output:
        return []
    facts: list[str] = []
    _records(output, facts)
    facts = [f for f in dict.fromkeys(facts) if masker(f) == f]
    return facts if len(facts) <= MAX_FACTS else []
