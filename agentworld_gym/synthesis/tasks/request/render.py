"""Request wording shared by both routes: quoting, plurals, the leak check, an LLM paraphrase.

A request names what the user *gives* (an anchor record's key, a filter value, a value to
write) and never what the agent must *find* (keys from earlier outputs, the facts it reports)
nor the tools to call. :func:`leaks` checks both; an LLM paraphrase that drops a given value or
leaks a hidden one is discarded in favour of the template text, so a model can only make a
request read better, never make it unsolvable.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import jinja2

logger = logging.getLogger(__name__)

_IDENT = re.compile(r"[A-Z]+(?![a-z])|[A-Za-z][a-z]*|\d+")
_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined, autoescape=False, trim_blocks=True, lstrip_blocks=True
)


def quote(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return ", ".join(f"{k} {quote(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(quote(v) for v in value) + "]"
    return str(value)


def told(label: str, value: Any) -> str:
    """A field and its value as a request states it: ``status "open"``; a yes/no value as
    ``draft set to false`` (never "is draft false")."""
    if isinstance(value, bool):
        words = label.split()
        if words[:1] in (["is"], ["are"]) and len(words) > 1:
            label = " ".join(words[1:])
        return f"{label} set to {quote(value)}"
    return f"{label} {quote(value)}"


def cap(text: str) -> str:
    """``text`` with its first letter upper-case (quotes and the rest left alone)."""
    for i, ch in enumerate(text):
        if ch.isalpha():
            return text[:i] + ch.upper() + text[i + 1 :]
    return text


def series(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def keyed(items: list[tuple[str, str]]) -> str:
    """Records named by key with the parents that place them (``where``, may be empty):
    ``"a", "b" and "c" in project "P"`` when they share one, ``9 in app 6 and 8 in app 4``
    when each has its own, ``"a" and "b" in project "P", and "c" in project "Q"`` when
    several parents place several records (``;`` between parents of several parts); never a
    parenthesis per record, which reads as machine output."""
    keys, wheres = [k for k, _ in items], [w for _, w in items]
    if not any(wheres):
        return series(keys)
    if len(set(wheres)) == 1:
        return f"{series(keys)} in {wheres[0]}"
    if not all(wheres):
        return series([f"{k} (in {w})" if w else k for k, w in items])
    groups: dict[str, list[str]] = {}
    for k, w in items:
        groups.setdefault(w, []).append(k)
    said = [f"{series(ks)} in {w}" for w, ks in groups.items()]
    several_parts = any(", " in w for w in groups)
    if not several_parts and all(len(ks) == 1 for ks in groups.values()):
        return series(said)
    glue = "; " if several_parts else ", "
    return glue.join(said[:-1]) + glue + "and " + said[-1]


def ordinal(i: int) -> str:
    names = (
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
    )
    return names[i] if i < len(names) else f"{i + 1}th"


_UNCOUNTED = frozenset(
    "data metadata information info feedback media equipment software hardware firmware "
    "analytics news series species staff personnel inventory traffic".split()
)
"""Nouns whose plural is themselves ("the data", never "the datas")."""
_IRREGULAR = {"person": "people", "child": "children", "man": "men", "woman": "women"}


def plural(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    if last in _UNCOUNTED:
        return noun
    if last in _IRREGULAR:
        return f"{head} {_IRREGULAR[last]}".lstrip()
    if last.isupper() and len(last) > 1:  # an acronym: "IPs", "DNS" (no "DNSes")
        return noun if last.endswith("S") else noun + "s"
    if (
        last.endswith("s")
        and not last.endswith(("ss", "us", "is", "ys", "as", "os"))
        and len(last) > 3
    ):
        return noun  # already plural: "settings", "credentials", "metrics"
    if noun.endswith("is") and len(last) > 4:
        return noun[:-2] + "es"  # "analysis" -> "analyses"
    if noun.endswith("y") and not noun.endswith(("ay", "ey", "oy", "uy")):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def leaks(text: str, hidden: list[Any], tool_names: list[str]) -> str | None:
    """Why ``text`` gives away something it must not (``None`` when it does not)."""
    low = text.casefold()
    for name in tool_names:
        # a one-word tool name ("meetings") is also the plain noun; identifiers are the leak
        if len(name) >= 5 and len(_IDENT.findall(name)) > 1 and name.casefold() in low:
            return f"names tool {name}"
    for value in hidden:
        v = str(value).casefold()
        if len(v) >= 3 and (
            v in low
            if not v.replace(".", "").isdigit()
            else re.search(rf"(?<![\d.]){re.escape(v)}(?![\d.])", low)
        ):
            return f"leaks {value!r}"
    return None


def paraphrase(
    backend: Any, text: str, given: list[Any], hidden: list[Any], tool_names: list[str]
) -> str:
    """An LLM rewrite of a templated request, kept only if it still states every ``given``
    value and leaks nothing; otherwise ``text`` unchanged."""
    prompt = (
        "Rewrite this request so it reads like a real user with this goal wrote it. Keep "
        "every outcome it asks for and every quoted value exactly; state goals, not steps "
        "(no numbered lists, no 'first call ...'); do not add tool or function names; do not "
        "add facts.\n\n"
        f"{text}\n\nReply with only the rewritten request."
    )
    try:
        reply = backend.chat([{"role": "user", "content": prompt}], temperature=0.7)
    except Exception as exc:  # a flaky endpoint must not stop synthesis: keep the template
        logger.warning("paraphrase failed (%s); keeping the template text", exc)
        return text
    out = (reply.get("content") or "").strip()
    if not out or len(out) > 3 * len(text) + 200:
        return text
    if any(str(v).casefold() not in out.casefold() for v in given):
        return text
    if leaks(out, hidden, tool_names) or re.search(r"(?m)^\s*\d{1,2}[.)]\s", out):
        return text  # a leak, or a numbered recipe: the template text stands
    return out
