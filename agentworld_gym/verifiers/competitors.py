"""Which values in the data compete with the ones a task asks for.

An answer that names the asked value *and* its rivals has not answered: "the status is Done,
In progress or Blocked", or a dump of every field of the record it read. A natural answer, on
the other hand, may name the record it is about and a passing detail. So the competitors of
an asked text value are

- the other values of the same field, in any record (rival statuses, other records' names and
  ids; for a phrase quoted from a longer text, the other texts of that field), and
- the values of the other *distinctive* fields of the records holding it (names, ids,
  free text: fields whose values are mostly distinct; one-word values only when id-like),
  which is what a dump of the record adds; categorical fields (a status among five) are left
  out, since mentioning one in passing asserts little;

minus every value that shares two consecutive words (or an id-like word) with the request:
the request's own subject may always be named. The index of the initial data is built once per
database (:meth:`~agentworld_gym.database.Database.memo`); a task's pool once per task.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.database import Database
from agentworld_gym.verifiers.answers import (
    Expected,
    infer_kind,
    polarity,
    tokens,
)

Location = tuple[str, str, str]
"""(collection, field path with list positions as ``*``, record key)."""


@dataclass
class DataIndex:
    """Where each normalised string value of the initial data sits."""

    where: dict[str, set[Location]] = field(default_factory=lambda: defaultdict(set))
    by_field: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    by_record: dict[tuple[str, str], list[tuple[str, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    distinctive: set[tuple[str, str]] = field(default_factory=set)


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, f"{path}.*" if path else "*")
    else:
        yield path, value


COMMON_WORDS = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been it its
    this that these those there here what which who whom whose when where why how all any
    each every some no not none one only also just than then so too very can could will would
    shall should may might must do does did done have has had i you he she we they me him her
    us them my your our their mine yours ours theirs about above below after before into over
    under again further once more most other such same own answer answers asked ask found
    result results value values following requested request task tasks below sure ok okay""".split()
)
"""One-word values a correct answer uses as words ("Here is the answer: ..."): in a world of
placeholder data they are also some field's values, and must not count as rivals."""


def _rival(value: str) -> bool:
    """A string that can compete as a value of its own field: any short text ("Closed"
    against "Open"), not a number, date, yes/no or a common word."""
    toks = tokens(value)
    return (
        1 <= len(toks) <= 12
        and 2 <= len(value) <= 120
        and infer_kind(value) == "text"
        and not (len(toks) == 1 and (polarity(value) or toks[0] in COMMON_WORDS))
    )


def _distinctive_value(norm: str) -> bool:
    """A value that names something when a dump repeats it: several words, or one word that
    reads as an id (a digit or an underscore: ``p1``, ``wor_86ac``) or is long."""
    return " " in norm or len(norm) >= 8 or any(c.isdigit() or c == "_" for c in norm)


def _records(db: Database) -> Iterator[tuple[str, str, Any]]:
    """Every record with its collection and key: collections, and the items of list documents
    (an imported environment's files), keyed by their ``id`` or position."""
    for coll in db.collections:
        for rec in db.scan(coll):
            yield coll, str(rec.get(db.primary_key(coll))), rec
    for name, value in db.snapshot().items():
        if name in db.collections:
            continue
        items = value if isinstance(value, list) else [value]
        for i, rec in enumerate(items):
            key = rec.get("id", i) if isinstance(rec, dict) else i
            yield name, str(key), rec


def build_index(db: Database) -> DataIndex:
    """Index every string leaf of every record of ``db``."""
    index = DataIndex()
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for coll, key, rec in _records(db):
        for path, value in _leaves(rec):
            if not isinstance(value, str) or not _rival(value):
                continue
            norm = " ".join(tokens(value))
            index.where[norm].add((coll, path, key))
            index.by_field[(coll, path)].add(norm)
            if _distinctive_value(norm):
                index.by_record[(coll, key)].append((path, norm))
            seen[(coll, path)] += 1
    for place, n in seen.items():
        distinct = len(index.by_field[place])
        if distinct >= 3 and distinct >= 0.8 * n:
            index.distinctive.add(place)
    return index


def _talks_about(value: str, request: frozenset[str]) -> bool:
    """Whether ``value`` shares two consecutive words, or an id-like word, with the request."""
    words = value.split()
    if any(w in request for w in words if any(c.isdigit() or c == "_" for c in w)):
        return True
    return any(f"{a} {b}" in request for a, b in zip(words, words[1:], strict=False))


def pool_for(db: Database, asked: Sequence[Expected], request: str) -> frozenset[str]:
    """The competitors of the asked text values (see the module doc)."""
    index: DataIndex = db.memo("competitor_index", build_index)
    req_tokens = tokens(request)
    said = frozenset(req_tokens) | frozenset(
        f"{a} {b}" for a, b in zip(req_tokens, req_tokens[1:], strict=False)
    )
    wanted = {" ".join(tokens(str(e.value))) for e in asked if isinstance(e.value, str)}
    out: set[str] = set()
    for norm in wanted:
        places = index.where.get(norm) or {
            loc for v, locs in index.where.items() if f" {norm} " in f" {v} " for loc in locs
        }  # a phrase quoted from a longer text: that text's field and record
        for coll, path, key in places:
            out |= index.by_field[(coll, path)]
            out.update(v for p, v in index.by_record[(coll, key)] if (coll, p) in index.distinctive)
    return frozenset(v for v in out - wanted if not _talks_about(v, said))
