"""The exact end state: the changes an episode made against the changes its gold solution makes.

A ``state`` check holds the gold solution's changes, derived by replaying it (see
:func:`expected_changes`)::

    {"type": "state",
     "records": {"<collection>": {"<key>": <patch> | null}},   # an update, or null: deleted
     "created": {"<collection>": [<record pattern>, ...]},     # new records, whole
     "documents": {"<name>": <pattern>}}

A patch is ``{"$patch": {"set": {field: <patch or pattern>}, "unset": [field, ...]}}``: the
record must be its initial self with exactly these fields set (recursively, into nested
objects) and removed — every other field as it was. Patches keep the check small: a catalog
task stores what its gold changes, not whole records.

Every change the gold makes is a unit; a unit is met when the episode's record (or document)
fits its pattern exactly. Every other change the episode made is collateral. The score is
``met / (units + collateral)``: a dropped or altered write loses its unit, a destructive action
the request did not ask for costs as much as a missed one, and ``met`` (success) needs every
unit and no collateral. With no units (a read-only task) the check is met exactly when nothing
changed.

Values the agent cannot know in advance are masked by what differs between two gold replays
with another task id and a shifted clock: ``{"$volatile": "any"}`` (any non-null value: a
timestamp the tool stamps) and ``{"$volatile": "new", "of": "<collection>"}`` (the key of a
record this episode created in that collection: a generated id, or a reference to one).
New records are matched by content (a key the request gave is part of it), so independent
creates may come in any order.
"""

from __future__ import annotations

import math
from typing import Any

from agentworld_gym.database import Database

ANY = {"$volatile": "any"}
_MISSING: Any = object()


def _new(collection: str) -> dict[str, str]:
    return {"$volatile": "new", "of": collection}


def fits(pattern: Any, actual: Any, new_keys: dict[str, set[str]]) -> bool:
    """Whether ``actual`` matches ``pattern`` exactly, volatile markers aside."""
    if isinstance(pattern, dict):
        marker = pattern.get("$volatile")
        if marker is not None and len(pattern) <= 2:
            if marker == "new":
                return str(actual) in new_keys.get(pattern.get("of", ""), ())
            return actual is not None and actual is not _MISSING
        return (
            isinstance(actual, dict)
            and actual.keys() == pattern.keys()
            and all(fits(v, actual[k], new_keys) for k, v in pattern.items())
        )
    if isinstance(pattern, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(pattern)
            and all(fits(p, a, new_keys) for p, a in zip(pattern, actual, strict=True))
        )
    if isinstance(pattern, bool) or isinstance(actual, bool):
        return pattern is actual
    if isinstance(pattern, int | float) and isinstance(actual, int | float):
        return math.isclose(pattern, actual, rel_tol=1e-9, abs_tol=1e-9)
    return pattern == actual


def fits_patch(pattern: Any, old: Any, actual: Any, new_keys: dict[str, set[str]]) -> bool:
    """Whether ``actual`` is ``old`` changed exactly as ``pattern`` says (see the module doc)."""
    patch = pattern.get("$patch") if isinstance(pattern, dict) and len(pattern) == 1 else None
    if patch is None:
        return fits(pattern, actual, new_keys)
    if not isinstance(old, dict) or not isinstance(actual, dict):
        return False
    changed = patch.get("set", {})
    removed = set(patch.get("unset", ()))
    if actual.keys() != (old.keys() - removed) | changed.keys():
        return False
    return all(
        fits_patch(changed[k], old.get(k), actual[k], new_keys)
        if k in changed
        else fits(old[k], actual[k], {})
        for k in actual
    )


def patch_of(old: Any, new: Any) -> Any:
    """The patch that turns ``old`` into ``new`` (``new`` itself when either is no object)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    changed = {k: patch_of(old.get(k), v) for k, v in new.items() if k not in old or old[k] != v}
    body: dict[str, Any] = {}
    if changed:
        body["set"] = changed
    removed = [k for k in old if k not in new]
    if removed:
        body["unset"] = removed
    return {"$patch": body}


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _mismatch(pattern: Any, actual: Any) -> str:
    """The first field where a record differs from its pattern, for the reason text."""
    if actual is None:
        return "deleted" if pattern is not None else "unchanged"
    if pattern is None:
        return "not deleted"
    if isinstance(pattern, dict) and "$patch" in pattern:
        wanted = pattern["$patch"].get("set", {})
        for k, v in wanted.items():
            if not isinstance(v, dict) and not fits(v, actual.get(k, _MISSING), {}):
                return f"{k}={_short(actual.get(k, '<missing>'))}, expected {_short(v)}"
        return "other fields changed too"
    if isinstance(pattern, dict) and isinstance(actual, dict):
        for k in sorted(pattern.keys() | actual.keys()):
            if k not in actual:
                return f"{k} missing"
            if k not in pattern:
                return f"{k} set to {_short(actual[k])}"
            if not fits(pattern[k], actual[k], {}) and "$volatile" not in repr(pattern[k]):
                return f"{k}={_short(actual[k])}, expected {_short(pattern[k])}"
    return "differs"


def check_state(check: dict[str, Any], initial: Database, final: Database) -> tuple[float, str]:
    """Score the episode's changes against the check's gold changes (see the module doc)."""
    changes = final.changes()
    new_keys = {
        c: {k for k, r in ch.items() if r is not None and initial.get(c, k) is None}
        for c, ch in changes.items()
    }
    left = {c: dict(ch) for c, ch in changes.items()}
    units = met = 0
    missed: list[str] = []
    for coll, keyed in check.get("records", {}).items():
        for key, pattern in keyed.items():
            units += 1
            actual = left.get(coll, {}).pop(key, _MISSING)
            if actual is _MISSING:
                missed.append(f"{coll}/{key} unchanged")
            elif (pattern is None and actual is None) or (
                pattern is not None
                and actual is not None
                and fits_patch(pattern, initial.get(coll, key), actual, new_keys)
            ):
                met += 1
            else:
                missed.append(f"{coll}/{key}: {_mismatch(pattern, actual)}")
    for coll, patterns in check.get("created", {}).items():
        pool = left.get(coll, {})
        for pattern in patterns:
            units += 1
            hit = next(
                (k for k, r in pool.items() if r is not None and fits(pattern, r, new_keys)), None
            )
            if hit is None:
                missed.append(f"no new {coll} record like {_short(pattern, 80)}")
            else:
                del pool[hit]
                met += 1
    docs = final.changed_documents()
    for name, pattern in check.get("documents", {}).items():
        units += 1
        if name in docs and fits(pattern, docs.pop(name), new_keys):
            met += 1
        else:
            missed.append(f"document {name} not as requested")
    collateral = [
        f"{'deleted' if r is None else 'changed'} {c}/{k}"
        for c, ch in left.items()
        for k, r in ch.items()
    ] + [f"changed document {n}" for n in docs]
    total = units + len(collateral)
    score = met / total if total else 1.0
    parts = [f"{met}/{units} requested changes"]
    if missed:
        parts.append("missing: " + "; ".join(missed[:3]) + (" ..." if len(missed) > 3 else ""))
    if collateral:
        extra = "; ".join(collateral[:3]) + (" ..." if len(collateral) > 3 else "")
        parts.append(f"{len(collateral)} change(s) not requested: {extra}")
    return score, ", ".join(parts)


def _mask(gold: Any, probe: Any, gold_new: dict[str, Any], probe_new: dict[str, Any]) -> Any:
    """``gold`` with every value that differs in ``probe`` replaced by a volatile marker."""
    if isinstance(gold, dict) and isinstance(probe, dict) and gold.keys() == probe.keys():
        return {k: _mask(v, probe[k], gold_new, probe_new) for k, v in gold.items()}
    if isinstance(gold, list) and isinstance(probe, list) and len(gold) == len(probe):
        return [_mask(g, p, gold_new, probe_new) for g, p in zip(gold, probe, strict=True)]
    if gold == probe:
        return gold
    for coll, keys in gold_new.items():
        if str(gold) in keys and str(probe) in probe_new.get(coll, ()):
            return _new(coll)
    return dict(ANY)


def expected_changes(initial: Database, gold: Database, probe: Database) -> dict[str, Any] | None:
    """The ``state`` check of a gold solution, from two replays of it: ``gold`` and ``probe``
    (another task id and a shifted clock). ``None`` when the two replays changed different
    things (a gold solution whose effect is not reproducible cannot be checked exactly)."""
    g_changes, p_changes = gold.changes(), probe.changes()
    if g_changes.keys() != p_changes.keys():
        return None

    def created(changes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {
            c: {k: r for k, r in ch.items() if r is not None and initial.get(c, k) is None}
            for c, ch in changes.items()
        }

    g_new, p_new = created(g_changes), created(p_changes)
    g_keys = {c: set(ch) for c, ch in g_new.items()}
    p_keys = {c: set(ch) for c, ch in p_new.items()}
    records: dict[str, dict[str, Any]] = {}
    made: dict[str, list[Any]] = {}
    for coll, ch in g_changes.items():
        p_ch = p_changes[coll]
        g_made, p_made = list(g_new[coll]), list(p_new[coll])
        if len(g_made) != len(p_made):
            return None
        for key, g_rec in ch.items():
            if key in g_new[coll]:
                continue
            p_rec = p_ch.get(key, _MISSING)
            if p_rec is _MISSING or (g_rec is None) != (p_rec is None):
                return None
            old = initial.get(coll, key)
            pattern = (
                None
                if g_rec is None
                else _mask(patch_of(old, g_rec), patch_of(old, p_rec), g_keys, p_keys)
            )
            records.setdefault(coll, {})[key] = pattern
        for gk, pk_ in zip(g_made, p_made, strict=True):  # in creation order in both replays
            made.setdefault(coll, []).append(_mask(ch[gk], p_ch[pk_], g_keys, p_keys))
    g_docs, p_docs = gold.changed_documents(), probe.changed_documents()
    if g_docs.keys() != p_docs.keys():
        return None
    documents = {n: _mask(v, p_docs[n], g_keys, p_keys) for n, v in g_docs.items()}
    check: dict[str, Any] = {"type": "state"}
    if records:
        check["records"] = records
    if made:
        check["created"] = made
    if documents:
        check["documents"] = documents
    return check


def units(check: dict[str, Any]) -> int:
    """How many changes a ``state`` check asks for."""
    return (
        sum(len(v) for v in check.get("records", {}).values())
        + sum(len(v) for v in check.get("created", {}).values())
        + len(check.get("documents", {}))
    )
