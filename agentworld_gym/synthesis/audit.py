"""The catalog's task-quality bars (issue: goal-stated tasks in coherent worlds), measured.

Each bar is a small pure function over one task (its request, gold chain and difficulty) and
what the audit knows of its environment (:class:`EnvFacts`); :func:`audit` runs them over a
catalog root and returns :class:`Bar` rows with the measured value, the target, PASS/FAIL and
a few offending task ids. Only ``env.json``, ``tasks.json`` and the ``db/`` files the checks
need are read; only a long task whose chaining the seed records cannot show is replayed.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.semantics import Meaning, meaning
from agentworld_gym.synthesis.fields import is_slogan
from agentworld_gym.synthesis.words import prose_words
from agentworld_gym.verifiers.checks import leaves

# -- request text ----------------------------------------------------------------------------

_NUMBERED = re.compile(r"(?m)^\s*\d{1,2}[.)]\s+\S")
_PLACEHOLDER = re.compile(r"(?<![\w@./:+-])[A-Z][a-z]+ [a-z]+ \d{3}(?![\w@./:+-])")
QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|(?<![\w'])'[^'\n]+'(?![\w'])")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w.])")
_SENTENCE = re.compile(
    r"\n+|(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bJr\.)(?<!\bSr\.)(?<!\bMrs\.)"
    r"(?<=[.!?])\s+(?=[A-Z0-9\"])"
)
_WORD = re.compile(r"[a-z]+")


def numbered_steps(request: str) -> bool:
    """Whether the request is a numbered step list: two or more lines opening ``1.`` / ``2)``.

    >>> numbered_steps("Do this:\\n1. List the orders.\\n2. Update the first one.")
    True
    """
    return len(_NUMBERED.findall(request)) >= 2


def placeholder_values(request: str) -> list[str]:
    """Values shaped ``<Adjective> <noun> NNN`` ("Golden lagoon 951"): a capitalised word, a
    lower-case word and three digits, standing alone (not part of an enum such as
    ``HMAC_SHA256``, an id such as ``fil_bfceffe861``, a slug, an email or a URL)."""
    return _PLACEHOLDER.findall(request)


def opening(request: str, api_name: str = "") -> str:
    """The request's first 8 words, lower-cased, with the API's name, quoted values and
    numbers masked (``API``, ``Q``, ``N``): requests written from one template share it."""
    text = request
    if api_name:
        text = text.replace(api_name, "API")
    text = _NUMBER.sub("N", QUOTED.sub("Q", text))
    return " ".join(text.lower().split()[:8])


def top_openings_share(openings: list[str], k: int = 4) -> float:
    """The share of requests whose opening is one of the ``k`` most common."""
    if not openings:
        return 0.0
    return sum(n for _, n in Counter(openings).most_common(k)) / len(openings)


# -- verbs -----------------------------------------------------------------------------------

UPDATE_WORDS = {"update", "set", "change", "edit", "modify", "rename", "replace", "adjust"}
CREATE_WORDS = {"create", "add", "new", "register", "upload", "book", "issue", "insert"}
CREATE_WORDS |= {"make", "open", "generate", "submit", "post", "import", "record", "log"}
CREATE_WORDS |= {"leave", "append", "write"}
DELETE_WORDS = {"delete", "remove", "erase", "destroy", "purge", "drop", "clear", "discard"}
READ_WORDS = {"check", "look", "find", "list", "get", "show", "tell", "count", "search", "see"}
READ_WORDS |= {"review", "view", "fetch", "read", "go", "finish"}


def _forms(verb: str) -> set[str]:
    """Inflections of ``verb`` (``cancel`` -> cancels, cancelled, canceled, cancelling...)."""
    out = {verb, verb + "s", verb + "es", verb + "ed", verb + "d", verb + "ing"}
    out |= {verb + verb[-1] + "ed", verb + verb[-1] + "ing"}
    if verb.endswith("e"):
        out |= {verb[:-1] + "ing", verb[:-1] + "ion", verb[:-1] + "ation"}
    if verb.endswith("y"):
        out |= {verb[:-1] + "ies", verb[:-1] + "ied"}
    out |= {verb + "ation", verb + "lation", verb + "ion"}
    return out


def _has(words: set[str], verbs: Iterable[str]) -> bool:
    return any(words & _forms(v) for v in verbs)


def sentence_verbs(sentence: str) -> set[str]:
    """The write verbs a sentence uses (lemmas from the update, create and delete word sets
    and the action verbs of :mod:`agentworld_gym.semantics`), quoted values left out."""
    from agentworld_gym.semantics import _ACTION

    tokens = _WORD.findall(QUOTED.sub(" ", sentence).lower())
    words = {  # "the pinned topic", "a shipping address": a participle as an adjective
        w
        for i, w in enumerate(tokens)
        if not (w.endswith(("ed", "ing")) and i and tokens[i - 1] in _DETERMINERS)
    }
    verbs = (UPDATE_WORDS | CREATE_WORDS | DELETE_WORDS | _ACTION) - READ_WORDS
    return {v for v in verbs if words & _forms(v)}


_DETERMINERS = {"the", "a", "an", "its", "their", "each", "every", "this", "that", "these"}
_DETERMINERS |= {"those", "any", "all", "no", "some", "my", "our", "your"}


def worded_as(sentence: str, m: Meaning) -> bool | None:
    """Whether a sentence words a write the way its tool's meaning ``m`` says: ``None`` when
    the sentence uses no write verb at all (nothing to judge), else ``True`` when it uses the
    tool's own verb or one of its op's words (an update may also be worded as an add, a
    delete as any destructive verb) and ``False`` otherwise: "Update ... set reason" solved
    by ``CancelOrder`` (an action ``cancel``) or by a create, "remove" for a ``start``."""
    used = sentence_verbs(sentence)
    if not used:
        return None
    words = set(_WORD.findall(QUOTED.sub(" ", sentence).lower()))
    if _has(words, [m.verb]):
        return True
    if m.op == "create":
        return bool(used & CREATE_WORDS)
    if m.op == "update":
        return bool(used & (UPDATE_WORDS | CREATE_WORDS))
    if m.op == "delete":
        from agentworld_gym.semantics import _DESTRUCTIVE

        return bool(used & (DELETE_WORDS | _DESTRUCTIVE))
    return False


# -- the environment as the checks see it ------------------------------------------------------


NAME_FIELDS = {"name", "title", "label", "displayname", "fullname", "firstname", "lastname"}
NAME_FIELDS |= {"username", "email", "subject", "handle", "nickname", "headline"}


def _name_like(field_name: str) -> bool:
    low = field_name.lower().replace("_", "").replace("-", "")
    return low in NAME_FIELDS or (low.endswith("name") and low not in ("hostname", "pathname"))


_ID_SHAPE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # uuid
    r"|[A-Za-z]{1,8}_[0-9A-Za-z]{6,}"  # prefixed: ord_938d63d9e9
    r"|(?=[0-9A-Za-z]*\d)(?=[0-9A-Za-z]*[A-Za-z])[0-9A-Za-z]{8,}"  # mixed: a1b2c3d4e5
    r"|\d{1,12}",  # numeric
    re.I,
)


def id_shaped(value: Any) -> bool:
    """Whether a key value looks like an internal id (a uuid, ``ord_938d63d9e9``, a long
    letter-digit run, a number), not like a name, email, URL or date people would use."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return False
    return bool(_ID_SHAPE.fullmatch(str(value)))


@dataclass
class EnvFacts:
    """What the checks need of one environment: each tool's meaning and addressing arguments,
    which collections a list/search tool offers, the turn budget, and its records (read on
    demand)."""

    id: str
    name: str
    max_turns: int
    meanings: dict[str, Meaning]
    kinds: dict[str, str]
    runtime: dict[str, tuple[str, str]]
    """tool -> (runtime op, collection)"""
    addressing: dict[str, dict[str, str]]
    """tool -> {argument: collection} for its key and parent arguments"""
    listable: set[str]
    folder: Path | None = None
    records: dict[str, Any] = field(default_factory=dict)
    runner: Any = None
    """A :class:`~agentworld_gym.synthesis.tasks.runner.Runner`, made on first replay."""

    def collection(self, name: str) -> Any:
        """The seed records of a collection (``[]`` when there is no such file)."""
        if name not in self.records:
            path = self.folder / "db" / f"{name}.json" if self.folder else None
            self.records[name] = orjson.loads(path.read_bytes()) if path and path.is_file() else []
        return self.records[name]

    def findable(self, collection: str) -> bool:
        """Whether people could find a record of ``collection`` without its id: a list or
        search tool covers it and its records carry a non-empty name-like field."""
        if collection not in self.listable:
            return False
        records = self.collection(collection)
        for record in records[:5] if isinstance(records, list) else []:
            if isinstance(record, dict) and any(
                _name_like(k) and isinstance(v, str) and v.strip() for k, v in record.items()
            ):
                return True
        return False


def env_facts(env: dict[str, Any], folder: Path | None = None) -> EnvFacts:
    """:class:`EnvFacts` of one ``env.json`` document."""
    meanings: dict[str, Meaning] = {}
    kinds: dict[str, str] = {}
    runtime: dict[str, tuple[str, str]] = {}
    addressing: dict[str, dict[str, str]] = {}
    listable: set[str] = set()
    for tool in env.get("tools", []):
        impl = tool.get("implementation") or {}
        name, coll, op = tool["name"], str(impl.get("collection") or ""), str(impl.get("op") or "")
        meanings[name] = meaning(tool)
        kinds[name] = tool.get("kind", "read")
        runtime[name] = (op, coll)
        args: dict[str, str] = {}
        if isinstance(impl.get("key"), str):
            args[impl["key"]] = coll
        for parent in impl.get("parents") or []:
            if parent.get("arg"):
                args[parent["arg"]] = parent.get("collection") or ""
        addressing[name] = args
        if op in ("list", "search") and coll:
            listable.add(coll)
    runtime_spec = env.get("runtime") or {}
    return EnvFacts(
        id=env["id"],
        name=env.get("name", ""),
        max_turns=int(runtime_spec.get("max_turns", 30)),
        meanings=meanings,
        kinds=kinds,
        runtime=runtime,
        addressing=addressing,
        listable=listable,
        folder=folder,
    )


# -- per-task checks -------------------------------------------------------------------------


def _calls(task: dict[str, Any]) -> list[dict[str, Any]]:
    return list(((task.get("gold") or {}).get("calls")) or [])


def _literal_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if not value.startswith("$"):
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _literal_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _literal_strings(v)


def _said(value: Any) -> Iterator[str]:
    """A written value as a request says it: its strings, numbers, and booleans as words
    ("set its write enabled to false")."""
    if isinstance(value, bool):
        yield "true" if value else "false"
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, dict | list):  # a nested body ("constraints": {"maxRetries": 5})
        for v in value.values() if isinstance(value, dict) else value:
            yield from _said(v)
    else:
        yield from _literal_strings(value)


def names_findable_id(task: dict[str, Any], env: EnvFacts) -> list[str]:
    """The internal ids the request names where people could name the record otherwise.

    Counts a gold call's literal key or parent argument that is id-shaped (:func:`id_shaped`)
    and appears in the request as a whole token, when its collection is
    :meth:`EnvFacts.findable` (listable, with a name-like field)."""
    request = task.get("instruction", "")
    found: list[str] = []
    for call in _calls(task):
        args = call.get("arguments") or {}
        for arg, coll in env.addressing.get(call.get("name", ""), {}).items():
            value = args.get(arg)
            if isinstance(value, str) and value.startswith("$"):
                continue
            if not id_shaped(value) or str(value) in found:
                continue
            pattern = rf"(?<![\w-]){re.escape(str(value))}(?![\w-])"
            if re.search(pattern, request) and env.findable(coll):
                found.append(str(value))
    return found


def write_sentences(
    request: str, call: dict[str, Any], addressing: frozenset[str] = frozenset()
) -> list[str]:
    """The request sentences that may name a write: those with a write verb that hold one
    of the values it writes (:func:`_names`), else (when none does) one of its keys (3+
    characters). Other
    sentences may name the same record: "tell me its completed at", "delete it"."""
    args = call.get("arguments") or {}
    body = [v for k, a in args.items() if k not in addressing for v in _said(a)]
    keys = [v for v in _literal_strings(args) if v not in body]
    sentences = [s for s in split_sentences(request) if s.strip() and sentence_verbs(s)]
    found = [s for s in sentences if any(_names(s, v) for v in body)]
    if found:
        return found
    # only keys: several sentences may name the record; judged when exactly one does
    found = [s for s in sentences if any(v in s for v in keys if len(v) >= 3)]
    return found if len(found) == 1 else []


def _names(sentence: str, value: str) -> bool:
    """Whether ``sentence`` holds ``value``: text of 3+ characters anywhere, a shorter number
    as a word of its own ("with quantity 20"), any value quoted ("with node count "8"")."""
    if len(value) >= 3 or f'"{value}"' in sentence:
        return value in sentence
    return (
        len(value) == 2
        and re.search(rf"(?<![\w.]){re.escape(value)}(?!\w|\.\d)", sentence) is not None
    )


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences, never inside a quoted value ("Apt. 577", "v1. Beta")."""
    masked = QUOTED.sub(lambda q: "\0" * len(q.group(0)), text)
    out, start = [], 0
    for m in _SENTENCE.finditer(masked):
        out.append(text[start : m.start()])
        start = m.end()
    out.append(text[start:])
    return out


_JOINER = re.compile(r";\s+|,?\s+(?:and|then|also)\s+|,\s+")
_SKIP = {"and", "then", "also", "please", "just", "finally", "after"}
_OBJECT = {"the", "a", "an", "it", "its", "them", "their", "each", "every", "all", "that"}
_OBJECT |= {"this", "those", "these", "me", "on", "to", "one", "any", "off", "up", "\0"}
"""What follows a verb that opens a clause ("and set its ...", "comment 'OK' on it"), unlike
a field name that starts with a verb word ("and sync parallel level ...")."""


@functools.cache
def _verb_words() -> frozenset[str]:
    """Every form of every verb the checks know (where a clause may begin)."""
    from agentworld_gym.semantics import _ACTION

    verbs = UPDATE_WORDS | CREATE_WORDS | DELETE_WORDS | READ_WORDS | _ACTION
    verbs |= {"tell", "comment", "tick", "mark", "leave", "note", "reassign", "make"}
    return frozenset(f for v in verbs for f in _forms(v))


def clauses(sentence: str) -> list[str]:
    """A sentence cut where a new verb begins a clause ("set it to Done and comment 'OK' on
    it" -> two); a comma or "and" inside a list of values ("named "A", "B" and "C"") or a
    field name cuts nothing. Quoted values are never cut."""
    masked = QUOTED.sub(lambda q: "\0" * len(q.group(0)), sentence)
    out, start = [], 0
    for m in _JOINER.finditer(masked):
        head = re.findall(r"[a-z]+|\0", masked[m.end() : m.end() + 60].lower())
        head = [w for w in head if w not in _SKIP][:2]
        verb = len(head) == 2 and head[0] in _verb_words() and head[1] in _OBJECT
        if m.group(0).strip() == ";" or verb:
            out.append(sentence[start : m.start()])
            start = m.end()
    out.append(sentence[start:])
    return [c for c in out if c.strip()]


def _write_clause(sentence: str, call: dict[str, Any]) -> str:
    """The clause of a sentence that names a call's values ("..., and comment 'Approved' on
    it" for the comment, not the "set it to Done" before it); the whole sentence when its
    clauses share the values or the naming clause carries no write verb of its own."""
    values = [v for v in _literal_strings(call.get("arguments") or {}) if len(v) >= 3]
    parts = clauses(sentence)
    hits = [c for c in parts if any(v in c for v in values)]
    if len(hits) == 1 and len(parts) > 1:
        return hits[0] if sentence_verbs(hits[0]) else ""
    return sentence


def verb_mismatches(task: dict[str, Any], env: EnvFacts) -> list[str]:
    """Writes their request words by another verb than their tool's meaning, as ``"<tool>:
    <clause>"``: every sentence that may name the write (:func:`write_sentences`) is worded
    otherwise (:func:`worded_as` is ``False`` for the clause naming its values, and for the
    sentence too when the clause's only "verb" is a noun: "the logging configurations ...
    and delete those"). A write no sentence names, or named without a write verb, is not
    judged."""
    out = []
    request = task.get("instruction", "")
    for call in _calls(task):
        name = call.get("name", "")
        if env.kinds.get(name) != "write" or name not in env.meanings:
            continue
        m = env.meanings[name]
        wrong = []
        for sentence in write_sentences(request, call, frozenset(env.addressing.get(name, {}))):
            clause = _write_clause(sentence, call)
            verdict = worded_as(clause, m)
            if verdict is not True and worded_as(sentence, m) is True:
                verdict = True  # the sentence says it ("upload 3 files ...; their names are")
            if verdict is True:
                wrong = []
                break
            if verdict is False:
                wrong.append(clause)
        if wrong:
            out.append(f"{name}: {wrong[0].strip()[:160]}")
    return out


def _leaves(value: Any) -> Iterator[str]:
    """Every non-null, non-boolean scalar as text (the values a request could quote)."""
    return (str(v) for v in leaves(value) if not isinstance(v, bool))


def _read_values(call: dict[str, Any], env: EnvFacts) -> set[str]:
    """Values a read call's output holds, from the seed records: the record it gets, or every
    record of the collection it lists or searches."""
    op, coll = env.runtime.get(call.get("name", ""), ("", ""))
    if op not in ("get", "list", "search") or not coll:
        return set()
    records = env.collection(coll)
    if isinstance(records, dict):
        return set(_leaves(records))
    if op == "get":
        keys = {str(v) for v in _literal_strings(call.get("arguments") or {})}
        keys |= {str(v) for v in (call.get("arguments") or {}).values() if isinstance(v, int)}
        hits = [r for r in records if isinstance(r, dict) and keys & set(map(str, r.values()))]
        return set(_leaves(hits))
    return set(_leaves(records))


def chained(task: dict[str, Any], env: EnvFacts) -> bool:
    """Whether every step after the first depends on an earlier one: an argument references
    an earlier output (``"$<step>..."``), or one of its literal string arguments (3+
    characters) is a value an earlier call read (its record's or listing's seed values) or
    passed (the same record addressed again)."""
    calls = _calls(task)
    seen: set[str] = set()
    for i, call in enumerate(calls):
        args = call.get("arguments") or {}
        strings = list(_literal_strings(args))
        for arg in env.addressing.get(call.get("name", ""), {}):
            if isinstance(args.get(arg), int) and not isinstance(args.get(arg), bool):
                strings.append(str(args[arg]))
        if i > 0:
            refs = any(isinstance(v, str) and v.startswith("$") for v in _leaves(args))
            if not refs and not any(len(s) >= 3 and s in seen for s in strings):
                return False
        seen |= {s for s in strings if not s.startswith("$")}
        seen |= _read_values(call, env)
    return True


def replayed_chained(task: dict[str, Any], env: EnvFacts, folder: Path) -> bool:
    """:func:`chained` judged on what the gold calls really return: the chain is replayed
    through the runtime agents use (code tools' outputs are not in the seed records), and
    every call after the first must take a value an earlier call returned or passed
    (:func:`agentworld_gym.synthesis.tasks.candidate.chained`, the rule synthesis applies)."""
    from agentworld_gym.synthesis.tasks.candidate import chained as chained_by_outputs

    calls = _calls(task)
    if env.runner is None:
        from agentworld_gym.spec import EnvSpec
        from agentworld_gym.synthesis.tasks.runner import Runner

        env.runner = Runner(EnvSpec.load(folder))
    run = env.runner.run(calls, task.get("id", "audit"))
    keys = {(tool, arg) for tool, args in env.addressing.items() for arg in args}
    goal = task.get("instruction", "")
    return bool(run.ok) and chained_by_outputs(calls, run.outputs, keys, goal)


def spare_turns(task: dict[str, Any], env: EnvFacts) -> bool:
    """Whether the turn budget leaves room to recover: ``max_turns >= 1.5 * (gold calls + 1)``
    (the ``+ 1`` is the final answer)."""
    budget = int((task.get("difficulty") or {}).get("max_turns") or env.max_turns)
    return budget >= 1.5 * (len(_calls(task)) + 1)


# -- readability: the defects a blind reader found ------------------------------------------

_POSITIONAL = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))"
    r" [\w ]{1,40}? (?:in the [\w ]{1,40}? list|listed)\b",
    re.I,
)
_RAW_FIELD = re.compile(
    r"\b(?:its|the|whose|is) (?:is|has) [a-z]+\b|\bis [a-z]+ is (?:true|false)\b"
    r"|\b(?:with|and) (?:is|has) [a-z]+ (?:true|false)\b"
)


def positional(request: str) -> bool:
    """Whether the request picks a record by its place in a listing ("the third account in
    the account list"): ambiguous unless the order is stated."""
    return bool(_POSITIONAL.search(QUOTED.sub("Q", request)))


def raw_field_words(request: str) -> bool:
    """Whether a field's identifier shows through as words ("its is active", "whose is
    global master is false")."""
    return bool(_RAW_FIELD.search(QUOTED.sub("Q", request)))


def deep_relation(request: str, depth: int = 3) -> bool:
    """Whether a sentence names a record through ``depth`` or more "of the" relations ("the
    extra in the rvs of the media of the ... of the ...")."""
    return any(s.count(" of the ") >= depth for s in split_sentences(QUOTED.sub("Q", request)))


def unknown_words(request: str, extra: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Words outside quoted values that a reader would not know: a noun or field label
    made from an identifier ("the dnse list", "its bylatlong"); see
    :mod:`agentworld_gym.synthesis.words`."""
    from agentworld_gym.synthesis.words import unknown

    return unknown(QUOTED.sub(" ", request), extra)


MAX_IDS = 3
_RANDOM_TOKEN = re.compile(r"(?=[^a-z]*[a-z])(?=[^A-Z]*[A-Z])(?=\D*\d)[A-Za-z0-9]{16,}")
"""``2d996O7BT6Bld0DMe3jiynSQBYE1DaYz``: a secret or client token no user types into a
request (a password or token the task needs makes it a task no user would write)."""
"""Id-shaped values a request may quote: a list of uuids is what a program reads, not what a
person writes."""
_OP_WORDS = r"(?:put|get|post|patch|create|update|delete|list|set|start|stop|add|remove)"
_VERB_NOUN = re.compile(
    rf"\b(\w+) (?:these|the following|all|every|each|one|\d+|a|an|the) (?:new )?\1(?:e?s)?\b"
    rf"|\b{_OP_WORDS} (?:these|the following|\d+|a|an) {_OP_WORDS}\b",
    re.I,
)


_DATED_RECORD = re.compile(
    r"\b(?!(?:date|time|at|on|until|before|after|since|by|to|from|timestamp|deadline|expiry|"
    r"and|or|between|of|is|was|were)\b)[a-z]+,? \"\d{4}-\d\d-\d\dT[^\"]*\""
)
"""A record named by a quoted timestamp ("the images "2023-02-11T20:22:56Z""): a key no
person uses (a date as a value written or compared is fine)."""
_REPEAT = re.compile(r"\b([a-z]{2,}) \1\b", re.I)


def quoted(request: str) -> list[str]:
    """The values ``request`` quotes, without their quotes."""
    return [q.strip("\"'“”") for q in QUOTED.findall(request)]


def quoted_ids(request: str) -> int:
    """How many quoted values look like internal ids (uuids, ``ord_938d63d9e9``, ...; bare
    numbers aside)."""
    return sum(1 for q in quoted(request) if id_shaped(q) and not q.isdigit())


def unreadable(request: str, extra: frozenset[str] | set[str] = frozenset()) -> str | None:
    """Why a reader would stumble on ``request`` (``None`` when they would not): the
    readability rows below, one reason. Task synthesis refuses such a candidate."""
    masked = QUOTED.sub("Q", request)
    values = quoted(request)
    if any(map(is_slogan, values)):
        return "a slogan as a value"
    if quoted_ids(request) > MAX_IDS:
        return "more than three ids"
    if any(map(_RANDOM_TOKEN.fullmatch, values)):
        return "a random token as a value"
    if _REPEAT.search(masked):
        return "a word written twice in a row"
    if _VERB_NOUN.search(masked):
        return "an operation name as the noun"
    if _DATED_RECORD.search(request):
        return "a record named by a timestamp"
    if "again, this time with" in masked:
        return "a write worded as a second create"
    if positional(request):
        return "record picked by its place in a list"
    if raw_field_words(request):
        return "field identifier as words"
    if deep_relation(request):
        return "relation 3+ deep"
    if bad := unknown_words(request, extra):
        return f"unknown word {bad[0]!r}"
    return None


def overwritten_writes(task: dict[str, Any], env: EnvFacts) -> bool:
    """Whether the gold chain writes one field of one record twice (the first write is
    undone by the second: a request that says so reads as two unrelated asks)."""
    seen: set[tuple[str, str, str]] = set()
    for call in _calls(task):
        name = call.get("name", "")
        meant = env.meanings.get(name)
        if env.kinds.get(name) != "write" or meant is None or meant.op != "update":
            continue  # two creates under one parent make two records
        args = call.get("arguments") or {}
        keys = env.addressing.get(name, {})
        if not keys:
            continue
        record = orjson.dumps({k: args.get(k) for k in sorted(keys)}).decode()
        for arg in args:
            if arg in keys:
                continue
            mark = (env.runtime.get(name, ("", name))[1] or name, record, arg)
            if mark in seen:
                return True
            seen.add(mark)
    return False


# -- the catalog -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    """One measured bar: ``value`` against ``target`` (``op`` is ``<=`` or ``>=``)."""

    name: str
    value: float
    target: float
    op: str
    unit: str = "%"
    count: str = ""
    examples: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.value <= self.target if self.op == "<=" else self.value >= self.target

    def shown(self, x: float) -> str:
        return f"{100 * x:.2f}%" if self.unit == "%" else f"{x:,.2f}".rstrip("0").rstrip(".")

    def to_dict(self) -> dict[str, Any]:
        return {
            "bar": self.name,
            "value": self.value,
            "target": f"{self.op} {self.shown(self.target)}",
            "count": self.count,
            "passed": self.passed,
            "examples": list(self.examples),
        }


@dataclass
class Tally:
    """Per-task results summed over environments (merged across worker processes)."""

    tasks: int = 0
    numbered: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    mismatched_steps: int = 0
    openings: list[str] = field(default_factory=list)
    opening_ids: dict[str, str] = field(default_factory=dict)
    long: int = 0
    long_tools: int = 0
    unchained: list[str] = field(default_factory=list)
    tight: list[str] = field(default_factory=list)
    mismatch_text: list[str] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)
    raw_fields: list[str] = field(default_factory=list)
    deep: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)
    stumbles: list[str] = field(default_factory=list)
    """Tasks whose request synthesis's readability rules (:func:`unreadable`) refuse."""

    def merge(self, other: Tally) -> None:
        for name, value in vars(other).items():
            mine = getattr(self, name)
            if isinstance(value, dict):
                for k, v in value.items():
                    mine.setdefault(k, v)
            else:
                setattr(self, name, mine + value)


def audit_env(folder: Path) -> Tally:
    """The bars' per-task results for one environment folder."""
    doc = orjson.loads((folder / "env.json").read_bytes())
    env = env_facts(doc, folder)
    prose = prose_words(doc)
    tasks_file = folder / "tasks.json"
    tasks = orjson.loads(tasks_file.read_bytes()) if tasks_file.is_file() else []
    t = Tally(tasks=len(tasks))
    for task in tasks:
        tid, request = task["id"], task.get("instruction", "")
        if numbered_steps(request):
            t.numbered.append(tid)
        if names_findable_id(task, env):
            t.ids.append(tid)
        if placeholder_values(request):
            t.placeholders.append(tid)
        bad = verb_mismatches(task, env)
        if bad:
            t.mismatched.append(tid)
            t.mismatched_steps += len(bad)
            t.mismatch_text.append(f"{tid}: {bad[0]}")
        for ids, hit in (
            (t.positional, positional(request)),
            (t.raw_fields, raw_field_words(request)),
            (t.deep, deep_relation(request)),
            (t.overwritten, overwritten_writes(task, env)),
            (t.stumbles, task.get("kind") != "manual" and unreadable(request, prose)),
        ):
            if hit:
                ids.append(tid)
        head = opening(request, env.name)
        t.openings.append(head)
        t.opening_ids.setdefault(head, tid)
        if (task.get("difficulty") or {}).get("long_horizon"):
            t.long += 1
            t.long_tools += len({c.get("name") for c in _calls(task)})
            if not chained(task, env) and not replayed_chained(task, env, folder):
                t.unchained.append(tid)
            if not spare_turns(task, env):
                t.tight.append(tid)
    return t


def tally(root: Path, workers: int = 1, only: Iterable[str] = ()) -> Tally:
    """Every environment under ``root`` (or those in ``only``), in ``workers`` processes."""
    from agentworld_gym.synthesis.tasks.catalog import env_folders

    folders = env_folders(root, only)
    total = Tally()
    if workers > 1 and len(folders) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            for part in pool.map(audit_env, folders, chunksize=16):
                total.merge(part)
    else:
        for folder in folders:
            total.merge(audit_env(folder))
    return total


def readability(t: Tally, examples: int = 5) -> list[Bar]:
    """The defects a blind read of 40 tasks found most (no target is set: they are
    measured so that work on them shows): records picked by list position, field
    identifiers as words, relations 3+ deep, a field written twice, and every rule of
    :func:`unreadable` (task synthesis refuses such requests except where an environment
    would otherwise fall under its floor of tasks)."""
    n = max(t.tasks, 1)
    return [
        Bar(
            name, len(ids) / n, 0.0, "<=", "%", f"{len(ids):,} / {t.tasks:,}", tuple(ids[:examples])
        )
        for name, ids in (
            ("record picked by list position", t.positional),
            ("field identifier as words", t.raw_fields),
            ("relation 3+ deep", t.deep),
            ("same field written twice", t.overwritten),
            ("refused by synthesis's readability rules", t.stumbles),
        )
    ]


def bars(t: Tally, examples: int = 5) -> list[Bar]:
    """The issue's bars from a :class:`Tally`."""
    n, long = max(t.tasks, 1), max(t.long, 1)

    def share(ids: list[str], of: int, total: int) -> tuple[float, str]:
        return len(ids) / of, f"{len(ids):,} / {total:,}"

    rows = []
    for name, ids, target in (
        ("numbered-step requests", t.numbered, 0.02),
        ("findable internal id named", t.ids, 0.10),
        ("placeholder-shaped values", t.placeholders, 0.0),
        ("verb/tool mismatches", t.mismatched, 0.0),
    ):
        value, count = share(ids, n, t.tasks)
        shown = t.mismatch_text if ids is t.mismatched else ids
        rows.append(Bar(name, value, target, "<=", "%", count, tuple(shown[:examples])))
    top = Counter(t.openings).most_common(4)
    rows.append(
        Bar(
            "4 top 8-word openings",
            top_openings_share(t.openings),
            0.08,
            "<=",
            "%",
            f"{sum(c for _, c in top):,} / {t.tasks:,}",
            tuple(f"{t.opening_ids[o]}: {o!r} x{c}" for o, c in top),
        )
    )
    rows.append(Bar("long-horizon tasks", t.long, 1000, ">=", "", f"{t.long:,}"))
    rows.append(Bar("long-horizon mean distinct tools", t.long_tools / long, 3.5, ">=", ""))
    value, count = share(t.unchained, long, t.long)
    rows.append(
        Bar(
            "long-horizon tasks chained",
            1 - value,
            1.0,
            ">=",
            "%",
            f"{t.long - len(t.unchained):,} / {t.long:,}",
            tuple(t.unchained[:examples]),
        )
    )
    value, count = share(t.tight, long, t.long)
    rows.append(
        Bar(
            "long-horizon turns >= 1.5x(calls+1)",
            1 - value,
            1.0,
            ">=",
            "%",
            f"{t.long - len(t.tight):,} / {t.long:,}",
            tuple(t.tight[:examples]),
        )
    )
    return rows


def format_table(rows: list[Bar]) -> str:
    """The bars as a plain-text table, then a few offending task ids per failing bar."""
    head = f"{'bar':38} {'value':>10} {'count':>17} {'target':>10}  result"
    lines = [head, "-" * len(head)]
    for r in rows:
        target = f"{r.op} {r.shown(r.target)}"
        result = "PASS" if r.passed else "FAIL"
        lines.append(f"{r.name:38} {r.shown(r.value):>10} {r.count:>17} {target:>10}  {result}")
    for r in rows:
        if not r.passed and r.examples:
            lines.append(f"\n{r.name} (examples):")
            lines.extend(f"  {e}" for e in r.examples)
    return "\n".join(lines)


def semantics_split(root: Path, only: Iterable[str] = ()) -> dict[str, Any]:
    """How the catalog's tools classify: tools per op, destructive ones, the commonest action
    verbs (see :mod:`agentworld_gym.semantics`)."""
    from agentworld_gym.synthesis.tasks.catalog import env_folders

    ops: Counter[str] = Counter()
    verbs: Counter[str] = Counter()
    destructive = 0
    for folder in env_folders(root, only):
        for tool in orjson.loads((folder / "env.json").read_bytes()).get("tools", []):
            m = meaning(tool)
            ops[m.op] += 1
            destructive += m.destructive
            if m.op == "action":
                verbs[m.verb] += 1
    return {
        "tools": sum(ops.values()),
        "ops": dict(ops.most_common()),
        "destructive": destructive,
        "action_verbs": dict(verbs.most_common(25)),
    }
