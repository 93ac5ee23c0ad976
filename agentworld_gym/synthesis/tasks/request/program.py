"""How program requests say things: the goal in a user's words, not the program's steps.

A program template knows *what* it does (filter some records, write a value, count); this
module says it the way a person asking for it would:

- **conditions in words** (:func:`np`, :func:`pred`): a boolean field becomes an adjective
  or a negation ("inactive customers", "devices that are not online", "keys that don't have
  a webhook"), a value a short phrase ("with status "open""), never "whose is active is
  false";
- **writes in the tool's own verb** (:class:`Verbs`, from :mod:`agentworld_gym.semantics`):
  an update is "set"/"change", a create "add"/"create" or its own verb ("publish a message",
  "invite a member"), a delete "delete"/"remove", an action its verb ("cancel", "revoke") —
  the audit's ``verb_mismatches`` reads the sentence holding the call's values, so every
  template keeps a write's values and its verb in one sentence;
- **records people can find** (:func:`refer`): records of a collection with a complete list
  tool and a label are named by the label ("the devices "Lobby cam" and "Porch light""),
  and the program lists the collection first so the gold chain walks the agent's path;
- **several phrasings** per intent (:func:`pick`), chosen by the task's seeded rng, with
  different openings (a question, the goal, a context clause).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.semantics import Meaning, meaning
from agentworld_gym.synthesis.tasks.model import (
    EnvModel,
    ToolModel,
    humanize,
    scalar,
    split_glued,
)
from agentworld_gym.synthesis.tasks.request.render import keyed, plural, quote, series
from agentworld_gym.synthesis.tasks.sample.programs import Caller, Caps
from agentworld_gym.synthesis.words import known

MAX_ITEMS = 6
"""Most records a single-tool loop names or makes (the gold chain stays under 8 calls)."""
MAX_REPEATS = 8
"""Most calls of one tool in a task of three or more tools, whose records the data picks (a
clean-up of eleven records: eight deletes and three updates)."""
MAX_IDS = 4
"""Most records a request names by raw key (when nothing friendlier names them)."""

_ANTONYM = {
    "active": "inactive",
    "online": "offline",
    "offline": "online",
    "enabled": "disabled",
    "disabled": "enabled",
    "visible": "hidden",
    "hidden": "visible",
    "public": "private",
    "private": "public",
    "locked": "unlocked",
    "verified": "unverified",
    "paid": "unpaid",
    "read": "unread",
    "published": "unpublished",
    "available": "unavailable",
    "valid": "invalid",
    "open": "closed",
    "closed": "open",
    "internal": "external",
    "resolved": "unresolved",
    "approved": "unapproved",
    "confirmed": "unconfirmed",
    "connected": "disconnected",
    "assigned": "unassigned",
    "healthy": "unhealthy",
}
_MODAL = {"can": ("can", "cannot"), "allow": ("allow", "don't allow")}
_MODAL |= {"allows": ("allow", "don't allow"), "should": ("should", "shouldn't")}
_MODAL |= {"supports": ("support", "don't support"), "requires": ("require", "don't require")}
_ID_SHAPE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|[A-Za-z]{1,8}_[0-9A-Za-z]{6,}"
    r"|(?=[0-9A-Za-z]*\d)(?=[0-9A-Za-z]*[A-Za-z])[0-9A-Za-z]{8,}"
    r"|\d{1,12}",
    re.I,
)
"""Internal-id shapes (as the catalog audit sees them): a label shaped so names nothing."""


def pick(rng: random.Random, options: list[str]) -> str:
    """One phrasing of an intent, by the task's rng (empty options are skipped)."""
    live = [o for o in options if o]
    return rng.choice(live)


def label_of(name: str) -> str:
    """A field name as people say it: ``project_id`` -> ``project``, ``isActive`` -> ``is
    active``, ``created_at`` -> ``creation date``, ``ele`` -> ``elevation``; never a word
    twice in a row ("total total entries")."""
    w = humanize(name.split(".")[-1]).split()
    w = w[:-1] if len(w) > 1 and w[-1] in ("id", "gid", "uuid", "key") else w
    return field_label(" ".join(w))


def field_label(name: str) -> str:
    """A field as a request names what it writes: :func:`label_of`, an id kept
    (``project_id`` -> ``project id``)."""
    w = " ".join(map(_unglued, humanize(name.split(".")[-1]).split())).split()
    w = [_ABBREVIATIONS.get(x, x) for x in w] if len(w) <= 3 else w
    if len(w) >= 2 and w[-1] in ("at", "on") and w[-2] in _EVENTS:
        w = [*w[:-2], *_EVENTS[w[-2]].split(), "date"]  # "created at" -> "creation date"
    elif len(w) == 2 and w[0] == "date" and w[1] in _EVENTS:
        w = [*_EVENTS[w[1]].split(), "date"]  # "date created" -> "creation date"
    elif w in (["created"], ["updated"], ["modified"]):
        w = [*_EVENTS[w[0]].split(), "date"]
    elif 2 <= len(w) <= 3 and w[-1] == "by" and w[-2] in _AGENTS and w[0] in (w[-2], "last"):
        w = _AGENTS[w[-2]].split()  # "created by" -> "creator": the person, not a phrase
    return " ".join(x for i, x in enumerate(w) if i == 0 or x != w[i - 1])


def _unglued(word: str) -> str:
    """A word of a field's name as people write it: ``servicenames`` -> ``service names``,
    ``isfavorite`` -> ``is favorite``, ``categorys`` -> ``categories`` (words run together,
    or a plural spelled by rule); a word the dictionary knows stays."""
    if not word.isalpha() or len(word) < 5:
        return word
    if word.endswith("ys") and word[-3] not in "aeiou" and known(word[:-2] + "y"):
        return word[:-2] + "ies"
    if known(word):
        return word
    for lead in ("is", "has", "by", "can", "allow", "enable"):
        rest = word[len(lead) :]
        if word.startswith(lead) and len(rest) >= 3 and known(rest):
            return f"{lead} {rest}"
    split = split_glued(word)  # only onto a word fields end in: "spreadsheet" stays whole
    return split if split.split()[-1] in _FIELD_ENDS else word


_FIELD_ENDS = frozenset(
    """name names id ids type types count counts date time url code codes status number key
    keys list value values size mode level""".split()
)


_EVENTS = {
    "created": "creation", "updated": "update", "modified": "modification",
    "deleted": "deletion", "published": "publication", "started": "start", "ended": "end",
    "finished": "finish", "completed": "completion", "expired": "expiry", "expires": "expiry",
    "closed": "closing", "opened": "opening", "submitted": "submission", "resolved":
    "resolution", "registered": "registration", "joined": "joining", "sent": "sending",
    "received": "receipt", "cancelled": "cancellation", "canceled": "cancellation",
    "approved": "approval", "archived": "archiving", "scheduled": "scheduled", "paid":
    "payment", "issued": "issue", "signed": "signing", "verified": "verification",
    "seen": "last seen", "accessed": "last access", "used": "last use", "due": "due",
    "confirmed": "confirmation", "delivered": "delivery", "shipped": "shipping",
}  # fmt: skip
"""A past participle before ``at`` / ``on`` and the noun of its event ("created at" is the
creation date)."""
_AGENTS = {
    "created": "creator", "updated": "last editor", "modified": "last editor", "owned": "owner",
    "assigned": "assignee", "requested": "requester", "approved": "approver", "deleted":
    "deleter", "submitted": "submitter", "reviewed": "reviewer", "reported": "reporter",
    "invited": "inviter", "sent": "sender", "edited": "last editor", "closed": "closer",
}  # fmt: skip
"""A participle before ``by`` and the person it names ("the created by" reads as no noun)."""
_ABBREVIATIONS = {
    "ele": "elevation", "qty": "quantity", "amt": "amount", "desc": "description",
    "addr": "address", "cnt": "count", "nbr": "number", "msg": "message",
    "img": "image", "pwd": "password", "tz": "time zone", "dept": "department", "lat":
    "latitude", "lng": "longitude", "lon": "longitude", "src": "source", "dst": "destination",
    "dest": "destination", "seq": "sequence", "pct": "percent", "ver": "version", "avg":
    "average", "loc": "location", "lang": "language",
    "dob": "date of birth", "tel": "telephone", "org": "organization", "env": "environment",
    "prev": "previous", "attr": "attribute", "attrs": "attributes", "usr": "user", "dur":
    "duration", "freq": "frequency", "len": "length", "max": "maximum", "min": "minimum",
}  # fmt: skip
"""Abbreviations in field names, said out ("ele" of a peak is its elevation)."""

_MOMENT = frozenset("date datetime timestamp at on".split())
_MOMENT_TIME = frozenset(
    """create creation update modification modify delete deletion start end finish expiry
    expire expiration due publish publication close open last event send sent""".split()
)


def dated(name: str) -> bool:
    """Whether a field holds a moment (``created_at``, ``dueDate``, ``passwordUpdate``,
    ``start_time``) -- not a duration (``response_time``, ``actual_time_minutes``): its
    extremes are the earliest and latest, not the lowest and highest."""
    w = humanize(name.split(".")[-1]).split()
    if not w:
        return False
    if w[-1] in _MOMENT and (len(w) > 1 or w[-1] in ("date", "datetime", "timestamp")):
        return True
    if w[-1] == "time" and len(w) > 1:
        return w[-2] in _MOMENT_TIME or w[-2] in _EVENTS
    return w[-1] in ("created", "updated", "modified", "update", "expiry", "expiration") or (
        w[0] == "date" and len(w) == 2
    )


def extreme(name: str, top: bool) -> str:
    """``highest`` / ``lowest``, or of a moment ``latest`` / ``earliest``."""
    if dated(name):
        return "latest" if top else "earliest"
    return "highest" if top else "lowest"


def measure(op: str, name: str) -> str:
    """What an aggregate of field ``name`` is called: ``total revenue``, ``average price``,
    ``latest creation date``; ``total entries`` (not "total total entries")."""
    label = label_of(name)
    word = extreme(name, op == "max") if op in ("max", "min") else _OP[op]
    return label if label.split()[0] == word else f"{word} {label}"


_OP = {"sum": "total", "avg": "average"}


# -- conditions -------------------------------------------------------------------------------
@dataclass
class Said:
    """One condition in words: an adjective before the noun (or ``""``), a relative clause
    after it (plural, singular) and a predicate ("are offline", "has status "open"")."""

    pre: str
    post_pl: str
    post_sg: str
    pred_pl: str
    pred_sg: str


def say(f: str, v: Any, rng: random.Random) -> Said:
    """``[f, v]`` as words (see :class:`Said`)."""
    name = label_of(f)
    words = name.split()
    if isinstance(v, bool):
        return _say_bool(words, v)
    if v is None:
        return Said("", f"with no {name}", f"with no {name}", f"have no {name}", f"has no {name}")
    q = quote(v)
    if words[-1] in ("type", "kind", "category") and len(words) == 1:
        return Said(
            "", f"of {name} {q}", f"of {name} {q}", f"are of {name} {q}", f"is of {name} {q}"
        )
    post = pick(rng, [f"with {name} {q}", f"whose {name} is {q}", f"with {a(name)} of {q}"])
    pred = pick(rng, [f"have {name} {q}", f"have {a(name)} of {q}"])
    return Said("", post, post, pred, pred.replace("have", "has", 1))


def _say_bool(words: list[str], v: bool) -> Said:
    head = words[0] if len(words) > 1 else ""
    rest = " ".join(words[1:])
    copula = head in ("is", "are")
    if copula:
        words, head = words[1:], ""
    if head in ("has", "have"):
        rest = rest if len(words) > 2 or rest.endswith("s") else f"a {rest}"
        pl, sg = (
            (f"have {rest}", f"has {rest}") if v else (f"don't have {rest}", f"doesn't have {rest}")
        )
        return Said("", "that " + pl, "that " + sg, pl, sg)
    if head in _MODAL:
        yes, no = _MODAL[head]
        pl = f"{yes if v else no} {rest}"
        if head in ("can", "should"):
            sg = pl
        else:
            sg = f"{yes}s {rest}" if v else f"doesn't {yes} {rest}"
        return Said("", "that " + pl, "that " + sg, pl, sg)
    adj = " ".join(words)
    if len(words) == 1 and not _adjective(adj):  # "sites that are error"
        said = f"with {adj} set to {'true' if v else 'false'}"
        pl = f"have {adj} set to {'true' if v else 'false'}"
        return Said("", said, said, pl, pl.replace("have", "has", 1))
    if len(words) == 1 or copula:
        pre = (adj if v else _ANTONYM.get(adj, "")) if len(words) == 1 else ""
        word = adj if v else (_ANTONYM.get(adj) or f"not {adj}")
        return Said(pre, f"that are {word}", f"that is {word}", f"are {word}", f"is {word}")
    if words[-1].endswith("ed") and len(words) == 2:
        state = ("" if v else "not ") + words[-1]
        post = f"whose {words[0]} is {state}"
        return Said("", post, post, f"have their {words[0]} {state}", f"has its {words[0]} {state}")
    state = "on" if v else "off"
    return Said(
        "",
        f"with {adj} {state}",
        f"with {adj} {state}",
        f"have {adj} {state}",
        f"has {adj} {state}",
    )


_ADJECTIVES = frozenset(
    """active online offline public private open closed hidden visible default free live
    new read unread done valid invalid primary secondary main available ready busy dirty
    empty full official premium internal external local global remote mobile secure safe
    stale current static dynamic final mandatory optional required unique favorite
    favourite starred pinned muted sensitive anonymous inline nsfw spam test demo beta
    trial sandbox draft paid healthy blank native sticky urgent important hot cold old
    recurring personal shared deprecated experimental automatic manual inactive enabled
    disabled verified locked standard explicit implicit sold inbound outbound complete
    incomplete overdue late due ok alive fake real true false""".split()
)
_ADJECTIVE_ENDS = (
    "ed", "able", "ible", "al", "ive", "ic", "ous", "ful", "less", "ent", "ant", "ary", "ory",
    "ing", "ish", "ile", "ian", "ar", "ly", "en",
)  # fmt: skip


def _adjective(word: str) -> bool:
    """Whether a yes/no field's one word reads as what records *are* ("active", "archived",
    "visible", "pinned") rather than a thing they have ("error", "alert", "video")."""
    return (
        word in _ADJECTIVES
        or word in _ANTONYM
        or word in _ANTONYM.values()
        or (len(word) > 4 and word.endswith(_ADJECTIVE_ENDS))
    )


def np(
    noun: str, where: list[list[Any]], rng: random.Random, plural_: bool = True, tail: str = ""
) -> str:
    """A noun phrase for the records of ``noun`` matching ``where``: ``inactive users``,
    ``devices in group "G" that are offline``, ``the task with status "open"``. ``tail``
    (a scope such as `` in project "Apollo"``) goes right after the noun."""
    saids = [say(f, v, rng) for f, v in where]
    pre = next((s.pre for s in saids if s.pre), "")
    posts = [s.post_pl if plural_ else s.post_sg for s in saids if not (pre and s.pre == pre)]
    head = (plural(noun) if plural_ else noun) + tail
    return " ".join(x for x in (pre, head, " and ".join(posts)) if x)


def pred(where: list[list[Any]], rng: random.Random, plural_: bool = True) -> str:
    """What matching records *are* or *have*: ``are offline and have status "open"``."""
    saids = [say(f, v, rng) for f, v in where]
    return " and ".join(s.pred_pl if plural_ else s.pred_sg for s in saids)


def ones(where: list[list[Any]], rng: random.Random) -> str:
    """``the offline ones``, ``the ones with status "open"`` (``all of them`` when none)."""
    if not where:
        return "all of them"
    return "the " + np("one", where, rng)


def above(rng: random.Random, num: str, t: Any) -> str:
    """``whose duration is above 72`` (a comparison in words)."""
    return pick(
        rng, [f"whose {num} is above {t}", f"with {num} over {t}", f"whose {num} exceeds {t}"]
    )


def a(noun: str) -> str:
    """``an order``, ``a device``."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def too_long(calls: int, tools: int, repeats: int) -> bool:
    """A loop pretending to be long-horizon: one tool more than :data:`MAX_ITEMS` times
    (:data:`MAX_REPEATS` among three or more tools), or 8+ calls over fewer than three tools."""
    return repeats > (MAX_REPEATS if tools >= 3 else MAX_ITEMS) or (calls >= 8 and tools < 3)


# -- verbs ------------------------------------------------------------------------------------
_IRREGULAR = {
    "set": "set",
    "login": "logged in",
    "logout": "logged out",
    "signin": "signed in",
    "setup": "set up",
    "send": "sent",
    "run": "ran",
    "put": "put",
    "make": "made",
    "build": "built",
    "rebuild": "rebuilt",
    "pay": "paid",
    "write": "wrote",
    "rewrite": "rewrote",
    "upload": "uploaded",
    "forward": "forwarded",
    "cancel": "cancelled",
}
_DOUBLE = {"submit", "commit", "admit", "permit", "omit", "refer", "transfer", "unpin", "unzip"}


def past(verb: str) -> str:
    """``publish`` -> ``published``, ``stop`` -> ``stopped``, ``send`` -> ``sent``."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    cvc = (
        len(verb) >= 3
        and verb[-1] not in "aeiouwxy"
        and verb[-2] in "aeiou"
        and verb[-3] not in "aeiou"
    )
    one_syllable = len(re.findall(r"[aeiou]+", verb)) == 1  # "stop", not "edit" or "visit"
    if verb in _DOUBLE or (cvc and len(verb) <= 4 and one_syllable):
        return verb + verb[-1] + "ed"
    return verb + "ed"


_BOOLS = ("true", "false")
"""How :func:`quote` writes a yes/no value (a string "true" comes quoted)."""


def state(label: str, value: bool) -> str:
    """What a yes/no write makes a record, in words (``public``, ``disabled``, ``no longer
    archived``), or ``""`` when the field is no adjective (``replies``, ``can view``)."""
    words = label.split()
    if words[:1] == ["is"]:
        words = words[1:]
    if len(words) != 1 or not _adjective(words[0]):
        return ""
    word = words[0]
    return word if value else _ANTONYM.get(word) or f"no longer {word}"


class Verbs:
    """The words for one environment's write tools, from their meaning."""

    def __init__(self, model: EnvModel) -> None:
        self.specs = {t.name: t for t in model.spec.tools}
        self._cache: dict[str, Meaning] = {}

    def of(self, tool: ToolModel) -> Meaning:
        if tool.name not in self._cache:
            spec = self.specs.get(tool.name)
            op = {"create": "create", "delete": "delete"}.get(tool.op, "update")
            self._cache[tool.name] = (
                meaning(spec) if spec is not None else Meaning(op, op, "", op == "delete")
            )
        return self._cache[tool.name]

    def word(self, tool: ToolModel, rng: random.Random, kind: str) -> str:
        """The verb a request uses for ``tool`` doing a ``kind`` write (update, create,
        delete): the tool's own verb where it has one, else a plain word of its op."""
        m = self.of(tool)
        if m.op == "action" or (m.op == kind and m.verb not in ("update", "create", "delete")):
            return m.verb or kind
        plain = {"update": ["set", "change"], "create": ["add", "create"]}
        plain["delete"] = ["delete", "remove"]
        if m.op in plain:
            return rng.choice(plain[m.op])
        return kind

    def update(
        self, tool: ToolModel, rng: random.Random, obj: str, fld: str, value: str, noun: str = ""
    ) -> str:
        """A clause setting ``fld`` of ``obj`` to ``value`` (``obj`` may be ``it``/``them``;
        ``noun`` is the records' own noun, not repeated as the action's object)."""
        m = self.of(tool)
        own = {"it": "its", "them": "their"}.get(obj)
        if m.op == "update" or (m.op == "action" and m.verb in ("set", "update")):
            verb = m.verb if m.verb in ("rename",) and "name" in fld else ""
            if verb:
                return f"rename {obj} to {value}"
            made = state(fld, value == "true") if m.op == "update" and value in _BOOLS else ""
            if made:  # "make the rest private", never "set the public of the rest to false"
                return f"make {obj} {made}"
            word = rng.choice(["set", "change"])
            if own:
                return f"{word} {own} {fld} to {value}"
            return f"{word} the {fld} of {obj} to {value}"
        verb = self.word(tool, rng, "update")
        if m.op == "create":
            return f"{verb} {obj} again, this time with {fld} {value}"
        thing = m.noun if m.noun and m.noun not in (noun, obj) and m.noun not in fld else ""
        if not thing:
            return f"{verb} {obj} with {fld} {value}"
        if own:
            return f"{verb} {own} {thing} with {fld} {value}"
        return f"{verb} the {thing} of {obj} with {fld} {value}"

    def done(self, tool: ToolModel, kind: str) -> str:
        """The past tense for "tell me how many you ..." (``published``, ``updated``)."""
        m = self.of(tool)
        if m.op == "action" or (m.op == kind and m.verb not in ("update", "create", "delete")):
            return past(m.verb or kind)
        return {"update": "updated", "create": "added", "delete": "deleted"}.get(m.op, past(kind))

    def delete(self, tool: ToolModel, rng: random.Random, obj: str) -> str:
        return f"{self.word(tool, rng, 'delete')} {obj}"

    def create(self, tool: ToolModel, rng: random.Random, what: str) -> str:
        """``what`` is the thing made with its details (``a note under it with text "x"``)."""
        return f"{self.word(tool, rng, 'create')} {what}"


# -- naming records ---------------------------------------------------------------------------
def id_like(value: Any) -> bool:
    return (isinstance(value, str | int) and not isinstance(value, bool)) and bool(
        _ID_SHAPE.fullmatch(str(value))
    )


@dataclass
class Ref:
    """How a request names some records, and the list calls the program makes first to find
    their keys the way the agent would (by that name)."""

    text: str
    listers: list[ToolModel] = field(default_factory=list)

    def find(self, caller: Caller) -> None:
        for tool in self.listers:
            caller.list_all(tool, {})


def name_field(caps: Caps, records: list[dict[str, Any]]) -> str | None:
    """A label field that names ``records`` for someone browsing the collection: the
    collection lists completely, the field shows in the listing, and its values are
    distinct, present and not shaped like ids."""
    coll, tool = caps.coll, caps.lister
    if tool is None or not records:
        return None
    fields = coll.profile.names  # a unique "kind" or timestamp is no name people use
    for lf in fields:
        if lf in tool.hidden or lf == coll.pk:
            continue
        values = [r.get(lf) for r in records]
        if not all(isinstance(x, str) and x.strip() and not id_like(x) for x in values):
            continue
        if len({str(x).casefold() for x in values}) < len(values):
            continue
        if caps.visibility.complete(tool, {}, coll, coll.records):
            return lf
        return None
    return None


def refer(
    caps: Caps,
    records: list[dict[str, Any]],
    tool: ToolModel | None = None,
    all_caps: dict[str, Caps] | None = None,
) -> Ref:
    """``records`` as a request names them: by their label when people could find them by it
    (the program then lists the collection first), else by key with the parents ``tool``
    (the getter by default) needs — a parent by its own label where it has one."""
    lf = name_field(caps, records)
    if lf is not None:
        return Ref(series([quote(r.get(lf)) for r in records]), [caps.lister])
    scopes = _scopes(tool or caps.getter)
    listers: list[ToolModel] = []
    parts: list[tuple[str, str]] = []
    for r in records:
        where = []
        for fld, pref in scopes:
            text, lister = parent_name(all_caps or {}, pref, r.get(fld))
            where.append(f"{scope_label(fld)} {text}")
            if lister is not None and lister not in listers:
                listers.append(lister)
        parts.append((quote(r.get(caps.coll.pk)), ", ".join(where)))
    return Ref(keyed(parts), listers)


def refer_some(
    caps: Caps,
    records: list[dict[str, Any]],
    tool: ToolModel | None = None,
    all_caps: dict[str, Caps] | None = None,
) -> tuple[list[dict[str, Any]], Ref]:
    """:func:`refer`, keeping at most :data:`MAX_IDS` records where they go by raw key
    (a long list of ids is no request a person writes)."""
    ref = refer(caps, records, tool, all_caps)
    if not ref.listers or name_field(caps, records) is None:
        if len(records) > MAX_IDS:
            records = records[:MAX_IDS]
            ref = refer(caps, records, tool, all_caps)
    return records, ref


def scope_noun(model: EnvModel, tool: ToolModel, arg: str, fld: str, pref: str | None) -> str:
    """What the parent a scope argument takes is called: its collection's noun, else the
    resource the tool's name puts above (a Google-style ``parent``), else the field."""
    parent = model.collections.get(pref or "")
    if parent is not None:
        return parent.noun
    p = tool.params.get(arg)
    return (p.noun if p is not None else None) or scope_label(fld)


def scope_label(fld: str) -> str:
    """A parent field as the parent it names: ``username`` -> ``user`` ("the feeds of user
    "drichardson"", not "in username"), ``owner_login`` -> ``owner``."""
    w = label_of(fld).split()
    if w in (["username"], ["user", "name"], ["login"], ["user", "login"], ["handle"]):
        return "user"
    if len(w) > 1 and w[-1] in ("name", "username", "login", "slug", "handle", "sid"):
        return " ".join(w[:-1])
    return " ".join(w)


def parent_name(
    all_caps: dict[str, Caps], pref: str | None, key: Any
) -> tuple[str, ToolModel | None]:
    """A parent record as a request names it: its label (and the list tool to find it by)
    when it has one people could browse for, else its key."""
    pcaps = all_caps.get(pref or "")
    if pcaps is not None and scalar(key):
        rec = next((p for p in pcaps.coll.records if str(p.get(pcaps.coll.pk)) == str(key)), None)
        lf = name_field(pcaps, [rec]) if rec is not None else None
        if lf is not None and rec is not None:
            return quote(rec.get(lf)), pcaps.lister
    return quote(key), None


def _scopes(tool: ToolModel | None) -> list[tuple[str, str | None]]:
    params = tool.params.values() if tool is not None else []
    return [(p.field, p.ref) for p in params if p.role == "scope" and p.required and p.field]


def scope_ref(
    model: EnvModel, all_caps: dict[str, Caps], caps: Caps, tool: ToolModel, where: list[list[Any]]
) -> Ref:
    """The scope of a scoped listing in words (`` in project "Apollo"``): each parent by its
    label where people could find it by that (listing the parents first), else by key."""
    req = next((r for t, r in caps.scoped if t is tool), None)
    if not req or not where:
        return Ref("")
    values = {f: v for f, v in where}
    phrases, listers = [], []
    for arg, fld, pref in req:
        noun = scope_noun(model, tool, arg, fld, pref)
        text, lister = parent_name(all_caps, pref, values.get(fld))
        phrases.append(f"{noun} {text}")
        if lister is not None and lister not in listers:
            listers.append(lister)
    return Ref(" in " + " and ".join(phrases), listers)
