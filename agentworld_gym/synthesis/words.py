"""Which words a request may use: English, or the vocabulary API documentation shares.

A noun or field label derived from an identifier can come out as no word at all ("dnse" from
``dnses``, "bylatlong", "upgradeo" from ``upgradeOperation``); a reader stumbles on it and
cannot tell what record is meant. Synthesis writes such a phrase only when every word in it
is *known*: in an English dictionary (the ``english-words`` package: Webster's 2nd and
GCIDE), in the words the descriptions of at least two catalog APIs use (``api_words.txt``,
rebuilt by ``python -m agentworld_gym.synthesis.words ROOT``: "webhook", "namespace", "sku"),
or in the environment's own prose (its product and brand names), allowing the usual
inflections ("invoices", "enabled", "processing").
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

_DATA = Path(__file__).with_name("api_words.txt")
_WORD = re.compile(r"[A-Za-z]+")
_TOKEN = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
"""A word with its clitic ("project's", "I'm", "isn't")."""
_PROSE_KEYS = ("description", "summary", "title")


@lru_cache(maxsize=1)
def _dictionary() -> frozenset[str]:
    try:
        from english_words import get_english_words_set
    except ImportError as exc:  # pragma: no cover - the synth extra installs it
        raise ImportError(
            "task synthesis needs the 'english-words' package: pip install 'agentworld-gym[synth]'"
        ) from exc
    english = get_english_words_set(["web2", "gcide"], lower=True, alpha=True)
    api = _DATA.read_text().split() if _DATA.exists() else []
    return frozenset(english) | frozenset(api)


def _stems(word: str) -> Iterable[str]:
    yield word
    for end, repl in (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("d", "")):
        if word.endswith(end) and len(word) - len(end) >= 3:
            yield word[: -len(end)] + repl
    if word.endswith("ing") and len(word) > 5:
        yield word[:-3]
        yield word[:-3] + "e"


def known(word: str, extra: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether ``word`` (any case) is a word a reader knows; digits always are; a clitic
    ("'s", "'m", "n't") is judged by its word."""
    w = word.lower().replace("’", "'")
    if "'" in w:
        base, _, clitic = w.partition("'")
        if clitic == "t" and base.endswith("n"):  # isn't, don't, won't, can't
            return known(base[:-1], extra) or known(base, extra)
        return known(base, extra) if clitic in ("s", "m", "re", "ve", "ll", "d") else False
    if not w.isalpha():
        return True
    if len(w) == 1:
        return w in ("a", "i")
    table = _dictionary()
    return any(s in table or s in extra for s in _stems(w))


def unknown(phrase: str, extra: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The words of ``phrase`` a reader would not know (``[]`` when it reads)."""
    return [w for w in _TOKEN.findall(phrase) if not known(w, extra)]


NOT_NOUNS = frozenset(
    """all full expanded default basic detailed details mine self me current simple extended
    compact minimal raw info bulk batch multiple single new old latest recent own some any
    none other others each every del dels gets sets lists by for with of in on at to from
    create update delete remove search query find count total bulks alls fulls similar
    related recommended popular trending nearby available upcoming""".split()
)
"""Words a collection's noun can end in that name no kind of thing ("the only full in the
order", "the group of the all"): views and verbs of an API, not its records."""


_OPERATION = frozenset("api v get put post patch update create delete list filter by".split())


def noun_reads(noun: str, extra: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether ``noun`` (a collection's, as a request says it) names a kind of thing: at
    most three words, none of them an operation's ("patch api v 1 subscriptions ...",
    "update deletion protections"), every one known (``extra``: the environment's prose,
    not its identifiers), the last a noun."""
    w = _WORD.findall(noun.lower())
    return (
        0 < len(w) <= 3
        and w[-1] not in NOT_NOUNS
        and not _participle(w[-1])
        and not set(w) & _OPERATION
        and not unknown(noun, extra)
    )


def _participle(word: str) -> bool:
    """A past participle ("unanswered", "archived", "featured"): a view of records ("the
    unanswereds"), not a kind of thing; nouns in -ed ("feed", "seabed", "hundred") are not."""
    return (
        len(word) >= 6
        and word.endswith("ed")
        and not word.endswith(("eed", "bed", "shed", "hundred", "kindred"))
    )


_GLUED = re.compile(
    r"^(?:by|add|get|set|list|create|update|delete|remove|put|post|is|has|for)[a-z]{3,}$"
)
"""An identifier run together from a verb or preposition and a noun ("byseller",
"addrequests"): the API's spelling, not a term its users say."""


def _term(word: str) -> bool:
    """Whether a word of a tool's or collection's name is a term its users say: a word, or
    two run together ("serverfarm") -- not a verb or preposition glued to a noun
    ("byseller") or a phrase glued whole ("cancelthetransaction")."""
    if known(word) or _GLUED.match(word):
        return known(word)
    return any(
        known(word[:i]) and known(word[i:]) for i in range(3, len(word) - 2) if len(word) <= 24
    )


def prose_words(spec: Any, names: bool = True) -> frozenset[str]:
    """The lower-cased words of an environment's own descriptions (name, tools, arguments)
    and of its tools' and collections' names cut at case changes: the API's own terms
    ("serverfarm" for Azure's ``serverfarms``), which its users say too."""
    from agentworld_gym.synthesis.tasks.model import words

    env = _as_dict(spec)
    found = {w.lower() for w in _WORD.findall(" ".join(_prose(env)))}
    for name in (
        [
            *(t.get("name") or "" for t in env.get("tools") or []),
            *env.get("collections", ()),
        ]
        if names
        else []
    ):
        found.update(w for w in words(str(name)) if _term(w))
    return frozenset(s for w in found for s in _stems(w))  # "serverfarm" from "serverfarms"


_IN_SENTENCE = re.compile(r"(?<![\w/{}.$-])[A-Za-z]+(?![\w/{}-]|\.\w)")


def sentence_words(spec: Any) -> frozenset[str]:
    """The lower-cased words an environment's descriptions write as words of a sentence:
    not inside a path or an identifier (``/pullrequests/``, ``giftcard_id``) and not in
    CamelCase (``StorageClass``: two words for its readers). The tools' prose only: the
    environment's own description is ours, written from its names."""
    env = _as_dict(spec)
    text = " ".join(_prose({"tools": env.get("tools") or []}))
    found = {w.lower() for w in _IN_SENTENCE.findall(text) if w in (w.lower(), w.capitalize())}
    return frozenset(s for w in found for s in _stems(w))


def _as_dict(spec: Any) -> dict[str, Any]:
    if isinstance(spec, dict):
        return spec
    return {
        "name": getattr(spec, "name", ""),
        "description": getattr(spec, "description", ""),
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in getattr(spec, "tools", [])
        ],
        "collections": list(getattr(spec, "collections", None) or ()),
    }


def _prose(env: dict[str, Any]) -> Iterable[str]:
    yield str(env.get("name") or "")
    yield str(env.get("description") or "")
    for tool in env.get("tools") or []:
        yield str(tool.get("description") or "")
        props = (tool.get("parameters") or {}).get("properties") or {}
        for p in props.values():
            if isinstance(p, dict):
                yield from (str(p.get(k) or "") for k in _PROSE_KEYS)


def build_api_words(root: Path, min_envs: int = 2) -> list[str]:
    """Words (lower-case, not in the dictionary, 2+ letters) that the prose of at least
    ``min_envs`` environments under ``root`` uses. Written in camelCase in the prose, a
    word is an identifier, not prose, and is left out."""
    import orjson

    english = _dictionary() - frozenset(_DATA.read_text().split() if _DATA.exists() else [])
    seen: Counter[str] = Counter()
    for path in sorted(root.glob("*/env.json")):
        env = orjson.loads(path.read_bytes())
        text = " ".join(_prose(env))
        seen.update({w.lower() for w in _WORD.findall(text) if w[1:] == w[1:].lower()})
    return sorted(w for w, n in seen.items() if n >= min_envs and len(w) > 1 and w not in english)


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    found = build_api_words(Path(sys.argv[1] if len(sys.argv) > 1 else "envs_generated"))
    _DATA.write_text("\n".join(found) + "\n")
    print(f"{len(found)} words -> {_DATA}")
