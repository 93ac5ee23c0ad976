"""A graph task's request, written from the goal of its walk rather than from its steps.

A user with the goal an executed chain serves states the outcome they want and the facts the
agent cannot discover, and asks for the values they need; they never enumerate the lookups.
So the request has one sentence per *outcome* of the chain, in its order:

- each write, worded with the tool's own meaning (:mod:`agentworld_gym.semantics`): "cancel
  the order ...", "set the status of ... to ...", "add a new ... with ...", "delete ...";
- each asked value: "what is the due date of ...", "how many ... are there";

and reads that only lead to a later step are *implied*. A record an earlier call found is
named the way people name it: by its name or title when it was picked from a listing ("the
task "Launch plan" in project "Apollo""), by its relation to a record the user named ("the
customer of the invoice "INV-104""), or as "the new ..." when the chain created it — never
as "the record from step 2". Every sentence has several phrasings, chosen by the task's seed,
and a second mention of the same record says "it".
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from agentworld_gym.semantics import Meaning, meaning
from agentworld_gym.synthesis.tasks.model import (
    BODY,
    FILTER,
    KEY,
    MATCH,
    SCOPE,
    SEARCH,
    EnvModel,
    humanize,
    singular,
    words,
)
from agentworld_gym.synthesis.tasks.request.render import (
    cap,
    ordinal,
    plural,
    quote,
    series,
    told,
)
from agentworld_gym.synthesis.tasks.sample.walk import Source, Step
from agentworld_gym.synthesis.tasks.values import get_path
from agentworld_gym.synthesis.words import prose_words, unknown
from agentworld_gym.verifiers.checks import leaves

__all__ = ["Fact", "GoalWriter"]

_VERBISH = {
    "get", "gets", "list", "lists", "create", "creates", "update", "updates", "delete",
    "deletes", "remove", "removes", "post", "put", "patch", "retrieve", "query", "search",
    "set", "sets", "add", "adds", "fetch", "read", "check", "checks", "item", "items",
}  # fmt: skip
_NOUN_SKIP = {
    "api", "get", "post", "patch", "put", "a", "an", "the", "retrieve", "list", "create",
    "update", "delete", "query", "search",
}  # fmt: skip


@dataclass
class Fact:
    """A value the request asks for, read from one step's output."""

    step: int
    kind: str
    """``field`` (of the step's record) | ``count`` (of a list) | ``first`` (field of the
    first listed record)."""
    field: str = ""
    path: str = ""
    value: Any = None


MAX_DEPTH = 1
"""Relations a record's description follows ("the customer of the invoice "INV-1"" is one);
past it a record is named by its key ("the customer of the project of the invoice ..." is
where readers lose the thread)."""


_LABELS = {
    "created at": "creation time", "date created": "creation date", "created": "creation time",
    "create time": "creation time", "creation time": "creation time", "updated at":
    "last update time", "date updated": "last update date", "updated": "last update time",
    "update time": "last update time", "modified at": "last modification time",
    "last modified": "last modification time", "deleted at": "deletion time",
}  # fmt: skip


def field_label(name: str) -> str:
    """A field as people ask for it: ``created_at`` -> ``creation time``, ``dueDate`` ->
    ``due date``."""
    text = humanize(name)
    text = _LABELS.get(text, text)
    return text.replace("date time", "time") if text.endswith("date time") else text


def _parent_word(name: str) -> str:
    """A parent argument as the parent it names (``username`` -> ``user``)."""
    return "user" if words(name) in (["username"], ["user", "name"]) else _strip_id(name)


def _strip_id(name: str) -> str:
    w = words(name)
    if len(w) > 1 and w[-1] in ("id", "gid", "uuid", "key", "sid", "ids", "name", "arn"):
        w = w[:-1]
    return " ".join(w)


_NO_ROLE = frozenset(("id", "gid", "uuid", "pk", "key", "ref", "value", "parent", "data", "item"))
"""Relation fields that say nothing of the role ("the chart that is the pk of the data")."""


def _a(noun: str) -> str:
    """``noun`` with its indefinite article (``an order``, ``a user``)."""
    return ("an " if noun[:1].lower() in "aeio" else "a ") + noun


class GoalWriter:
    """Writes the requests of walks over one environment."""

    def __init__(self, model: EnvModel) -> None:
        self.model = model
        self._meanings: dict[str, Meaning] = {t.name: meaning(t) for t in model.spec.tools}
        self._prose = prose_words(model.spec)
        self.problems: list[str] = []
        """What makes the last request hard to read or to act on (empty: none); a
        candidate with any is refused."""

    def _say(self, phrase: str) -> str:
        """``phrase`` (a noun or a field label made from an identifier), noting a word a
        reader would not know ("dnse", "bylatlong")."""
        if bad := unknown(phrase, self._prose):
            self.problems.append(f"unknown word {bad[0]!r}")
        return phrase

    # -- nouns ------------------------------------------------------------------------------
    def noun(self, step: Step) -> str:
        """The resource a step works on, as people say it: the collection's noun, or the
        tool's own noun where the collection is named after an operation (``gets``)."""
        name = step.tool.collection or ""
        if not step.tool.declarative and step.subject:
            name = step.subject
        coll = self.model.collections.get(name)
        m = self._meanings.get(step.tool.name)
        if coll is not None and not set(words(coll.noun)) & _VERBISH:
            return coll.noun
        if m is not None and m.noun and not set(words(m.noun)) & _VERBISH:
            return m.noun
        if coll is not None:
            return coll.noun
        rest = [w for w in words(step.tool.name) if w not in _NOUN_SKIP]
        if rest in (["self"], ["me"], ["current", "user"]):
            return "current user"
        return singular(" ".join(rest)) if rest else "item"

    def _coll_noun(self, collection: str | None, fallback: str) -> str:
        coll = self.model.collections.get(collection or "")
        if coll is not None and not set(words(coll.noun)) & _VERBISH:
            return coll.noun
        return fallback

    # -- records ----------------------------------------------------------------------------
    def entity(
        self, src: Source, steps: list[Step], outputs: list[Any], noun: str, depth: int = 0
    ) -> str:
        """How the request names the record ``src`` points at (``noun`` is its kind): by
        what the user knows, or by its relation to a record named so, one level deep."""
        if src.kind != "ref" or depth >= MAX_DEPTH:
            return f"the {noun} {quote(src.value)}"
        j = src.step
        prev = steps[j]
        prefix, _, fld = src.path.rpartition(".")
        coll_j = self.model.collections.get(prev.tool.collection or "")
        is_self = (coll_j is not None and fld == coll_j.pk) or (
            fld in ("id", "gid", "uuid") and prefix == (prev.record_path or "")
        )
        if is_self or (coll_j is None and fld in ("id", "gid", "uuid")):
            return self.record(j, prefix, steps, outputs, depth, src.value)
        if coll_j is not None and coll_j.noun == noun:
            self.problems.append("a record named through another of its kind")
        which = self.record(j, prefix, steps, outputs, depth + 1, None)
        relation = _strip_id(fld)
        mine, theirs = set(words(noun)), set(words(relation))
        if not relation or relation in _NO_ROLE or mine <= theirs or theirs <= mine:
            return f"the {noun} of {which}"  # "the queue of the config", not "... queue name"
        return f"the {self._say(relation)} of {which}"  # "the owner of the test run"

    def record(
        self,
        j: int,
        prefix: str,
        steps: list[Step],
        outputs: list[Any],
        depth: int = 0,
        key: Any = None,
    ) -> str:
        """The record at ``prefix`` of step ``j``'s output, named without step numbers: by
        its name, as "the new ..." when the chain made it, by its place in a listing, or
        (past :data:`MAX_DEPTH`) by its key."""
        prev = steps[j]
        noun_j = self.noun(prev)
        rec = get_path(outputs[j], prefix)
        coll_j = self.model.collections.get(prev.tool.collection or "")
        name = self._name(prev, rec)
        listed = prev.tool.op in ("list", "search") and prefix.rsplit(".", 1)[-1].isdigit()
        if prev.tool.op == "create":
            return f"the new {noun_j}"
        if name and (listed or depth):
            where = self.listing(prev, steps, outputs, depth + 1) if listed and not depth else ""
            return f"the {noun_j} {quote(name)}{where}"
        if depth >= MAX_DEPTH or (depth and key is not None):
            if key is None:
                key = next((rec.get(k) for k in (coll_j.pk,) if coll_j), None) if rec else None
            return f"the {noun_j} {quote(key)}" if key is not None else f"that {noun_j}"
        if listed:
            where = self.listing(prev, steps, outputs, depth + 1)
            key = rec.get(coll_j.pk) if coll_j is not None and isinstance(rec, dict) else None
            if key is not None and not isinstance(key, dict | list | bool):
                return f"the {noun_j} {quote(key)}{where}"  # no name: its key, not its place
            return self._position(prev, outputs[j], prefix, noun_j, where)
        return self.target(prev, steps, outputs, noun_j, depth + 1)

    def _position(self, step: Step, output: Any, prefix: str, noun: str, where: str) -> str:
        """A listed record without a name: "the only ..." when the listing holds one;
        otherwise its place, which a reader cannot rely on (noted as a problem)."""
        parent, _, index = prefix.rpartition(".")
        listed = get_path(output, parent) if parent else output
        if isinstance(listed, list) and len(listed) == 1:
            return f"the only {noun}{where}"
        self.problems.append("record picked by its place in a list")
        return f"the {ordinal(int(index))} {noun} in the {noun} list{where}"

    def _name_fields(self, step: Step) -> list[str]:
        coll = self.model.collections.get(step.tool.collection or "")
        names = list(coll.profile.names) if coll is not None else []
        return names + ["name", "title", "display_name", "displayName", "email"]

    def _name(self, step: Step, rec: Any) -> str:
        """The record's name, title or email, as people call it (``""`` when it has none)."""
        if not isinstance(rec, dict):
            return ""
        coll = self.model.collections.get(step.tool.collection or "")
        for f in self._name_fields(step):
            value = rec.get(f)
            if isinstance(value, str) and value.strip() and len(value) <= 60:
                if coll is not None and sum(r.get(f) == value for r in coll.records) > 1:
                    continue  # two records of that name: the name does not say which
                return value
        return ""

    def target(
        self, step: Step, steps: list[Step], outputs: list[Any], noun: str, depth: int = 0
    ) -> str:
        """The record a get/update/delete/action step addresses, with its parent scope."""
        tool = step.tool
        key = next(
            (
                (n, s)
                for n, s in step.sources.items()
                if tool.params[n].role == KEY and tool.op not in ("list", "search", "create")
            ),
            None,
        )
        text = self.entity(key[1], steps, outputs, noun, depth) if key else f"the {noun}"
        if key is None and self._many(step):
            self.problems.append(f"the {noun} is never named")
        found = key is not None and key[1].kind == "ref"
        scopes = [  # a record found earlier implies the parents it came with; others are said
            self._parent(tool.params[n], s, steps, outputs, depth + 1)
            for n, s in step.sources.items()
            if tool.params[n].role == SCOPE
            and not (found and s.kind == "ref" and s.step == key[1].step)
            and not (found and s.kind != "ref" and _holds(outputs[key[1].step], s.value))
        ]
        scopes = [sc for sc in dict.fromkeys(scopes) if sc not in text]  # said once
        if scopes:
            text += " in " + series(scopes)
        return text

    def _many(self, step: Step) -> bool:
        """Whether the collection a keyless read or write works on holds several records in
        the step's scope (then "the campaign" does not say which)."""
        coll = self.model.collections.get(step.tool.collection or "")
        if coll is None or step.tool.op in ("list", "search", "create") or not coll.pk:
            return False
        scope = {
            step.tool.params[n].field: s.value
            for n, s in step.sources.items()
            if step.tool.params[n].role == SCOPE and step.tool.params[n].field
        }
        inside = [r for r in coll.records if all(r.get(f) == v for f, v in scope.items())]
        return len(inside) > 1

    def _parent(
        self, p: Any, s: Source, steps: list[Step], outputs: list[Any], depth: int = 0
    ) -> str:
        pnoun = self._coll_noun(
            p.ref, p.noun or self._say(_parent_word(p.field or p.name)) or "parent"
        )
        if s.kind == "ref":
            return self.entity(s, steps, outputs, pnoun, depth)
        return f"{pnoun} {quote(s.value)}"

    def listing(self, step: Step, steps: list[Step], outputs: list[Any], depth: int = 0) -> str:
        """`` in project "X" with status "open"`` for a list or search step."""
        tool = step.tool
        scopes, filters = [], []
        for n, s in step.sources.items():
            p = tool.params[n]
            if p.role in (SCOPE, KEY):
                scopes.append(self._parent(p, s, steps, outputs, depth))
            elif p.role in (FILTER, MATCH) and s.kind != "page":
                value = (
                    self.entity(s, steps, outputs, self._say(humanize(p.field or n)), depth)
                    if s.kind == "ref"
                    else quote(s.value)
                )
                filters.append(f"{self._say(humanize(p.field or n))} {value}")
            elif p.role == SEARCH and s.kind == "given":
                filters.append(f"matching {quote(s.value)}")
        text = (" in " + series(scopes)) if scopes else ""
        plain = [f for f in filters if not f.startswith("matching")]
        if plain:
            text += " with " + series(plain)
        text += "".join(" " + f for f in filters if f.startswith("matching"))
        return text

    # -- sentences --------------------------------------------------------------------------
    def write(
        self,
        env_name: str,
        steps: list[Step],
        outputs: list[Any],
        facts: list[Fact],
        rng: random.Random,
    ) -> tuple[str, list[Any]]:
        """The request and the values it states (for a paraphrase to keep); what reads
        badly in it is left in :attr:`problems`."""
        self.problems = []
        by_step: dict[int, list[Fact]] = {}
        for f in facts:
            by_step.setdefault(f.step, []).append(f)
        sentences: list[tuple[str, bool]] = []
        last: str | None = None
        for i, step in enumerate(steps):
            if step.tool.writes:
                group = self._group(i, steps, outputs, by_step)
                if len(group) > 1:  # one sentence for the same write on several records
                    if group[0] == i:
                        sentences.append((self._group_sentence(group, steps, outputs, rng), True))
                        last = None
                    continue
                text, last = self._write_sentence(i, step, steps, outputs, rng, last)
                sentences.append((text, True))
            for f in by_step.get(i, []):
                text, last = self._ask(f, step, steps, outputs, rng, last, not sentences)
                sentences.append((text, False))
        body = self._join(sentences, rng)
        if facts and rng.random() < 0.3:
            body += " " + rng.choice(("A short answer is enough.", "Thanks!"))
        given = [
            s.value
            for st in steps
            for s in st.sources.values()
            if s.kind in ("given", "anchor") and not isinstance(s.value, dict)
        ]
        return body, given

    # -- the same write on several records: one sentence ------------------------------------
    def _signature(self, i: int, steps: list[Step], outputs: list[Any]) -> tuple | None:
        """What a write does, apart from its record: equal for writes one sentence can say
        together ("delete the loggers "a", "b" and "c""); ``None`` when it cannot be said so."""
        step = steps[i]
        m = self._meanings.get(step.tool.name) or Meaning(step.tool.op, step.tool.op, "", False)
        op = m.op if m.op in ("create", "update", "delete", "action") else step.tool.op
        if op == "create":
            fields = self._fields(step)
            if len(fields) != 1:
                return None
            return (
                "create",
                step.tool.name,
                fields[0][0],
                self._create_scope(step, steps, outputs),
            )
        parts = _NAMED.match(self.target(step, steps, outputs, self.noun(step)))
        if parts is None or " of " in parts["noun"] or "that" in parts["noun"]:
            return None
        values = tuple((lab, repr(v)) for lab, v in self._fields(step))
        return (op, step.tool.name, values, parts["noun"], parts["where"])

    def _group(
        self, i: int, steps: list[Step], outputs: list[Any], by_step: dict[int, list[Fact]]
    ) -> list[int]:
        """The run of writes with one signature that step ``i`` belongs to (no asked value
        or other write between them)."""
        sig: dict[int, tuple | None] = {}

        def same(j: int) -> bool:
            if j not in sig:
                sig[j] = self._signature(j, steps, outputs) if steps[j].tool.writes else None
            return sig[j] is not None and sig[j] == sig[i] and not by_step.get(j)

        if by_step.get(i) or not same(i):
            return [i]
        lo = i
        for j in range(i - 1, -1, -1):
            if by_step.get(j) or (steps[j].tool.writes and not same(j)):
                break
            if steps[j].tool.writes:
                lo = j
        run = [lo]
        for j in range(lo + 1, len(steps)):
            if by_step.get(j) or (steps[j].tool.writes and not same(j)):
                break
            if steps[j].tool.writes:
                run.append(j)
        return run

    def _group_sentence(
        self, group: list[int], steps: list[Step], outputs: list[Any], rng: random.Random
    ) -> str:
        first = steps[group[0]]
        sig = self._signature(group[0], steps, outputs)
        assert sig is not None
        noun = self.noun(first)
        many = plural(noun)
        if sig[0] == "create":
            label, where = sig[2], sig[3]
            values = series([quote(self._fields(steps[j])[0][1]) for j in group])
            return rng.choice(
                [
                    f"Add {len(group)} new {many}{where}, with the {plural(label)} {values}.",
                    f"Please create {many}{where} with the {plural(label)} {values}.",
                ]
            )
        op, _, values, _, where = sig
        names = []
        for j in group:
            parts = _NAMED.match(self.target(steps[j], steps, outputs, self.noun(steps[j])))
            assert parts is not None
            names.append(parts["name"])
        them = f"the {many} {series(names)}{where}"
        if op == "delete":
            return rng.choice(
                [
                    f"Delete {them}.",
                    f"Please remove {them}.",
                    f"{cap(them)} are no longer needed; delete them.",
                ]
            )
        fields = self._fields(first)
        if op == "action" or not fields:
            m = self._meanings.get(first.tool.name)
            verb = (m.verb if m else "") or ("update" if op == "update" else "process")
            with_ = (
                (" with " + series([f"{lab} {quote(v)}" for lab, v in fields])) if fields else ""
            )
            return rng.choice([f"{cap(verb)} {them}{with_}.", f"Please {verb} {them}{with_}."])
        flag = _flag(fields)
        if flag is not None:
            return rng.choice(
                [f"Make sure {them} are {flag}.", f"Please make sure {them} are {flag}."]
            )
        if len(fields) == 1:
            ((lab, v),) = fields
            return rng.choice(
                [
                    f"Set the {lab} of {them} to {quote(v)}.",
                    f"Change the {lab} of {them} to {quote(v)}.",
                    f"Update {them} so that their {lab} is {quote(v)}.",
                ]
            )
        sets = series([f"{lab} to {quote(v)}" for lab, v in fields])
        return f"For {them}, set the {sets}."

    @staticmethod
    def _join(sentences: list[tuple[str, bool]], rng: random.Random) -> str:
        """Sentences in order; a write after a write may open with a connector."""
        out: list[str] = []
        for k, (s, writes) in enumerate(sentences):
            if k and writes and sentences[k - 1][1] and rng.random() < 0.5:
                s = rng.choice(("Then ", "After that, ", "Also, ", "Next, ")) + s[0].lower() + s[1:]
            out.append(s)
        return " ".join(out)

    def _fields(self, step: Step) -> list[tuple[str, Any]]:
        tool = step.tool
        out = []
        for n, s in step.sources.items():
            p = tool.params[n]
            if s.kind != "given":
                continue
            if p.role == BODY or (p.role == KEY and tool.op == "create"):
                label = self._say(field_label(p.field or n))
                if isinstance(s.value, dict):  # an object body: its own fields, in words
                    out += [(self._say(field_label(k)), v) for k, v in s.value.items()]
                else:
                    out.append((label, s.value))
        return out

    def _write_sentence(
        self,
        i: int,
        step: Step,
        steps: list[Step],
        outputs: list[Any],
        rng: random.Random,
        last: str | None,
    ) -> tuple[str, str | None]:
        tool = step.tool
        m = self._meanings.get(tool.name) or Meaning(tool.op, tool.op, "", False)
        noun = self._say(self.noun(step))
        if m.verb and m.verb[:5] == noun[:5]:  # "cancel the cancellation"
            self.problems.append(f"the verb {m.verb!r} repeats the noun {noun!r}")
        fields = self._fields(step)
        values = [told(label, v) for label, v in fields]
        op = m.op if m.op in ("create", "update", "delete", "action") else tool.op
        if op == "create":
            where = self._create_scope(step, steps, outputs)
            with_ = (" with " + series(values)) if values else ""
            verb = m.verb if m.verb not in ("create", "add", "") else ""
            options = (
                [
                    f"{cap(verb)} {_a(noun)}{where}{with_}.",
                    f"Please {verb} {_a(noun)}{where}{with_}.",
                ]
                if verb
                else [
                    f"Add a new {noun}{where}{with_}.",
                    f"Create {_a(noun)}{where}{with_}.",
                    f"I need a new {noun}{where}{with_}.",
                    f"Please create a new {noun}{where}{with_}.",
                ]
            )
            return rng.choice(options), None
        target = self.target(step, steps, outputs, noun)
        ref = "it" if target == last else target
        if op == "delete":
            options = [f"Delete {ref}.", f"Please remove {ref}.", f"Remove {ref} for good."]
            if ref != "it":
                options.append(f"{cap(ref)} is no longer needed; delete it.")
            return rng.choice(options), target
        if op == "action":
            verb = m.verb or "process"
            with_ = (" with " + series(values)) if values else ""
            options = [
                f"{cap(verb)} {ref}{with_}.",
                f"Please {verb} {ref}{with_}.",
                f"Could you {verb} {ref}{with_}?",
            ]
            return rng.choice(options), target
        # update
        if not fields:
            return rng.choice([f"Update {ref}.", f"Please update {ref}."]), target
        sets = [f"{label} to {quote(v)}" for label, v in fields]
        flag = _flag(fields)
        if flag is not None:  # one yes/no field: "make sure the key "K" is not active"
            options = [f"Make sure {ref} is {flag}.", f"Please make sure {ref} is {flag}."]
            return rng.choice(options), target
        if ref == "it":
            options = [
                f"Set its {series(sets)}.",
                f"Change its {series(sets)}.",
                f"Update it so that its {series([f'{lab} is {quote(v)}' for lab, v in fields])}.",
            ]
        else:
            first, *rest = fields
            more = "".join(f" and its {lab} to {quote(v)}" for lab, v in rest)
            options = [
                f"Set the {first[0]} of {ref} to {quote(first[1])}{more}.",
                f"Change the {first[0]} of {ref} to {quote(first[1])}{more}.",
                f"Update {ref} so that its "
                + series([f"{lab} is {quote(v)}" for lab, v in fields])
                + ".",
                f"Please update {ref}: set its {series(sets)}.",
            ]
        return rng.choice(options), target

    def _create_scope(self, step: Step, steps: list[Step], outputs: list[Any]) -> str:
        """Where a new record goes: its parents, and "with the same registry and resource
        group as the run "X"" where several come from one earlier record."""
        tool = step.tool
        scopes: list[str] = []
        groups: dict[tuple[int, str], list[str]] = {}
        for n, s in step.sources.items():
            p = tool.params[n]
            if not (p.role == SCOPE or (p.role == KEY and s.kind == "ref")):
                continue
            if s.kind == "ref":
                groups.setdefault((s.step, s.path.rpartition(".")[0]), []).append(n)
            else:
                scopes.append(self._parent(p, s, steps, outputs, 1))
        same = []
        for (j, prefix), names in groups.items():
            if len(names) == 1:
                p = tool.params[names[0]]
                scopes.append(self._parent(p, step.sources[names[0]], steps, outputs, 1))
            else:
                labels = [_strip_id(tool.params[n].field or n) for n in names]
                keys = any(tool.params[n].role == KEY for n in names)
                if keys or {"name", "title"} & set(labels):
                    # "a new tag with the same tag (or name) as the tag X": a copy of what
                    # tells records apart
                    self.problems.append("a new record with another's key or name")
                which = self.record(j, prefix, steps, outputs, 1, None)
                same.append(f" with the same {series(labels)} as {which}")
        return ((" in " + series(scopes)) if scopes else "") + "".join(same)

    def _ask(
        self,
        f: Fact,
        step: Step,
        steps: list[Step],
        outputs: list[Any],
        rng: random.Random,
        last: str | None,
        first: bool = False,
    ) -> tuple[str, str | None]:
        noun = self._say(self.noun(step))
        label = self._say(field_label(f.field))
        if f.kind == "count":
            where = self.listing(step, steps, outputs)
            many = plural(noun)
            options = [
                f"How many {many}{where} are there?",
                f"Tell me how many {many}{where} there are.",
                f"I want to know how many {many}{where} exist.",
            ]
            return rng.choice(options), last
        if f.kind == "first":
            where = self.listing(step, steps, outputs)
            prefix = f.path.rpartition(".")[0]
            name = self._name(step, get_path(outputs[f.step], prefix))
            if name and f.field not in self._name_fields(step):
                first = f"the {noun} {quote(name)}{where}"  # found by its name in the listing
            else:
                first = self._position(step, outputs[f.step], prefix, noun, where)
            options = [
                f"What is the {label} of {first}?",
                f"Tell me the {label} of {first}.",
            ]
            return rng.choice(options), last
        target = self.target(step, steps, outputs, noun)
        if target == last:
            options = [f"What is its {label} now?", f"After that, tell me its {label}."]
        else:
            options = [
                f"What is the {label} of {target}?",
                f"Tell me the {label} of {target}.",
                f"Look up {target} and tell me its {label}.",
            ]
            if not first:
                options.append(f"I also need the {label} of {target}.")
        return rng.choice(options), target


_NAMED = re.compile(r'^the (?P<noun>[^"]+?) (?P<name>"[^"]*")(?P<where>.*)$')
"""A record named by its name or key ("the logger "payroll-east" in ...")."""


def _flag(fields: list[tuple[str, Any]]) -> str | None:
    """``not active`` for a lone ``is active = false`` write (``None`` for anything else)."""
    if len(fields) != 1 or not isinstance(fields[0][1], bool):
        return None
    label, value = fields[0]
    words_ = label.split()
    if len(words_) < 2 or words_[0] not in ("is", "has"):
        return None
    adj = " ".join(words_[1:])
    if words_[0] == "has":
        return f"{'' if value else 'not '}having {adj}".strip()
    return adj if value else f"not {adj}"


def _holds(output: Any, value: Any) -> bool:
    """Whether ``value`` is one of the scalars in ``output`` (a parent the found record
    already names)."""
    return any(v == value for v in leaves(output) if not isinstance(v, bool))
