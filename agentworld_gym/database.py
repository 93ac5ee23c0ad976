"""The environment's state: named collections of JSON records with copy-on-write episodes.

A :class:`Database` is a read-only *base* (the environment's initial records, shared by every
episode) plus two overlays owned by one episode: committed changes and the open transaction.
``fork()`` is therefore O(1) — reset sits on the RL hot path — and a tool call that raises
leaves the state exactly as it was, because its writes only ever reached the transaction
overlay.

Records handed out by :meth:`Database.get` and :meth:`Database.scan` may be shared with the
base and with other episodes: treat them as read-only and write a modified copy back with
:meth:`Database.put` (:func:`copy_record` makes the copy).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.errors import SpecError
from agentworld_gym.jsonsafe import dumps_state

Record = dict[str, Any]
_DELETED: Any = object()


class _Deferred:
    """A record this episode wrote but has not computed yet: ``make(source)`` on first read.

    ``make`` must be a pure function of ``source`` (a record, which is never mutated) that keeps
    its primary key; the result replaces the placeholder where it lies.
    """

    __slots__ = ("source", "make")

    def __init__(self, source: Record, make: Callable[[Record], Record]) -> None:
        self.source = source
        self.make = make


def _realize(layer: dict[str, Any], key: str, rec: Any) -> Any:
    """``rec`` of ``layer``, computed and stored there if it was deferred."""
    if type(rec) is _Deferred:
        rec = layer[key] = rec.make(rec.source)
    return rec


def copy_record(record: Record) -> Record:
    """A deep copy of a record, to modify before writing it back with ``put``."""
    try:
        return orjson.loads(orjson.dumps(record))
    except TypeError:  # a value orjson cannot write (a tool stored it): copy it as it is
        return copy.deepcopy(record)


@dataclass(frozen=True)
class Collection:
    """A named collection: records keyed by their primary-key field (as ``str``)."""

    name: str
    primary_key: str = "id"


@dataclass
class _Base:
    """The shared, read-only initial state of an environment."""

    collections: dict[str, Collection]
    records: dict[str, dict[str, Record]]
    documents: dict[str, Any] = field(default_factory=dict)
    _snapshot_json: bytes | None = None
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and deep-copied without the memo: a cache, rebuilt on use (it may hold
        what cannot be pickled, such as JSON fragments)."""
        return {**self.__dict__, "memo": {}}

    def snapshot_json(self) -> bytes:
        if self._snapshot_json is None:
            self._snapshot_json = dumps_state(_snapshot(self.records, self.documents))
        return self._snapshot_json


class _Transaction:
    """:meth:`Database.transaction`'s context manager (a plain class: a write pays for it)."""

    __slots__ = ("_db", "_nested")

    def __init__(self, db: Database) -> None:
        self._db = db
        self._nested = False

    def __enter__(self) -> Database:
        db = self._db
        if db._txn is not None:  # nested: the outer transaction decides
            self._nested = True
        else:
            db._txn = {}
        return db

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> bool:
        if self._nested:
            return False
        db = self._db
        txn, db._txn = db._txn, None
        if kind is None and txn:
            db._commit(txn)
        return False


def _group(
    db: Database, collection: str, key: Callable[[Record], Any]
) -> dict[Any, list[tuple[str, Record]]]:
    pk = db.primary_key(collection)
    groups: dict[Any, list[tuple[str, Record]]] = {}
    for rec in db.scan(collection):
        groups.setdefault(key(rec), []).append((str(rec[pk]), rec))
    return groups


def _positions(db: Database, collection: str) -> dict[str, int]:
    return {k: i for i, k in enumerate(db._base.records[collection])}


def _snapshot(records: Mapping[str, Mapping[str, Record]], documents: Mapping[str, Any]):
    state: dict[str, Any] = {name: list(recs.values()) for name, recs in records.items()}
    state.update(documents)
    return state


class Database:
    """Collections of JSON records; one instance per episode (see :meth:`fork`).

    Args:
        collections: ``{name: [record, ...]}`` list collections, keyed by ``primary_keys``.
        primary_keys: primary-key field per collection (default ``"id"``).
        documents: single JSON documents (a settings object, a counter) stored whole.
    """

    __slots__ = ("_base", "_committed", "_txn", "_docs")

    def __init__(
        self,
        collections: Mapping[str, list[Record]],
        primary_keys: Mapping[str, str] | None = None,
        documents: Mapping[str, Any] | None = None,
    ) -> None:
        primary_keys = primary_keys or {}
        metas: dict[str, Collection] = {}
        records: dict[str, dict[str, Record]] = {}
        for name, rows in collections.items():
            meta = Collection(name, primary_keys.get(name, "id"))
            keyed: dict[str, Record] = {}
            for i, row in enumerate(rows):
                if not isinstance(row, dict) or meta.primary_key not in row:
                    raise SpecError(
                        f"record {i} of collection {name!r} has no primary key {meta.primary_key!r}"
                    )
                key = str(row[meta.primary_key])
                if key in keyed:
                    raise SpecError(f"duplicate primary key {key!r} in collection {name!r}")
                keyed[key] = row
            metas[name] = meta
            records[name] = keyed
        self._base = _Base(metas, records, dict(documents or {}))
        self._committed: dict[str, dict[str, Any]] = {}
        self._txn: dict[str, dict[str, Any]] | None = None
        self._docs: dict[str, Any] = {}

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_folder(
        cls,
        folder: str | Path,
        primary_keys: Mapping[str, str] | None = None,
        documents: Iterable[str] = (),
    ):
        """Load one JSON file per collection (a list of records) or document (anything else).

        Files named in ``documents`` are documents even when they hold a list (keyless lists
        such as usage logs, which a collection would reject).
        """
        folder, whole = Path(folder), set(documents)
        if not folder.is_dir():
            raise SpecError(f"database folder {folder} does not exist")
        lists: dict[str, list[Record]] = {}
        docs: dict[str, Any] = {}
        for path in sorted(folder.glob("*.json")):
            data = orjson.loads(path.read_bytes())
            is_collection = isinstance(data, list) and path.stem not in whole
            (lists if is_collection else docs)[path.stem] = data
        return cls(lists, primary_keys, docs)

    def to_folder(self, folder: str | Path) -> None:
        """Write the current state as one JSON file per collection/document."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in self.snapshot().items():
            (folder / f"{name}.json").write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))

    def fork(self) -> Database:
        """A fresh episode over the same initial state, in O(1)."""
        db = Database.__new__(Database)
        db._base = self._base
        db._committed = {}
        db._txn = None
        db._docs = {}
        return db

    # -- reads --------------------------------------------------------------------------
    @property
    def collections(self) -> dict[str, Collection]:
        return self._base.collections

    def primary_key(self, collection: str) -> str:
        return self._meta(collection).primary_key

    def get(self, collection: str, key: Any) -> Record | None:
        """The record with primary key ``key`` (read-only), or ``None``."""
        key = str(key)
        if self._txn is not None:
            changes = self._txn.get(collection)
            if changes is not None and key in changes:
                rec = changes[key]
                if type(rec) is _Deferred:
                    rec = _realize(changes, key, rec)
                return None if rec is _DELETED else rec
        changes = self._committed.get(collection)
        if changes is not None and key in changes:
            rec = changes[key]
            if type(rec) is _Deferred:
                rec = _realize(changes, key, rec)
            return None if rec is _DELETED else rec
        base = self._base.records.get(collection)
        if base is None:
            self._meta(collection)
        return base.get(key) if base is not None else None

    def __contains__(self, item: tuple[str, Any]) -> bool:
        return self.get(*item) is not None

    def scan(self, collection: str) -> Iterator[Record]:
        """Every record of a collection in insertion order (read-only records)."""
        base = self._base.records.get(collection)
        if base is None:
            self._meta(collection)
            return iter(())
        layers = [
            lay[collection]
            for lay in (self._committed, self._txn or {})
            if collection in lay and lay[collection]
        ]
        if not layers:
            return iter(base.values())
        return self._merged(base, layers)

    @staticmethod
    def _merged(base: dict[str, Record], layers: list[dict[str, Any]]) -> Iterator[Record]:
        def current(key: str, rec: Any) -> Any:
            for lay in reversed(layers):
                if key in lay:
                    return _realize(lay, key, lay[key])
            return rec

        for key, rec in base.items():
            rec = current(key, rec)
            if rec is not _DELETED:
                yield rec
        seen: set[str] = set()
        for lay in layers:
            for key in lay:
                if key in base or key in seen:
                    continue
                seen.add(key)
                rec = current(key, None)
                if rec is not _DELETED:
                    yield rec

    def where(
        self,
        collection: str,
        index: str,
        key: Callable[[Record], Any],
        value: Any,
        *,
        in_scan_order: bool = False,
    ) -> list[Record]:
        """The records with ``key(record) == value`` (read-only), in no promised order, or in
        :meth:`scan`'s order with ``in_scan_order`` (for writes whose order shows later).

        The initial state is grouped by ``key`` once, under the name ``index``, and shared by
        every episode; only the records this episode changed are looked at again. A lookup by
        parent (a database's pages, a block's children) thus costs its hits, not a scan.
        """
        groups = self.memo(f"where:{collection}:{index}", lambda db: _group(db, collection, key))
        hits = groups.get(value)
        touched = self._touched(collection)
        if not touched:  # the hits are in the initial state's order, scan's order
            return [rec for _, rec in hits] if hits else []
        kept = [(k, rec) for k, rec in hits if k not in touched] if hits else []
        added: list[Record] = []
        base = self._base.records[collection]
        for k in touched:
            rec = self.get(collection, k)
            if rec is not None and key(rec) == value:
                if k in base:
                    kept.append((k, rec))
                else:
                    added.append(rec)
        if in_scan_order:  # changed initial records where they were, then new ones
            position = self.memo(f"position:{collection}", lambda db: _positions(db, collection))
            kept.sort(key=lambda item: position[item[0]])
        return [rec for _, rec in kept] + added

    def has_changes(self, collection: str) -> bool:
        """Whether this episode wrote any record of ``collection`` (committed or in the open
        transaction): if not, what was derived from its initial records still holds."""
        if self._committed.get(collection):
            return True
        return self._txn is not None and bool(self._txn.get(collection))

    def _touched(self, collection: str) -> dict[str, Any]:
        """Keys this episode wrote in ``collection`` (committed or in the open transaction)."""
        committed = self._committed.get(collection)
        txn = self._txn.get(collection) if self._txn is not None else None
        if not txn:
            return committed or {}
        return {**committed, **txn} if committed else txn

    def initial(self, collection: str, key: Any) -> Record | None:
        """The record ``key`` of the shared initial state (what ``get`` gives if unchanged)."""
        base = self._base.records.get(collection)
        return base.get(str(key)) if base is not None else None

    def count(self, collection: str) -> int:
        return sum(1 for _ in self.scan(collection))

    def document(self, name: str) -> Any:
        """A single-document collection (read-only)."""
        for lay in (self._txn or {}, self._docs):
            if name in lay:
                return lay[name]
        if name not in self._base.documents:
            raise KeyError(f"unknown document {name!r}")
        return self._base.documents[name]

    # -- writes -------------------------------------------------------------------------
    def _layer(self, collection: str) -> dict[str, Any]:
        self._meta(collection)
        overlay = self._txn if self._txn is not None else self._committed
        return overlay.setdefault(collection, {})

    def insert(self, collection: str, record: Record) -> Record:
        """Add a new record; raises ``KeyError`` if its primary key is taken."""
        key = str(record[self.primary_key(collection)])
        if self.get(collection, key) is not None:
            raise KeyError(f"{collection}/{key} already exists")
        self._layer(collection)[key] = record
        return record

    def put(self, collection: str, record: Record) -> Record:
        """Insert or replace a record (by its primary key)."""
        meta = self._base.collections.get(collection) or self._meta(collection)
        key = str(record[meta.primary_key])
        overlay = self._txn if self._txn is not None else self._committed
        layer = overlay.get(collection)
        if layer is None:
            layer = overlay[collection] = {}
        layer[key] = record
        return record

    def put_many(self, collection: str, records: Iterable[Record]) -> None:
        """:meth:`put` of each record, the layer looked up once (a migration of every page)."""
        key, layer = self.primary_key(collection), self._layer(collection)
        for record in records:
            layer[str(record[key])] = record

    def put_deferred(
        self, collection: str, records: Iterable[Record], make: Callable[[Record], Record]
    ) -> None:
        """Replace each record by ``make(record)``, computed only when the record is next read
        (``get``, ``scan``, ``where``, snapshots, ``changes``): a change to every record of a
        group (a schema migration of every page) then costs a placeholder per record, and
        each record the work of computing it once, on its first read. ``make`` must be a pure
        function of the record (which it must not mutate) that keeps its primary key.
        """
        key, layer = self.primary_key(collection), self._layer(collection)
        for record in records:
            layer[str(record[key])] = _Deferred(record, make)

    def delete(self, collection: str, key: Any) -> Record:
        """Remove a record; raises ``KeyError`` if it does not exist."""
        rec = self.get(collection, key)
        if rec is None:
            raise KeyError(f"{collection}/{key} does not exist")
        self._layer(collection)[str(key)] = _DELETED
        return rec

    def set_document(self, name: str, value: Any) -> None:
        (self._txn if self._txn is not None else self._docs)[name] = value

    # -- transactions -------------------------------------------------------------------
    def transaction(self) -> _Transaction:
        """All writes inside reach the state together, or not at all if the block raises
        (``with db.transaction():``; nested, the outer transaction decides)."""
        return _Transaction(self)

    def _commit(self, txn: dict[str, dict[str, Any]]) -> None:
        for name, changes in txn.items():
            if name in self._base.records:
                self._committed.setdefault(name, {}).update(changes)
            else:
                self._docs[name] = changes

    # -- whole-state views --------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        """Whether this episode has changed anything."""
        return any(self._committed.values()) or bool(self._docs)

    def snapshot(self) -> dict[str, Any]:
        """The whole state as ``{collection: [records], document: value}`` (shared records)."""
        state: dict[str, Any] = {name: list(self.scan(name)) for name in self._base.records}
        for name in self._base.documents:
            state[name] = self.document(name)
        for name, value in self._docs.items():
            state[name] = value
        return state

    def snapshot_json(self) -> bytes:
        """``snapshot()`` as JSON bytes; the unchanged initial state is serialised only once.

        Always valid UTF-8 JSON, whatever a tool stored: a lone surrogate becomes U+FFFD, a
        value JSON cannot carry its nearest JSON (:func:`~agentworld_gym.jsonsafe.dumps_state`),
        so verifiers read every state a successful call can leave.
        """
        if not self.dirty:
            return self._base.snapshot_json()
        return dumps_state(self.snapshot())

    def changed_keys(self) -> dict[str, list[str]]:
        """Primary keys touched by this episode, per collection (for evidence and diffs)."""
        return {name: list(ch) for name, ch in self._committed.items() if ch}

    def memo(self, name: str, make: Callable[[Database], Any]) -> Any:
        """``make(db)`` computed once per initial state and shared by every episode of it
        (what verifiers derive from the initial data). ``make`` must read only the base."""
        memo = self._base.memo
        if name not in memo:
            memo[name] = make(self.fork())
        return memo[name]

    def changes(self) -> dict[str, dict[str, Record | None]]:
        """The records this episode changed, per collection: ``{key: record}`` for a created
        or updated record, ``{key: None}`` for a deleted one. Writes that left a record as it
        was (a put of an equal record, a create then delete) are not changes."""
        out: dict[str, dict[str, Record | None]] = {}
        for name, layer in self._committed.items():
            base = self._base.records.get(name, {})
            for key, rec in layer.items():
                old = base.get(key)
                rec = _realize(layer, key, rec)
                new = None if rec is _DELETED else rec
                if new != old:
                    out.setdefault(name, {})[key] = new
        return out

    def changed_documents(self) -> dict[str, Any]:
        """The single documents this episode replaced with a different value."""
        return {
            name: value
            for name, value in self._docs.items()
            if name not in self._base.documents or self._base.documents[name] != value
        }

    def fingerprint(self) -> str:
        """A hash of the whole current state: equal states give equal fingerprints."""
        return hashlib.sha256(dumps_state(self.snapshot(), option=orjson.OPT_SORT_KEYS)).hexdigest()

    def base_fingerprint(self) -> str:
        """A hash of the shared initial state (tests use it to catch in-place mutation)."""
        state = _snapshot(self._base.records, self._base.documents)
        return hashlib.sha256(dumps_state(state, option=orjson.OPT_SORT_KEYS)).hexdigest()

    def deepcopy(self) -> Database:
        """An independent database whose base is this episode's current state."""
        state = copy.deepcopy(self.snapshot())
        lists = {k: v for k, v in state.items() if k in self._base.records}
        docs = {k: v for k, v in state.items() if k not in self._base.records}
        pks = {name: meta.primary_key for name, meta in self.collections.items()}
        return Database(lists, pks, docs)

    def _meta(self, collection: str) -> Collection:
        try:
            return self._base.collections[collection]
        except KeyError:
            import difflib

            close = difflib.get_close_matches(collection, list(self._base.collections), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise KeyError(f"unknown collection {collection!r}.{hint}") from None
