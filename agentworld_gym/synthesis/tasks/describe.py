"""Requests in words: each step of a walk described from where its arguments came from.

A key from an earlier output becomes "the customer of the invoice from step 2"; a listed
record is named by its name field ("the task "Task alpha" listed in step 1") or its position;
values the user gives are quoted. The templates themselves live in :mod:`.render`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentworld_gym.synthesis.tasks import render
from agentworld_gym.synthesis.tasks.model import (
    FILTER,
    KEY,
    MATCH,
    SCOPE,
    EnvModel,
    humanize,
    singular,
    words,
)
from agentworld_gym.synthesis.tasks.values import get_path
from agentworld_gym.synthesis.tasks.walk import Source, Step


@dataclass
class Fact:
    step: int
    kind: str
    """``field`` (of the step's record) | ``count`` (of a list) | ``first`` (field of the
    first listed record)."""
    field: str = ""
    path: str = ""
    value: Any = None


class Describer:
    """Describes the steps of walks over one environment."""

    def __init__(self, model: EnvModel) -> None:
        self.model = model

    def noun(self, step: Step) -> str:
        name = step.tool.collection or ""
        if not step.tool.declarative and step.subject:
            name = step.subject
        coll = self.model.collections.get(name)
        if coll is not None:
            return coll.noun
        skip = {
            "api",
            "get",
            "post",
            "patch",
            "put",
            "a",
            "an",
            "the",
            "retrieve",
            "list",
            "create",
            "update",
            "delete",
            "query",
            "search",
        }
        rest = [w for w in words(step.tool.name) if w not in skip]
        if rest in (["self"], ["me"], ["current", "user"]):
            return "current user"
        return singular(" ".join(rest)) if rest else "item"

    def ref_phrase(self, src: Source, steps: list[Step], outputs: list[Any]) -> str:
        j = src.step
        prev = steps[j]
        noun_j = self.noun(prev)
        prefix, _, fld = src.path.rpartition(".")
        rec = get_path(outputs[j], prefix)
        coll_j = self.model.collections.get(prev.tool.collection or "")
        where = f"from step {j + 1}"
        if prev.tool.op in ("list", "search") and prefix.rsplit(".", 1)[-1].isdigit():
            idx = int(prefix.rsplit(".", 1)[-1])
            names = coll_j.profile.names if coll_j is not None else []
            name = next(
                (rec[f] for f in names if isinstance(rec, dict) and isinstance(rec.get(f), str)), ""
            )
            if name:
                which = f"the {noun_j} {render.quote(name)} listed in step {j + 1}"
            else:
                which = f"the {render.ordinal(idx)} {noun_j} listed in step {j + 1}"
        else:
            which = f"the {noun_j} {where}"
        is_self = coll_j is not None and fld == coll_j.pk
        if is_self or (coll_j is None and fld in ("id", "gid", "uuid")):
            return which
        target = self.model.collections.get(src.collection or "")
        noun = target.noun if target else humanize(fld)
        return f"the {noun} of {which}"

    def describe(self, steps: list[Step], outputs: list[Any], facts: list[Fact]):
        texts: list[str] = []
        given: list[Any] = []
        by_step = {f.step: f for f in facts}
        for i, step in enumerate(steps):
            tool, noun = step.tool, self.noun(step)
            target = f"the {noun}"
            scope, filters, fields, query = [], [], [], ""
            for name, src in step.sources.items():
                p = tool.params[name]
                if p.role == SCOPE and _named_before(step, name, src):
                    continue
                if src.kind in ("given", "anchor"):
                    given.append(src.value if not isinstance(src.value, dict) else "")
                phrase = self.ref_phrase(src, steps, outputs) if src.kind == "ref" else None
                if p.role == KEY and tool.op in ("list", "search"):
                    parent = self.model.collections.get(p.ref or "")
                    pnoun = parent.noun if parent else _strip_id(p.field or name)
                    scope.append(phrase or f"{pnoun} {render.quote(src.value)}")
                elif p.role == KEY and tool.op != "create":
                    target = phrase or f"the {noun} {render.quote(src.value)}"
                elif p.role == SCOPE:
                    parent = self.model.collections.get(p.ref or "")
                    pnoun = parent.noun if parent else _strip_id(p.field or name)
                    scope.append(phrase or f"{pnoun} {render.quote(src.value)}")
                elif p.role in (FILTER, MATCH):
                    label = humanize(p.field or name)
                    filters.append(f"whose {label} is " + (phrase or render.quote(src.value)))
                elif p.role == "search":
                    query = str(src.value)
                elif src.kind == "given" and tool.writes:
                    fields.append(
                        f"{humanize(p.field or name)} {render.quote(src.value)}"
                        if not isinstance(src.value, dict)
                        else render.quote(src.value)
                    )
            scope_text = "".join(f" of {x}" if x.startswith("the ") else f" in {x}" for x in scope)
            if tool.op not in ("list", "search", "create"):
                target += scope_text + "".join(" " + f for f in filters[:1])
                target += "".join(" and " + f.removeprefix("whose ") for f in filters[1:])
            report = self.report(by_step.get(i), tool.op)
            texts.append(
                render.step_text(
                    tool.op,
                    noun=noun,
                    plural=render.plural(noun),
                    target=target,
                    scope=scope_text,
                    filters=(" " + " and ".join(filters)) if filters else "",
                    fields=" and ".join(fields) or "the values given",
                    query=query,
                    report=report,
                )
            )
        return texts, [g for g in given if g != ""]

    @staticmethod
    def report(fact: Fact | None, op: str) -> str:
        if fact is None:
            return ""
        if fact.kind == "count":
            return " and tell me how many there are"
        if fact.kind == "first":
            return f" and tell me the {humanize(fact.field)} of the first one"
        return f" and tell me its {humanize(fact.field)}"


def _named_before(step: Step, name: str, src: Source) -> bool:
    """Whether the key comes from the same earlier record as the scope ``src``: "the worker
    of the channel from step 3" already implies the channel's workspace."""
    if src.kind != "ref":
        return False
    record = (src.step, src.path.rpartition(".")[0])
    for other, s in step.sources.items():
        if other == name:
            return False
        same = s.kind == "ref" and (s.step, s.path.rpartition(".")[0]) == record
        if same and step.tool.params[other].role == KEY and step.tool.op not in ("list", "search"):
            return True
    return False


def _strip_id(name: str) -> str:
    w = words(name)
    if len(w) > 1 and w[-1] in ("id", "gid", "uuid", "key", "sid"):
        w = w[:-1]
    return " ".join(w)
