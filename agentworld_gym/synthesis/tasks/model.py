"""What task synthesis knows about an environment: its tools' inputs and outputs, its state.

A :class:`ToolModel` says what a tool does to which collection (``op``), and for each argument its
*role*: the key of the record it addresses, the parent that scopes it, a filter, a body field it
writes, paging. For ``op`` tools compiled from API specs all of this is read from the declarative
implementation; for Python tools it is inferred from names and schemas (``page_id`` takes a key of
``pages``) and refined by executing the tool (see
:mod:`agentworld_gym.synthesis.tasks.sample.walk`). A :class:`CollectionModel` profiles the seed
records: categorical fields (good filters), numeric fields (aggregates), label fields (unique,
human-readable handles) and references to other collections — what the program templates instantiate
against.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.spec import EnvSpec
from agentworld_gym.synthesis.fields import PERSON_NOUNS, is_sentinel
from agentworld_gym.synthesis.tasks.values import flag_named, flag_reads

KEY, SCOPE, FILTER, MATCH, SEARCH, PAGE, BODY, OTHER = (
    "key",
    "scope",
    "filter",
    "match",
    "search",
    "page",
    "body",
    "other",
)
READ_OPS = ("list", "search", "get")
_VERBS = {
    "list": ("list", "query", "search", "find", "browse", "children"),
    "get": ("get", "retrieve", "read", "fetch", "show", "describe", "lookup", "self"),
    "create": ("create", "post", "add", "new", "insert", "append"),
    "update": ("update", "patch", "set", "edit", "modify", "put", "rename", "move"),
    "delete": ("delete", "remove", "archive", "destroy", "trash"),
}
_PREFERRED_LABELS = (
    "name",
    "title",
    "display_name",
    "displayname",
    "login",
    "username",
    "email",
    "label",
    "summary",
    "subject",
    "slug",
    "code",
    "number",
    "key",
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Za-z][a-z]*|\d+")


def words(name: str) -> list[str]:
    """``"getTasksForProject"`` -> ``["get", "tasks", "for", "project"]``."""
    return [w.lower() for w in _WORD.findall(name)]


def twinned(records: list[dict[str, Any]]) -> set[str]:
    """Fields that share their words with another field of a record and disagree with it
    there (``status`` and ``Status``, ``friendly_name`` and ``FriendlyName``: specs that merge
    a request's and a response's spelling): a request saying "its status" cannot tell which
    one it means, so neither is asked for, filtered on or named by."""
    out: set[str] = set()
    for rec in records:
        seen: dict[tuple[str, ...], list[str]] = {}
        for k in rec:
            seen.setdefault(tuple(words(k)), []).append(k)
        for keys in seen.values():
            if len(keys) > 1 and len({repr(rec[k]) for k in keys}) > 1:
                out.update(keys)
    return out


def singular(noun: str) -> str:
    """``projects`` -> ``project``, ``searches`` -> ``search``, ``statuses`` -> ``status``,
    ``databases`` -> ``database``: where a plural in ``-es`` could lose ``s`` or ``es``, the
    form that is a word wins (judged on the last word, which may be two run together:
    ``projectstatuses``); a plural made plural again (``add_onses``) loses both."""
    if noun.endswith(("series", "species")):
        return noun
    if noun.endswith("ies") and len(noun) > 4:
        return noun[:-3] + "y"
    if noun.endswith(("ses", "xes", "ches", "shes", "zes")) and len(noun) >= 3:
        last = "".join(_WORD.findall(noun)[-1:]).lower()
        one, two = last[:-1], last[:-2]
        if last.endswith("yses"):
            return noun[:-2] + "is"  # "analyses"
        if last.endswith("zzes"):
            return noun[:-3]  # "quizzes"
        if noun.endswith(("sses", "xes", "ches", "shes")) and _reads(two, whole=True):
            return noun[:-2]  # "searches", "boxes", "addresses"
        if _reads(one, whole=True):
            return noun[:-1]  # "databases", "caches", "responses"
        if two.endswith(("ons", "apis")) and _reads(two[:-1], True):
            return noun[:-3]  # "add_onses", "apises": a plural made plural again
        if _reads(two, whole=True):
            return noun[:-2]  # "statuses", "searches", "boxes"
        if not _reads(one) and _reads(two):
            return noun[:-2]  # "projectstatuses"
        if noun.endswith(("sses", "xes", "ches", "shes")):
            return noun[:-2]
    if noun.endswith(("us", "is")):
        last = "".join(_WORD.findall(noun)[-1:]).lower()
        if _reads(last, whole=True) and not _reads(last[:-1], whole=True):
            return noun  # "status", "chassis" -- but "menus"
    if noun.endswith("s") and not noun.endswith("ss") and len(noun) > 3:
        return noun[:-1]
    return noun


def _reads(word: str, whole: bool = False) -> bool:
    """Whether ``word`` is a word, or (unless ``whole``) two run together, each of 3+
    letters and the second of 4+ ("projectstatus")."""
    from agentworld_gym.synthesis.words import known

    if len(word) < 2:
        return False
    if known(word):
        return True
    return not whole and any(known(word[:i]) and known(word[i:]) for i in range(3, len(word) - 3))


def humanize(name: str) -> str:
    """A field or collection name as words: ``project_gid`` -> ``project gid``."""
    return " ".join(words(name)) or name


def scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


@dataclass
class Param:
    """One argument of a tool and what it means for the state."""

    name: str
    role: str
    required: bool
    schema: dict[str, Any]
    field: str | None = None
    """The record field it addresses, filters on, or writes (a dotted path for nested bodies)."""
    ref: str | None = None
    """The collection whose primary key it takes (keys, parent scopes, references)."""
    noun: str | None = None
    """What a parent scope of no known collection stands for, from the tool's resource
    path (``location`` for the ``parent`` of ``projects_locations_backups_list``)."""


@dataclass
class ToolModel:
    """A tool as the synthesizers see it."""

    name: str
    writes: bool
    op: str
    """``list`` | ``search`` | ``get`` | ``create`` | ``update`` | ``delete`` | ``call``."""
    collection: str | None
    params: dict[str, Param]
    items: str | None = None
    """Lists: the path of the page of records in the output (``""`` for a bare array)."""
    record: str | None = None
    """Single-record answers: the path of the record in the output; ``None`` when the tool
    answers with a fixed body (an acknowledgement)."""
    page: dict[str, Any] = field(default_factory=dict)
    hidden: frozenset[str] = frozenset()
    next: str | None = None
    """Lists: the output key holding the next page's cursor."""
    declarative: bool = False

    def required(self) -> list[Param]:
        return [p for p in self.params.values() if p.required]

    def consumes(self, required_only: bool = True) -> set[str]:
        """Collections whose keys this tool takes as (required) arguments."""
        return {p.ref for p in self.params.values() if p.ref and (p.required or not required_only)}


@dataclass
class Profile:
    """Seed-record statistics of one collection's top-level fields."""

    categorical: dict[str, list[Any]] = field(default_factory=dict)
    """Field -> its distinct values (2 .. n/2 of them), most common first."""
    numeric: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    """Unique, short, human-readable string fields, best handle first."""
    names: list[str] = field(default_factory=list)
    """The labels whose field name says they name the record (``name``, ``title``, ...)."""


@dataclass
class CollectionModel:
    """One collection: its records, profile, references and the tools over it."""

    name: str
    pk: str
    noun: str
    records: list[dict[str, Any]]
    profile: Profile
    references: dict[str, str] = field(default_factory=dict)
    """Field -> the collection whose keys it holds."""
    tools: dict[str, list[ToolModel]] = field(default_factory=dict)
    """Op -> tools doing it over this collection."""
    hint: str = ""
    """The environment's id: new values fit its service (an Azure location is a region)."""

    def tool(self, op: str) -> ToolModel | None:
        found = self.tools.get(op)
        return found[0] if found else None

    def label(self, record: dict[str, Any]) -> str:
        """The best human handle of a record (its name, title, ...) or its key."""
        for f in self.profile.labels:
            if isinstance(record.get(f), str):
                return record[f]
        return str(record.get(self.pk))


@dataclass
class EnvModel:
    """Every tool and collection of one environment."""

    spec: EnvSpec
    tools: dict[str, ToolModel]
    collections: dict[str, CollectionModel]

    def nouns(self) -> dict[str, str]:
        return {c.name: c.noun for c in self.collections.values()}


# -- profiles -------------------------------------------------------------------------------
def profile(
    records: list[dict[str, Any]],
    pk: str,
    references: dict[str, str],
    noun: str = "",
    things: frozenset[str] = frozenset(),
) -> Profile:
    """Which fields filter, aggregate and label well (see :class:`Profile`). A number
    named by one of the environment's ``things`` in the singular (``speaker``, where
    there are speakers) points at a record: no total or average of it means anything."""
    n = len(records)
    values: dict[str, list[Any]] = {}
    for rec in records:
        for k, v in rec.items():
            if k != pk and (scalar(v) or isinstance(v, bool)):
                values.setdefault(k, []).append(v)
    prof = Profile()
    label_rank: list[tuple[int, str]] = []
    twins = twinned(records)
    for k, vs in values.items():
        if len(vs) < max(2, int(0.8 * n)) or k in references or generic_parent(k) or paging(k):
            continue  # a parent is a scope, and a page size a view, not a property
        if k in twins:
            continue
        counts = Counter(map(repr, vs))
        distinct = len(counts)
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vs):
            last = (words(k) or [""])[-1]
            pointer = (last in things or last in PERSON_NOUNS) and last not in _MEASURES
            # a date or time kept as a number: "modification date above 500" means nothing
            dated = last in _WHEN or "".join(words(k)).endswith(_WHEN_ENDS)
            # a yes/no or a page's bounds kept as a number: "the lowest is first" means nothing
            bound = words(k) in (["start"], ["end"])
            odd = pointer or dated or flag_named(k) or bound or looks_like_id(k) or _code_like(k)
            if distinct >= 3 and not odd:
                prof.numeric.append(k)
        flags = distinct <= 5 and all(isinstance(v, int) for v in vs)  # 0/1, small codes
        if all(isinstance(v, bool) for v in vs) and not flag_reads(k):
            continue  # "with bypass policy lockout safety check on": no condition to state
        # a soft-delete mark is no state to pick by ("delete every one that is not deleted")
        erased = bool({"deleted", "removed", "deleting", "trashed"} & set(words(k)))
        if (
            not erased
            and 2 <= distinct <= max(2, n // 2)
            and all(
                isinstance(v, bool) or (isinstance(v, str) and len(v) <= 40) or flags for v in vs
            )
        ):
            firsts = {repr(v): v for v in vs}
            states = [firsts[r] for r, _ in counts.most_common() if not is_sentinel(firsts[r])]
            if len(states) >= 2:  # "STATE_UNSPECIFIED" is no state a user picks records by
                prof.categorical[k] = states
        if distinct == len(vs) == n and all(
            isinstance(v, str) and 3 <= len(v) <= 60 and "\n" not in v for v in vs
        ):
            lk = k.lower()
            rank = _PREFERRED_LABELS.index(lk) if lk in _PREFERRED_LABELS else 50
            if rank == 50 and ("url" in lk or looks_like_id(k)):
                continue
            label_rank.append((rank, k))
    prof.labels = [k for _, k in sorted(label_rank)]
    prof.names = [k for r, k in sorted(label_rank) if r < 50 or _naming(k, noun)]
    return prof


_WHEN = frozenset("date time timestamp at on datetime epoch".split())
_WHEN_ENDS = ("date", "timestamp", "modified", "created", "updated")
_MEASURES = frozenset(
    """rating score price cost count amount balance total size duration quantity number value
    percent percentage rate level weight height width length age year points stars fee
    limit capacity usage budget revenue""".split()
)
"""Words that name a quantity even where a collection is named so ("ratings")."""

_PAGING = frozenset(
    {
        "page", "pages", "per page", "page size", "page number", "page token", "next page",
        "total size", "total count", "total pages", "total results", "total items", "limit",
        "offset", "cursor", "next cursor", "next page token", "prev", "next", "has more",
        "total elements", "current page", "page count", "number of elements", "first page uri",
        "next page uri", "previous page uri", "page uri", "total entries", "take", "skip",
    }
)  # fmt: skip


def paging(name: str) -> bool:
    """A field of a list response's paging ("total size", "per page"), copied into records by
    some specs: no user filters or totals records by it."""
    return " ".join(words(name)) in _PAGING


def _code_like(name: str) -> bool:
    """A number that names rather than measures ("order identifier", "return code", "zip"):
    its total or average means nothing."""
    w = words(name)
    return bool(w) and w[-1] in (
        "identifier", "code", "number", "no", "num", "nr", "zip", "year", "month", "day",
        "index", "idx", "position", "order", "sequence", "version", "port", "phone", "type",
        "unix", "timestamp", "epoch", "date", "time", "at", "lat", "latitude", "lng", "lon",
        "longitude", "mode", "kind", "category", "class", "format", "encoding", "state",
        "status", "flag",
    )  # fmt: skip


_OWN = frozenset(("display", "full", "friendly", "short", "long", "given", "common", "unique"))


def _naming(name: str, noun: str = "") -> bool:
    """Whether the field names the record itself: ``name``, ``project_name`` in projects,
    ``display_name`` -- not ``creator_name`` or ``conductor_name``, which name someone else."""
    w = words(name)
    if len(w) > 1 and not set(w[:-1]) <= _OWN | set(words(noun)):
        return False
    return any(
        w
        in (
            "name",
            "title",
            "label",
            "email",
            "login",
            "slug",
            "subject",
            "summary",
            "username",
            "handle",
        )
        for w in words(name)
    )


GENERIC_PARENTS = frozenset({"parent", "parent name", "parent id", "parent resource", "parents"})
"""Field labels that say a record has a parent but not what kind (Google-style ``parent``)."""


def generic_parent(name: str) -> bool:
    return " ".join(words(name)) in GENERIC_PARENTS


def parent_noun(tool_name: str, collection: str) -> str | None:
    """The resource just above ``collection`` in the tool's name, as a singular noun:
    ``location`` for ``alloydb_projects_locations_backups_list`` over ``backups``."""
    w, cw = words(tool_name), words(collection)
    own = {"".join(cw), singular("".join(cw))}
    for i in range(1, len(w)):
        for j in range(i + 1, min(len(w), i + len(cw) + 1) + 1):
            part = "".join(w[i:j])
            if part in own or singular(part) in own:
                prev = w[i - 1]
                if prev.isalpha() and len(prev) > 3 and prev.endswith("s"):
                    return singular(prev)
                return None
    return None


def looks_like_id(name: str) -> bool:
    w = words(name)
    return bool(w) and w[-1] in (
        "id", "gid", "uuid", "key", "sid", "ids", "token", "hash", "fk", "idfk"
    )  # fmt: skip


# -- tools ----------------------------------------------------------------------------------
def _op_tool(tool: Any, env: EnvSpec) -> ToolModel:
    impl = tool.implementation
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    coll = impl["collection"]
    refs = env.collections.get(coll, {}).get("references", {})
    roles: dict[str, tuple[str, str | None, str | None]] = {}
    if impl.get("key"):
        roles[impl["key"]] = (KEY, env.collections[coll].get("primary_key", "id"), coll)
    for p in impl.get("parents", []):
        fld = p.get("field", p["arg"])
        roles[p["arg"]] = (SCOPE, fld, p.get("collection") or refs.get(fld))
    for arg, fld in impl.get("filters", {}).items():
        roles.setdefault(arg, (FILTER, fld, refs.get(fld)))
    for arg, fld in impl.get("match", {}).items():
        roles.setdefault(arg, (MATCH, fld, refs.get(fld)))
    if impl.get("search"):
        roles.setdefault(impl["search"]["arg"], (SEARCH, None, None))
    page = impl.get("page") or {}
    for k in ("size", "offset", "page", "cursor"):
        if page.get(k):
            roles.setdefault(page[k], (PAGE, k, None))
    for arg, fld in impl.get("body", {}).items():
        roles.setdefault(arg, (BODY, fld, refs.get(fld)))
    params = {}
    for name, schema in props.items():
        role, fld, ref = roles.get(name, (OTHER, None, None))
        params[name] = Param(name, role, name in required, schema, fld, ref)
        if role in (SCOPE, BODY, FILTER) and ref is None and generic_parent(fld or name):
            params[name].noun = parent_noun(tool.name, coll)
    response = impl.get("response", {})
    op = impl["op"]
    fixed = "body" in response
    return ToolModel(
        name=tool.name,
        writes=tool.kind != "read",
        op=op,
        collection=coll,
        params=params,
        items=(response.get("items") or "") if op in ("list", "search") else None,
        record=None if fixed or op in ("list", "search") else (response.get("wrap") or ""),
        page=dict(page),
        hidden=frozenset(response.get("hide", ())),
        next=response.get("next"),
        declarative=True,
    )


def _noun_index(env: EnvSpec) -> dict[str, str]:
    """Singular and plural word forms -> collection name."""
    index: dict[str, str] = {}
    for name in env.collections:
        w = words(name)
        if not w:
            continue
        index.setdefault("".join(w), name)
        index.setdefault(singular("".join(w)), name)
        index.setdefault(singular(w[-1]), name)
    return index


def _python_tool(tool: Any, env: EnvSpec, nouns: dict[str, str]) -> ToolModel:
    """Roles of a code tool's arguments from names: ``<noun>_id`` takes a key of ``nouns``."""
    w = words(tool.name)
    if tool.kind == "read":
        plural_noun = any(x.endswith("s") and singular(x) in nouns for x in w[1:])
        op = "list" if plural_noun or any(x in _VERBS["list"] for x in w) else "get"
    else:
        ops = [o for x in w for o in ("delete", "update", "create") if x in _VERBS[o]]
        op = ops[0] if ops else "update"
    coll = next((nouns[singular(x)] for x in w if singular(x) in nouns), None)
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    params = {}
    for name, schema in props.items():
        pw = words(name)
        role, fld, ref = OTHER, None, None
        if pw and pw[-1] in ("id", "gid", "uuid", "key") and len(pw) > 1:
            ref = nouns.get(singular("".join(pw[:-1]))) or nouns.get(singular(pw[-2]))
            role = KEY if ref is not None and ref == coll else (SCOPE if ref else OTHER)
        elif name in ("cursor", "start_cursor", "page_size", "limit", "offset", "page"):
            role, fld = PAGE, "size" if "size" in name or name == "limit" else "cursor"
        elif name in ("query", "q", "search", "text") and schema.get("type") == "string":
            role = SEARCH
        elif tool.kind != "read":
            role, fld = BODY, name
        params[name] = Param(name, role, name in required, schema, fld, ref)
    return ToolModel(tool.name, tool.kind != "read", op, coll, params)


def _noun(name: str, glued: dict[str, list[str]], prose: frozenset[str] = frozenset()) -> str:
    """A collection's noun; one named after a tool (``getpermissions`` from
    ``GetPermission``) is split into that tool's words, so a request naming the collection
    does not spell out the tool's name; a word run together from two (``projectstatus``)
    is split ("project status") unless the environment's ``prose`` says it so
    ("spreadsheet")."""
    key = "".join(words(name))
    w = glued.get(key) or glued.get(singular(key))
    if w and len(w) > 1:
        return _phrase(" ".join([*w[:-1], singular(w[-1])]))
    return _phrase(
        " ".join(x if x in prose else split_glued(x) for x in humanize(singular(name)).split())
    )


_PHRASES = {"add on": "add-on", "log in": "login", "sign in": "sign-in", "set up": "setup"}


def _phrase(noun: str) -> str:
    """``add on`` -> ``add-on``: a compound as it is written."""
    for loose, said in _PHRASES.items():
        noun = re.sub(rf"\b{loose}\b", said, noun)
    return noun


def split_glued(word: str) -> str:
    """``projectstatus`` -> ``project status``: a word that is none, but two run together,
    each as the dictionary spells it (the longest first word: "access log", not "acces
    slog"), the second no suffix ("fraudster" stays whole)."""
    from agentworld_gym.synthesis.words import _dictionary, known

    if known(word) or not word.isalpha():
        return word
    table = _dictionary()
    for i in range(len(word) - 3, 3, -1):  # the longest first word ("access log")
        end = word[i:]
        if (
            word[:i] in table
            and end in table
            and (len(end) > 3 or end in _SHORT)
            and (end not in _SUFFIXES)
        ):
            return f"{word[:i]} {end}"
    return word


_SHORT = frozenset("log key job tag app set map row bot url api fee tax box".split())
_SUFFIXES = frozenset("ster ment ness ship hood able less ward wise like ling ette".split())


_NOT_HEADS = frozenset(
    """id ids key keys uuid gid name names value values item items list lists api apis v
    all by for from to of in on with and or the a an get set put post patch new""".split()
)
"""Words of tool names that name no kind of record."""
_LEADS = frozenset(
    """get list create update delete remove add patch put fetch retrieve describe query find
    insert modify edit write check lookup""".split()
)
"""Verbs that begin a tool's name ("get log file url"), not a noun ("post", "search",
"set", "archive", "read" may be either)."""
_IDS = ("id", "ids", "uuid", "uuids", "gid")


def _garbled(noun: str) -> bool:
    """Whether a noun is no word a reader knows: an identifier's fragment ("ts" from
    ``ts``, "apinf" from ``apinfs``), an id ("uuid" for ``uuids``) or a tool's name ("get
    log file url")."""
    from agentworld_gym.synthesis.words import known

    w = noun.split()
    return (
        not w
        or any(not known(x) for x in w)
        or (len(w) == 1 and len(w[0]) < 3)
        or w[-1] in _IDS
        or (len(w) > 1 and w[0] in _LEADS)
    )


def _tool_head(tools: list[Any]) -> str | None:
    """The noun a collection's tools are named after (``topic`` for ``removeTopic``,
    ``bookmarkTopic``, ``updateTopicStatus``; ``login`` for ``login_apinf``): their most
    common word that is a word and no verb of an operation, with the words always beside
    it; ``None`` when it is not in most of them (of one tool, when its name says more than
    one such word)."""
    from agentworld_gym.synthesis.words import NOT_NOUNS, known

    kept: list[list[str]] = []
    for t in tools:
        w = [singular(x) for x in words(t.name)]
        kept.append(
            [
                x
                for x in w
                if len(x) >= 3
                and x not in _LEADS
                and x not in NOT_NOUNS
                and x not in _NOT_HEADS
                and known(x)
            ]
        )
    seen: Counter[str] = Counter(x for k in kept for x in dict.fromkeys(k))
    if not seen:
        return None
    order = {x: i for i, x in reversed(list(enumerate(x for k in kept for x in k)))}
    best = max(seen, key=lambda x: (seen[x], -order[x]))
    if 2 * seen[best] <= len(tools):
        return None
    runs = [k for k in kept if best in k]
    phrase = [best]
    for step in (1, -1):  # the words always right after it, then always right before
        while True:
            nxt = set()
            for k in runs:
                i = k.index(phrase[-1] if step == 1 else phrase[0]) + step
                nxt.add(k[i] if 0 <= i < len(k) else None)
            if len(nxt) != 1 or None in nxt or len(phrase) >= 3:
                break
            x = nxt.pop()
            phrase = [*phrase, x] if step == 1 else [x, *phrase]
    if len(tools) == 1 and len(kept[0]) > 1:
        return None
    return " ".join(phrase)


def _cased(word: str, prose: str, capital: bool = False) -> str | None:
    """How an environment's prose writes ``word`` when it spells it as a name, and only so:
    ``APInf`` (mixed or upper case; with ``capital``, ``Spring`` too)."""
    found = set(re.findall(rf"(?<![\w-]){re.escape(word)}(?![\w-])", prose, re.I))
    named = sorted(m for m in found if m != m.lower() and (capital or m != m.capitalize()))
    return named[0] if named and len(named) == len(found) else None


def _mended(noun: str, prose: str, head: str | None) -> str:
    """A garbled noun made to read, or ``""``: without a tool's verb ("get log file url" ->
    "log file url") or a trailing id ("workspace id" -> "workspace"), its fragments as the
    prose spells them as names ("apinf token" -> "APInf token"); a short fragment that
    abbreviates the tools' head noun is that noun ("ts" -> "topic")."""
    from agentworld_gym.synthesis.words import NOT_NOUNS, known

    w = noun.split()
    if len(w) > 1 and w[0] in _LEADS:
        w = w[1:]
        if w[0] in NOT_NOUNS:
            return ""  # "get for workspace"
    if len(w) > 1 and w[-1] in _IDS:
        w = w[:-1]
    said = [x if known(x) else _brand(x, prose) or x for x in w]
    rest = " ".join(x for x, y in zip(w, said, strict=True) if x == y)
    if not rest or not _garbled(rest):
        return " ".join(said)
    if head and len(w) == 1 and _abbreviates(w[0], head):
        return head
    return ""


def _brand(word: str, prose: str) -> str | None:
    """``APInf``, ``PCI``, ``GraphQL``: how the prose always writes ``word``, a name (not
    an identifier in camelCase, ``tokenId``, ``SdkClient``)."""
    name = _cased(word, prose)
    if name is None or not name[0].isupper() or re.search(r"[a-z][A-Z][a-z]{2}", name):
        return None
    return name


def _acronyms(noun: str, prose: str) -> str:
    """``ips`` -> ``IP`` where the prose writes ``IP`` (or ``IPs``): a short word the
    environment spells in capitals is an acronym, and a noun names one of its things
    (the plural adds a lower-case ``s``: "IPs", never "ipses")."""
    said = []
    for x in noun.split():
        caps = [_cased(w, prose) for w in ([x, x[:-1]] if x.endswith("s") else [x])]
        caps = [c for c in caps if c and c.isupper() and len(c) <= 5]
        said.append(caps[-1] if caps and len(x) <= 6 else x)
    return " ".join(said)


def _abbreviates(short: str, head: str) -> bool:
    """``ts`` of ``topics``: the same first letter, and the rest in order."""
    full = head.replace(" ", "") + "s"
    if short[:1] != full[:1]:
        return False
    it = iter(full)
    return all(ch in it for ch in short)


def _better_nouns(
    spec: EnvSpec, nouns: dict[str, str], tools: dict[str, ToolModel]
) -> dict[str, str]:
    """Nouns for the collections whose own name reads as no word (see :func:`_garbled`):
    the noun their tools are named after ("topic" for discourse's ``ts``), after the name
    as the prose spells it where it does ("APInf login" for ``apinfs``, whose one tool is
    ``login_apinf``); and a noun no tool over the collection says, which the prose writes
    only as a name, gets the tools' noun after it ("Spring service" for Azure's
    ``springs``, whose tools are ``Services_*``). A noun another collection already has
    is not taken (the request would not say which is meant); the collection keeps its
    own."""
    from agentworld_gym.synthesis.words import NOT_NOUNS

    prose = " ".join(
        [getattr(spec, "description", "") or "", *(t.description or "" for t in spec.tools)]
    )
    nouns = {name: _acronyms(noun, prose) for name, noun in nouns.items()}
    taken = {n.lower() for n in nouns.values()}
    by: dict[str, list[ToolModel]] = {}
    for t in tools.values():
        if t.collection in nouns:
            by.setdefault(t.collection, []).append(t)
    better = dict(nouns)
    for name in sorted(nouns, key=lambda n: (-len(by.get(n, [])), n)):
        noun, mine = nouns[name], by.get(name, [])
        if not mine:
            continue
        head = _tool_head(mine)
        if _garbled(noun):
            new = _mended(noun, prose, head)
            if new and new.split()[-1] in NOT_NOUNS:
                continue
        elif " " in noun or not head or any(noun in map(singular, words(t.name)) for t in mine):
            continue
        else:  # tools named for another thing: Azure's Services_Get over "springs"
            brand = _cased(noun, prose, capital=True)
            if not brand or not re.search(rf"[/.]{re.escape(brand)}/", prose):
                continue  # "/Spring/{serviceName}": a resource's name in its path
            new = f"{brand} {head}"
        if new and new != noun and (new.lower() == noun.lower() or new.lower() not in taken):
            better[name] = new
            taken.add(new.lower())
    return better


def build_model(spec: EnvSpec) -> EnvModel:
    """The :class:`EnvModel` of ``spec`` (records read from its database)."""
    nouns = _noun_index(spec)
    tools: dict[str, ToolModel] = {}
    for t in spec.tools:
        if t.implementation.get("type") == "op":
            tools[t.name] = _op_tool(t, spec)
        else:
            tools[t.name] = _python_tool(t, spec, nouns)
    db = spec.database
    glued = {"".join(words(t.name)): words(t.name) for t in spec.tools}
    from agentworld_gym.synthesis.words import sentence_words

    prose = sentence_words(spec)
    nouns_of = _better_nouns(spec, {n: _noun(n, glued, prose) for n in db.collections}, tools)
    collections: dict[str, CollectionModel] = {}
    things = frozenset(n.split()[-1].lower() for n in nouns_of.values() if n)
    for name, meta in db.collections.items():
        refs = dict(spec.collections.get(name, {}).get("references", {}))
        for tm in tools.values():
            if tm.collection == name:
                for p in tm.params.values():
                    if p.role == SCOPE and p.ref and p.field and "." not in p.field:
                        refs.setdefault(p.field, p.ref)
        records = list(db.scan(name))
        noun = nouns_of[name]
        collections[name] = CollectionModel(
            name,
            meta.primary_key,
            noun,
            records,
            profile(records, meta.primary_key, refs, noun, things),
            refs,
            hint=spec.id,
        )
    for tm in tools.values():
        if tm.collection in collections:
            collections[tm.collection].tools.setdefault(tm.op, []).append(tm)
    return EnvModel(spec, tools, collections)
