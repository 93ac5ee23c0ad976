"""Cut normalised specs into environments, and find near-duplicate specs.

An environment should be one coherent service an agent can learn in one sitting:

- a spec with 5–60 operations is one environment;
- a larger spec is split by its first tag, a group that is still too large by path prefix
  (the first static path segment that differs), then by resource noun, then into ordered
  chunks; groups under 5 operations are merged (smallest first, in name order) until they
  reach 5, or folded into the smallest group with room;
- a spec whose method+path set lies at least 70% inside a larger spec of the same provider is
  a near-duplicate (a regional copy, an older version) and is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentworld_gym.synthesis.envs.infer import path_chain, verb_and_noun
from agentworld_gym.synthesis.envs.normalize import NormSpec, Operation
from agentworld_gym.synthesis.envs.schemas import METHODS

MIN_OPS, MAX_OPS = 5, 60
NEAR_DUPLICATE = 0.7


@dataclass
class Group:
    """One environment-to-be: a name for the slice (empty for a whole spec) and its ops."""

    name: str
    ops: list[Operation]


def signature(doc: dict[str, Any]) -> frozenset[str]:
    """A spec's method+path set, parameter names erased (``GET /pets/{}``)."""
    out = set()
    for path, item in (doc.get("paths") or {}).items():
        if isinstance(item, dict):
            erased = re.sub(r"{[^}]*}", "{}", str(path).rstrip("/"))
            out.update(f"{m.upper()} {erased}" for m in item if m in METHODS)
    return frozenset(out)


def near_duplicates(specs: dict[str, tuple[str, frozenset[str]]]) -> dict[str, str]:
    """``{key: key of the larger spec it duplicates}`` for specs of the same provider.

    Args:
        specs: ``{key: (provider, signature)}``.
    """
    by_provider: dict[str, list[str]] = {}
    for key, (provider, _) in sorted(specs.items()):
        by_provider.setdefault(provider, []).append(key)
    out: dict[str, str] = {}
    for keys in by_provider.values():
        for a in keys:
            sig_a = specs[a][1]
            if not sig_a:
                continue
            for b in keys:
                sig_b = specs[b][1]
                if a == b or len(sig_b) < len(sig_a) or (len(sig_b) == len(sig_a) and b > a):
                    continue
                if len(sig_a & sig_b) / len(sig_a) >= NEAR_DUPLICATE:
                    out[a] = b
                    break
    return out


def _split(ops: list[Operation], key, depth: int) -> dict[str, list[Operation]]:
    groups: dict[str, list[Operation]] = {}
    for op in ops:
        groups.setdefault(key(op, depth) or "misc", []).append(op)
    return groups


def _tag(op: Operation, depth: int) -> str:
    return op.tags[0] if op.tags else ""


def _prefix(op: Operation, depth: int) -> str:
    statics = [s for s, _ in path_chain(op.path) if s]
    return "/".join(statics[: depth + 1])


def _noun(op: Operation, depth: int) -> str:
    chain = path_chain(op.path)
    statics = [s for s, _ in chain if s]
    return statics[-1] if statics else verb_and_noun(op)[1]


def _refine(name: str, ops: list[Operation]) -> list[Group]:
    """Split ``ops`` until every group has at most MAX_OPS operations."""
    if len(ops) <= MAX_OPS:
        return [Group(name, ops)]
    for key, depth in ((_tag, 0), (_prefix, 0), (_prefix, 1), (_prefix, 2), (_noun, 0)):
        groups = _split(ops, key, depth)
        if len(groups) > 1:
            out: list[Group] = []
            for sub, members in sorted(groups.items()):
                label = sub.split("/")[-1] if key is _prefix else sub
                out += _refine(
                    f"{name} {label}".strip() if name and key is not _tag else label, members
                )
            return out
    ordered = sorted(ops, key=lambda o: (o.path, o.method))
    return [
        Group(f"{name} {i // MAX_OPS + 1}".strip(), ordered[i : i + MAX_OPS])
        for i in range(0, len(ordered), MAX_OPS)
    ]


def _merge_small(groups: list[Group]) -> list[Group]:
    big = [g for g in groups if len(g.ops) >= MIN_OPS]
    small = sorted((g for g in groups if len(g.ops) < MIN_OPS), key=lambda g: (len(g.ops), g.name))
    bucket: Group | None = None
    for g in small:
        if bucket is None:
            bucket = Group(g.name, list(g.ops))
        else:
            bucket = Group(f"{bucket.name} & {g.name}"[:60], bucket.ops + g.ops)
        if len(bucket.ops) >= MIN_OPS:
            big.append(bucket)
            bucket = None
    if bucket is not None:
        roomy = [g for g in big if len(g.ops) + len(bucket.ops) <= MAX_OPS]
        if roomy:
            target = min(roomy, key=lambda g: (len(g.ops), g.name))
            target.ops = target.ops + bucket.ops
    return sorted(big, key=lambda g: g.name)


def cut(spec: NormSpec) -> list[Group] | str:
    """The environments of one spec, or why it gives none."""
    n = len(spec.operations)
    if n < MIN_OPS:
        return f"fewer than {MIN_OPS} usable operations ({n})"
    if n <= MAX_OPS:
        return [Group("", list(spec.operations))]
    groups = _merge_small(_refine("", list(spec.operations)))
    return groups or f"no group of {MIN_OPS}+ operations"
