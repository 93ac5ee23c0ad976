"""Whether an episode saw what its answer is about: the rule that a guess is not paid.

A rubric's answer checks compare values, and a value can be right by chance. On the catalog a
policy that makes a few working calls of tools the task does not need and then answers one
constant ("1", "2", "3", ...; the adversarial gate's ``guess``) won 877 of 18,486 tasks
(4.7%; "2" alone 460): a count of 2 is easy to hit.

So an answer is paid only for what the episode observed. The gold solution's reads are run
once on the task's initial state (:func:`gold_reads`), and each is reduced to the records it
returned (:func:`marks`): a dict holding primary-key fields of the spec's collections is
known by those keys' values and its field names (the values of its other fields may differ: a
timestamp written a call later; a list's summary of the record, with fewer fields, is not it),
any other value by its JSON. The episode is grounded when every record of every gold read is
among the records its own successful calls returned, from whatever tool (a list call covers
the record a get call returns; :func:`unseen`). A gold read that returned nothing (``[]``,
``{}``) is covered by a call of the same tool with at least the gold's arguments (the same
question, answered "none"), not by any empty result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from agentworld_gym.database import Database
from agentworld_gym.errors import SpecError, ToolError
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.tools import Toolbox, ToolContext
from agentworld_gym.verifiers.base import CallRecord


@dataclass(frozen=True)
class GoldRead:
    """One read of the gold solution: its call and the records it returned."""

    name: str
    arguments: dict[str, Any]
    records: frozenset[bytes]
    """:func:`marks` of its result (empty: it returned nothing)."""


def primary_keys(spec: EnvSpec) -> tuple[str, ...]:
    """The primary-key field names of the spec's list collections, sorted."""
    return tuple(
        sorted(
            {
                str(meta.get("primary_key", "id"))
                for meta in spec.collections.values()
                if meta.get("kind") != "document"
            }
        )
    )


def gold_reads(
    spec: EnvSpec, toolbox: Toolbox, base: Database, task: TaskSpec, clock: Any
) -> list[GoldRead]:
    """Run ``task``'s gold calls on a fork of ``base`` and keep its successful reads."""
    from agentworld_gym.replay import resolve_refs

    calls = (task.gold or {}).get("calls") or []
    if not calls:
        return []
    kinds = {tool.name: tool.kind for tool in spec.tools}
    keys = primary_keys(spec)
    ctx = ToolContext(base.fork(), spec.id, task.id, clock_start=clock)
    toolbox.begin(ctx)
    reads: list[GoldRead] = []
    outputs: list[Any] = []
    try:
        for call in calls:
            try:
                arguments = resolve_refs(call.get("arguments", {}), outputs)
                output = toolbox.call(ctx, call["name"], arguments)
            except (SpecError, ToolError):
                outputs.append(None)
                continue
            outputs.append(output)
            if kinds.get(call["name"], "read") == "read":
                found = frozenset() if output in ([], {}, None, "") else marks(output, keys)
                reads.append(GoldRead(call["name"], dict(arguments or {}), found))
    finally:
        toolbox.end(ctx)
    return reads


def marks(value: Any, keys: tuple[str, ...]) -> frozenset[bytes]:
    """The records ``value`` holds: a dict with primary-key fields by :func:`_identity`; a dict
    without one by the records inside it, or by its JSON when it holds none; a list by its
    items' records; anything else by its JSON."""
    if isinstance(value, dict):
        if (known := _identity(value, keys)) is not None:
            return frozenset({known})
        inner = frozenset().union(
            *(marks(v, keys) for v in value.values() if isinstance(v, dict | list) and v)
        )
        return inner or frozenset({_json(value)})
    if isinstance(value, list):
        return frozenset().union(*(marks(v, keys) for v in value))
    return frozenset({_json(value)})


def unseen(
    reads: list[GoldRead], calls: list[CallRecord], keys: tuple[str, ...]
) -> GoldRead | None:
    """The first gold read whose records no successful call of the episode returned
    (``None``: the episode saw them all)."""
    if not reads:
        return None
    needed = frozenset().union(*(read.records for read in reads))
    by_json = any(not mark.startswith(b"\x00") for mark in needed)  # else records by key only
    seen: set[bytes] = set()
    for call in calls:
        if needed <= seen:
            break
        if call.ok and call.output:
            try:
                _observe(orjson.loads(call.output), keys, seen, by_json)
            except orjson.JSONDecodeError:
                continue
    for read in reads:
        if read.records:
            if not read.records <= seen:
                return read
        elif not any(_asks(call, read) for call in calls):
            return read
    return None


def _observe(value: Any, keys: tuple[str, ...], seen: set[bytes], by_json: bool) -> None:
    """Add every record inside ``value`` to ``seen``, under each mark it can be known by
    (``by_json=False``: by its keys only, when no gold record needs its JSON)."""
    if by_json:
        seen.add(_json(value))
    if isinstance(value, dict):
        if (known := _identity(value, keys)) is not None:
            seen.add(known)
        for item in value.values():
            if by_json or isinstance(item, dict | list):
                _observe(item, keys, seen, by_json)
    elif isinstance(value, list):
        for item in value:
            if by_json or isinstance(item, dict | list):
                _observe(item, keys, seen, by_json)


def _asks(call: CallRecord, read: GoldRead) -> bool:
    """A successful call of the read's tool with at least its arguments."""
    if not call.ok or call.name != read.name or not isinstance(call.arguments, dict):
        return False
    return all(call.arguments.get(k) == v for k, v in read.arguments.items())


def _identity(record: dict[str, Any], keys: tuple[str, ...]) -> bytes | None:
    """A record's primary-key values and field names (``None``: it holds no key field)."""
    ids = [[k, record[k]] for k in keys if isinstance(record.get(k), str | int)]
    if not ids:
        return None
    return b"\x00" + orjson.dumps([ids, sorted(record)])


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
