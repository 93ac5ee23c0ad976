"""Final-answer checks that accept correct paraphrases and refuse gamed answers.

An RL policy learns to exploit loose checks: "0 1 2 3 ... 11" contains the number 3, and a
dump of every value it saw contains the right name. A strict string compare, on the other
hand, refuses "Three of them", "$1.5k" or "2025-12-05 12:33". :func:`check_answer` parses
what the answer *claims* (numbers, dates, yes/no, names) and scores it against the expected
values; with ``exclusive=True`` (the default) an answer that also claims competing values of
the same kind scores 0.

Decisions (each one is tested in ``tests/test_answers.py``):

Numbers (:func:`numbers_in`)
    * Digits with thousands commas ("1,234.5"), a leading "-" sign, ".5", glued scale suffixes
      ``k``/``m``/``bn`` (any case), spaced scale words ("2 million", "1.5 thousand",
      "2 dozen"), currency signs or codes around the number (they are ignored) and "50%"
      (= 50). "1,5" is *not* a decimal comma: it reads as 1 and 5.
    * Ordinals "1st", "2nd", "21st" are the numbers 1, 2, 21 (they are numeric claims);
      ordinal *words* ("first", "second") are not numbers ("a second" is ambiguous).
    * "#12" is the number 12. Glued units ("5kg", "10km", "3x", "5s") keep the number.
    * Digits glued to letters or underscores are part of an identifier and are not numbers:
      "wor_86ac888005", "v2", "abc123", "123abc", "evt-1785920580" (letters, then a hyphen),
      and every part of a UUID. "3-year-old" is 3; "2-3" is 2 and 3 (a range, not -3).
    * Digits inside dates and clock times ("12:33", "3 pm") are not numbers: dates and times
      are found first and their spans masked. Numbered-list markers at the start of a line
      ("1. ", "2) ") are masked when the answer has at least two of them.
    * Number words: zero..nineteen, the tens, "twenty-one"/"twenty one", "a hundred",
      "one hundred and five", "fifteen hundred", "three thousand", "a dozen". A run of unit
      words is a list ("one two three" is 1, 2, 3). "none" and "no X" are *not* 0 (too often
      not a count). A lone "one" is a pronoun, not 1, when followed by of/that/which/who/
      whom/whose/another/'s or preceded by the/this/that/which/each/every/any/no/some/another/
      what ("the one that", "one of them"); "only one of them" therefore does not claim 1.

Dates (:func:`dates_in`)
    ISO ("2025-12-05", with "T" or a space and a time, fractions, "Z" or "+02:00"),
    "2025/12/05", "12/05/2025" (month/day unless the first part is > 12, then day/month),
    "05.12.2025" (day.month.year), "December 5, 2025", "Dec. 5th 2025", "5 December 2025",
    "5th of Dec, 2025"; each optionally followed by a time ("12:33", "12:33:07", "12:33 PM",
    "at 3 pm", "12:33 UTC", "UTC+2"). Values are naive UTC datetimes (offsets converted, a
    naive time taken as UTC); precision is "day", "minute" or "second". Two dates match when
    they are equal at the *coarser* of their two precisions, so "2025-12-05" and
    "2025-12-05 12:33" both match "2025-12-05T12:33:00.000Z", and "12:34" does not. An
    invalid time keeps the date at day precision; an invalid date is no date. A time written
    before the date ("12:33 on Dec 5, 2025") is not joined to it: the date has day precision.

Booleans (:func:`polarity`)
    Explicit words decide: yes/yeah/yep/true/correct -> True, no/nope/false/incorrect ->
    False, each flipped by a directly preceding "not" ("not true" -> False); "y"/"n" count
    only as the whole answer. Only when no explicit word occurs: a negation (not, never,
    cannot, "isn't", "doesnt", ...) -> {False}, else an affirmation ("it is", "it's",
    "there are", ...) -> {True}, else the empty set.

Text (:func:`tokens`, :func:`mentions_text`)
    Word tokens of the NFKC-casefolded text; quotes, markdown and punctuation fall away;
    underscores inside a word stay ("wor_86ac"), those around it are markdown and go. A value
    is found when its token sequence occurs contiguously ("ada" is not in "adam").

Exclusivity (``check_answer(..., exclusive=True)``)
    * numbers, when a number is expected: every number claimed must be within tolerance of an
      expected number, or occur in the request, or lie inside a found expected text value
      ("Amber beacon 359"); dates likewise when a date is expected;
    * booleans: polarity {True, False} fails;
    * text, when a ``pool`` is given: a contiguous 1..12-token n-gram of the answer that is in
      the pool is a competitor unless it is part of an expected *text* value's tokens, part
      of the request's tokens, or contains an expected text value. The answer is scanned in
      full (no token cap): the scan is linear, one dict look-up per token. Pool entries are
      normalised token strings ("amber beacon 359"), as :func:`competitor_pool` builds them.
      Any pool entry counts, so a status word such as "completed" (8+ characters) or the
      asked record's own id fails an answer that uses it, unless the request used it too.
    Any violation scores 0.0 with a reason; the found/missing tuples are still filled in.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from numbers import Real
from typing import Any

__all__ = [
    "KINDS",
    "AnswerResult",
    "Expected",
    "Mention",
    "check_answer",
    "competitor_pool",
    "dates_in",
    "infer_kind",
    "mentions_text",
    "normalise",
    "numbers_in",
    "polarity",
    "tokens",
]

KINDS = ("number", "date", "bool", "text")

_REL_TOL = 1e-9
_MAX_NGRAM = 12


# --------------------------------------------------------------------------- data types


@dataclass(frozen=True)
class Expected:
    """One value the answer must state; ``kind`` "" is resolved with :func:`infer_kind`."""

    value: Any
    kind: str = ""
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", infer_kind(self.value))
        elif self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}; expected one of {KINDS}")
        if not self.tolerance >= 0:  # also refuses NaN
            raise ValueError(f"tolerance must be >= 0, got {self.tolerance!r}")


@dataclass(frozen=True)
class Mention:
    """A number or date the text claims, with its span (offsets into the text)."""

    kind: str
    value: Any
    precision: str = ""
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class AnswerResult:
    """The score of one answer and a short reason a person can act on."""

    score: float
    met: bool
    reason: str
    found: tuple[Any, ...] = ()
    missing: tuple[Any, ...] = ()
    extra: tuple[Any, ...] = ()


# --------------------------------------------------------------------------- text


_WORD = re.compile(r"\w+")
_MARKUP = re.compile(r"[*`\"'“”„‟«»‹›‘’‚‛]|(?<!\w)_+|_+(?!\w)")
_EDGE_PUNCT = " .,;:!?"


def normalise(text: str) -> str:
    """NFKC, casefold, drop markdown (``*``, edge ``_``, backticks) and quotes, one space.

    Surrounding ``.,;:!?`` go too, so a sentence's full stop does not change the value.
    Underscores inside a word stay: ``wor_86ac`` is an id, ``_word_`` is emphasis.
    """
    text = _MARKUP.sub(" ", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(text.split()).strip(_EDGE_PUNCT)


def _spanned(text: str) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
    """Tokens as :func:`tokens` gives them, with each token's character span in ``text``."""
    toks: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    if text.isascii():
        for m in _WORD.finditer(text.lower()):
            tok = m.group()
            start, end = m.span()
            if "_" in tok:
                stripped = tok.strip("_")
                if not stripped:
                    continue
                start += len(tok) - len(tok.lstrip("_"))
                end = start + len(stripped)
                tok = stripped
            toks.append(tok)
            starts.append(start)
            ends.append(end)
    else:
        for m in _WORD.finditer(text):
            piece = unicodedata.normalize("NFKC", m.group()).casefold()
            for sub in _WORD.findall(piece):
                sub = sub.strip("_")
                if sub:
                    toks.append(sub)
                    starts.append(m.start())
                    ends.append(m.end())
    return tuple(toks), tuple(starts), tuple(ends)


@lru_cache(maxsize=8192)
def tokens(text: str) -> tuple[str, ...]:
    """Word tokens of ``normalise(text)``, i.e. ``re.findall(r"\\w+", normalise(text))``."""
    return _word_tokens(text)


def _word_tokens(text: str) -> tuple[str, ...]:
    """:func:`tokens` without the cache (answers are seen once); plain ASCII takes a fast path."""
    if text.isascii() and "_" not in text:
        return tuple(_WORD.findall(text.lower()))
    return _spanned(text)[0]


def _occurrences(haystack: tuple[str, ...], needle: tuple[str, ...]) -> list[int]:
    """Start indices where ``needle`` occurs contiguously in ``haystack``."""
    n = len(needle)
    if not n or n > len(haystack):
        return []
    first = needle[0]
    out: list[int] = []
    i = -1
    last = len(haystack) - n
    while True:
        try:
            i = haystack.index(first, i + 1, last + 1)
        except ValueError:
            return out
        if n == 1 or haystack[i : i + n] == needle:
            out.append(i)


def mentions_text(answer_tokens: tuple[str, ...], value: str) -> bool:
    """Whether ``value``'s tokens occur contiguously, as whole tokens, in ``answer_tokens``."""
    return bool(_occurrences(answer_tokens, tokens(value)))


# --------------------------------------------------------------------------- dates


_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?![a-z])\.?"
)
# Patterns run on lower-cased text and start with a digit or a letter, never with a
# look-behind: the regex engine then skips quickly to candidate positions (3-5x faster).
_AMPM = r"[ap]\.?m\.?(?!\w)"
_TIME_SEP = r"(?:t|[ \t]*,?[ \t]*(?:at[ \t]+)?)"
_HMS = r"(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,]\d+)?)?(?:[ \t]*(?P<ap>" + _AMPM + "))?"
_H_AMPM = r"(?P<h1>\d{1,2})[ \t]*(?P<ap1>" + _AMPM + ")"
_TZ = (
    r"(?:(?P<off>[+-]\d{2}(?::?\d{2})?)(?!\d)"  # glued offset: 12:33+02:00
    r"|[ \t]*(?:z|utc|gmt)(?P<off2>[+-]\d{1,2}(?::?\d{2})?)?(?!\w))"  # Z, UTC, GMT-5
)
_TIME = "(?:" + _TIME_SEP + "(?:" + _HMS + "|" + _H_AMPM + ")" + _TZ + "?)?"
_NB = r"(?<![\w/.:-]\d)"  # after the first digit: the date continues no id, path or number
_DATE_FORMS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (form, hint, re.compile(pattern + r"(?P<dend>)" + _TIME))
    for form, hint, pattern in (
        ("ymd", "-", r"(?P<y>\d" + _NB + r"\d{3})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?![\d-])"),
        ("ymd", "/", r"(?P<y>\d" + _NB + r"\d{3})/(?P<m>\d{1,2})/(?P<d>\d{1,2})(?![\d/])"),
        ("mdy", "/", r"(?P<a>\d" + _NB + r"\d?)/(?P<b>\d{1,2})/(?P<y>\d{4})(?![\d/])"),
        ("ymd", ".", r"(?P<d>\d" + _NB + r"\d?)\.(?P<m>\d{1,2})\.(?P<y>\d{4})(?!\d|\.\d)"),
        (
            "month",
            "",
            _MONTH + r"[ \t]+(?P<d>\d{1,2})(?!\d)(?:st|nd|rd|th)?,?[ \t]+(?P<y>\d{4})(?!\d)",
        ),
        (
            "month",
            "",
            r"(?P<d>\d(?<!\w\d)\d?)(?!\d)(?:st|nd|rd|th)?[ \t]+(?:of[ \t]+)?" + _MONTH
            + r",?[ \t]+(?P<y>\d{4})(?!\d)",
        ),
    )
)  # fmt: skip
_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2}))?")
_HAS_DIGIT = re.compile(r"\d")
_MONTH_HINT = re.compile("|".join(_MONTHS))
_HAS_YEAR = re.compile(r"\d{4}")  # every date form has a four-digit year: a cheap pre-check
_PRECISION_RANK = {"day": 0, "minute": 1, "second": 2}


def _lower(text: str) -> str:
    """NFKC and lower case, keeping the length, so spans found in it hold for ``text``.

    Characters whose compatibility form is longer ("½", "ﬁ") stay as they are.
    """
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).lower()
    if len(folded) == len(text):
        return folded
    out = []
    for char in text:
        one = unicodedata.normalize("NFKC", char).lower()
        out.append(one if len(one) == 1 else char)
    return "".join(out)


def _time_of(m: re.Match[str]) -> tuple[int, int, int, str, int] | None:
    """(hour, minute, second, precision, offset minutes) of a date match's time, if valid."""
    if m["h"] is not None:
        hour, minute, ampm = int(m["h"]), int(m["mi"]), m["ap"]
        second, precision = (int(m["s"]), "second") if m["s"] is not None else (0, "minute")
    elif m["h1"] is not None:
        hour, minute, second, ampm, precision = int(m["h1"]), 0, 0, m["ap1"], "minute"
    else:
        return None
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm[0] == "p" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    offset = 0
    raw = m["off"] or m["off2"]
    if raw:
        om = _OFFSET.fullmatch(raw)
        if om is None or int(om[2]) > 14 or int(om[3] or 0) > 59:
            return None
        offset = (int(om[2]) * 60 + int(om[3] or 0)) * (-1 if om[1] == "-" else 1)
    return hour, minute, second, precision, offset


def _date_of(form: str, m: re.Match[str]) -> Mention | None:
    """The mention a date match stands for, or None when it is no calendar date."""
    if form == "mdy":
        a, b = int(m["a"]), int(m["b"])
        month, day = (b, a) if a > 12 else (a, b)
    elif form == "month":
        month, day = _MONTHS[m["mon"][:3]], int(m["d"])
    else:
        month, day = int(m["m"]), int(m["d"])
    try:
        value = datetime(int(m["y"]), month, day)
    except ValueError:
        return None
    time = _time_of(m)
    if time is not None:
        hour, minute, second, precision, offset = time
        try:
            moment = value.replace(hour=hour, minute=minute, second=second)
            return Mention("date", moment - timedelta(minutes=offset), precision, *m.span())
        except OverflowError:  # an offset across year 1 or 9999
            pass
    return Mention("date", value, "day", m.start(), m.end("dend"))


def _scan_dates(low: str) -> list[Mention]:
    found: list[Mention] = []
    month_hint: bool | None = None
    for form, hint, pattern in _DATE_FORMS:
        if hint and hint not in low:
            continue
        if not hint:
            if month_hint is None:
                month_hint = _MONTH_HINT.search(low) is not None
            if not month_hint:
                continue
        for m in pattern.finditer(low):
            if m.start() and low[m.start() - 1].isalnum():  # "xdec 5 2025": no month name
                continue
            mention = _date_of(form, m)
            if mention is not None:
                found.append(mention)
    if len(found) < 2:
        return found
    found.sort(key=lambda d: (d.start, -d.end))
    kept: list[Mention] = []
    for mention in found:
        if not kept or mention.start >= kept[-1].end:
            kept.append(mention)
    return kept


@lru_cache(maxsize=512)
def _dates(text: str) -> tuple[Mention, ...]:
    if not _HAS_YEAR.search(text):
        return ()
    return tuple(_scan_dates(_lower(text)))


def dates_in(text: str) -> list[Mention]:
    """Every date the text states, in order (formats and precision: see the module doc)."""
    return list(_dates(text))


def _truncate(value: datetime, precision: str) -> datetime:
    if precision == "day":
        return value.replace(hour=0, minute=0, second=0, microsecond=0)
    if precision == "minute":
        return value.replace(second=0, microsecond=0)
    return value.replace(microsecond=0)


def _same_date(a: datetime, a_precision: str, b: datetime, b_precision: str) -> bool:
    """Equal at the coarser of the two precisions ("2025-12-05" matches any time that day)."""
    precision = min(a_precision, b_precision, key=_PRECISION_RANK.__getitem__)
    return _truncate(a, precision) == _truncate(b, precision)


def _format_date(value: datetime, precision: str) -> str:
    fmt = {"day": "%Y-%m-%d", "minute": "%Y-%m-%d %H:%M"}.get(precision, "%Y-%m-%d %H:%M:%S")
    return value.strftime(fmt)


# --------------------------------------------------------------------------- numbers


_DIGITS = re.compile(
    r"\d(?<![\d.]\d)(?:\d{0,2}(?:,\d{3})+|\d*)(?:\.\d+)?(?!\d)"  # 1,234.5  42  3.0
    r"|\.(?<![\w.]\.)\d+(?!\d)"  # .5
)
_CLOCK = re.compile(
    r"\d(?<![\w:.]\d)\d?:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?![\d:])(?:[ \t]*" + _AMPM + r")?"
    r"|\d(?<![\w.]\d)\d?[ \t]*" + _AMPM
)
_LIST_MARKER = re.compile(r"^[ \t]*(\d{1,3})[.)](?=[ \t]+\S)", re.M)
_RIGHT = re.compile(r"[\w\-−]*")
_RIGHT_SHAPE = re.compile(r"(?P<suf>[a-z]+)?(?P<tail>[-−][\w\-−]*)?")
_RANGE_LEFT = re.compile(r"[-−]?(?:\d+[-−])+")
_MAX_CHUNK = 256
"""Digits glued (letters, digits, ``_ - −``) to more than this many characters on one side are
part of an id, a hash or a blob, not a number; the bound keeps reading linear in the answer's
length (a 99,000-character ``1a-1a-...`` answer took minutes when every run of digits walked
its whole token)."""
_SCALE_WORD = re.compile(r"[ \t]+(hundred|thousand|million|billion|trillion|dozen)\b")
_SCALE_INITIALS = frozenset("htmbd")  # hundred thousand million billion dozen; "" is not in it
_SCALE_EXP = {"hundred": 2, "thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_SUFFIX_EXP = {"k": 3, "m": 6, "bn": 9}
_ORDINALS = frozenset({"st", "nd", "rd", "th"})
_UNITS = frozenset(
    "kg g mg lb lbs km cm mm ms s sec secs min mins h hr hrs gb mb kb tb x px pt".split()
)

_UNIT_WORDS = "one two three four five six seven eight nine".split()
_TEEN_WORDS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
_TENS_WORDS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_WORD_VALUES: dict[str, tuple[str, int]] = {
    "zero": ("zero", 0),
    **{w: ("unit", i) for i, w in enumerate(_UNIT_WORDS, 1)},
    **{w: ("teen", i) for i, w in enumerate(_TEEN_WORDS.split(), 10)},
    **{w: ("tens", 10 * i) for i, w in enumerate(_TENS_WORDS, 2)},
    "hundred": ("hundred", 100),
    "dozen": ("dozen", 12),
    "thousand": ("scale", 10**3),
    "million": ("scale", 10**6),
    "billion": ("scale", 10**9),
    "trillion": ("scale", 10**12),
}
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(sorted(_WORD_VALUES, key=len, reverse=True)) + r")\b")
_NEXT_WORD = re.compile(r"(?:[ \t]+|[ \t]*-[ \t]*)([^\W\d_]++)(?![\d_])")
_NEXT_WORD_SPACED = re.compile(r"[ \t]+([^\W\d_]++)(?![\d_])")
_PREV_WORD = re.compile(r"(?<!\w)([^\W\d_]+)[ \t]+\Z")
_ARTICLE_BEFORE = re.compile(r"(?<!\w)an?[ \t]+\Z")
_ONE_PRONOUN_AFTER = re.compile(r"['’]s\b|[ \t]+(?:of|that|which|who|whom|whose|another)\b")
_ONE_PRONOUN_BEFORE = frozenset("the this that which each every any no some another what".split())
_AFTER = {
    "unit": (None, "tens", "hundred", "scale"),
    "teen": (None, "hundred", "scale"),
    "tens": (None, "hundred", "scale"),
    "hundred": ("unit", "teen", "tens", "a"),
    "dozen": ("unit", "teen", "tens", "a"),
    "scale": ("unit", "teen", "tens", "hundred", "a"),
}  # which word kinds each kind may follow inside one number


def _mask_index(masks: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Mask starts in order, and the furthest end reached by the masks up to each one."""
    spans = sorted(masks)
    return [s for s, _ in spans], list(itertools.accumulate((e for _, e in spans), max))


def _masked(start: int, end: int, index: tuple[list[int], list[int]]) -> bool:
    """Whether ``[start, end)`` overlaps a mask: O(log masks) per run of digits, where a
    loop over the masks made an answer of thousands of dates quadratic (4 s for 99 kB)."""
    starts, reach = index
    i = bisect.bisect_left(starts, end)  # masks [0, i) start before ``end``
    return i > 0 and reach[i - 1] > start


def _tail_ok(rest: str) -> bool:
    """After "3-": a range ("3-5") or a plain word ("3-year-old"), never an id ("3-ab12")."""
    if "_" in rest:
        return False
    return all(c.isdigit() or c in "-−" for c in rest) or not any(c.isdigit() for c in rest)


def _glued(char: str) -> bool:
    """Whether ``char`` joins the digits next to it into one chunk (an id, a range, a unit)."""
    return char.isalnum() or char in "_-−"


def _chunk_start(low: str, start: int) -> int:
    """Where the glued token (see :func:`_glued`) that reaches ``start`` begins."""
    chunk = start
    while chunk > 0 and _glued(low[chunk - 1]):
        chunk -= 1
    return chunk


def _digit_number(low: str, m: re.Match[str], chunk: int | None = None) -> Mention | None:
    """The number a run of digits states, or None when it is part of an identifier;
    ``chunk``: where its glued token begins, when the caller knows."""
    start, end = m.span()
    if chunk is None:
        chunk = _chunk_start(low, start)
    if start - chunk > _MAX_CHUNK:
        return None
    sign = ""
    if chunk < start:
        left = low[chunk:start]
        if left in ("-", "−"):
            sign = "-"
        elif not _RANGE_LEFT.fullmatch(left):
            return None
    exponent, factor, suffix = 0, 1, ""
    if end < len(low) and _glued(low[end]):
        right = _RIGHT.match(low, end, end + _MAX_CHUNK + 1).group()
        if len(right) > _MAX_CHUNK:
            return None
        shape = _RIGHT_SHAPE.fullmatch(right)
        if shape is None:
            return None
        suffix, tail = shape["suf"] or "", shape["tail"]
        if suffix:
            if suffix in _SUFFIX_EXP:
                exponent = _SUFFIX_EXP[suffix]
            elif suffix not in _ORDINALS and suffix not in _UNITS:
                return None
        if tail and not _tail_ok(tail[1:]):
            return None
    stop = end + len(suffix)
    if not suffix and low[stop + 1 : stop + 2] in _SCALE_INITIALS:
        while scale := _SCALE_WORD.match(low, stop):
            if scale[1] == "dozen":
                factor *= 12
            else:
                exponent += _SCALE_EXP[scale[1]]
            stop = scale.end()
    digits = m.group().replace(",", "")
    value = (
        float(f"{sign}{digits}e{exponent}") * factor if exponent or factor != 1 else float(digits)
    )
    if sign:
        return Mention("number", -value, "", chunk, stop)
    return Mention("number", value, "", start, stop)


def _word_number(low: str, m: re.Match[str]) -> tuple[int, int, int] | None:
    """(value, start, end) of the number spelled from number word ``m`` on, if it is one."""
    start, end = m.span()
    kind, value = _WORD_VALUES[m.group()]
    total, current, last, last_scale = 0, 0, None, math.inf
    if kind in ("hundred", "dozen", "scale"):  # "a hundred", "a dozen"; bare "hundred": no
        article = _ARTICLE_BEFORE.search(low, max(0, start - 4), start)
        if article is None:
            return None
        start, current, last = article.start(), 1, "a"
    stop = None
    position = end
    while kind is not None:
        if kind == "zero":
            if last is None:
                stop = position
            break
        if last not in _AFTER[kind]:
            break
        if kind in ("hundred", "dozen"):
            if current >= 100:
                break
            current *= value
        elif kind == "scale":
            if value >= last_scale:
                break
            total, current, last_scale = total + current * value, 0, value
        else:
            current += value
        last, stop = kind, position
        if kind == "dozen":
            break
        nxt = _NEXT_WORD.match(low, position)
        if nxt is None:
            break
        if nxt[1] == "and" and last in ("hundred", "scale"):
            nxt = _NEXT_WORD_SPACED.match(low, nxt.end())
            if nxt is None or _WORD_VALUES.get(nxt[1], ("",))[0] not in ("unit", "teen", "tens"):
                break
        kind, value = _WORD_VALUES.get(nxt[1], (None, 0))
        position = nxt.end()
    if stop is None:
        return None
    return total + current, start, stop


def _is_pronoun_one(low: str, start: int, end: int) -> bool:
    """A lone "one" that refers to a thing ("the one that", "one of them"), not a count."""
    if _ONE_PRONOUN_AFTER.match(low, end):
        return True
    prev = _PREV_WORD.search(low, max(0, start - 16), start)
    return prev is not None and prev[1] in _ONE_PRONOUN_BEFORE


def _masks(text: str, low: str) -> list[tuple[int, int]]:
    """Spans whose digits are no numbers: dates, clock times, numbered-list markers."""
    masks = [(d.start, d.end) for d in _dates(text)]
    if ":" in low or "am" in low or "pm" in low or "m." in low:
        masks.extend(m.span() for m in _CLOCK.finditer(low))
    if "\n" in text:
        markers = [m.span(1) for m in _LIST_MARKER.finditer(text)]
        if len(markers) >= 2:
            masks.extend(markers)
    return masks


@lru_cache(maxsize=512)
def _numbers(text: str) -> tuple[Mention, ...]:
    found: list[Mention] = []
    low = _lower(text)
    if _HAS_DIGIT.search(text):
        masks = _masks(text, low)
        index = _mask_index(masks)
        chunk, reached = 0, 0  # the glued token around ``reached`` begins at ``chunk``
        for m in _DIGITS.finditer(low):
            start = m.start()
            if _RIGHT.match(low, reached, start).end() < start:  # a break since ``reached``
                chunk = _chunk_start(low, start)
            reached = start  # each character is looked at O(1) times: linear in the text
            if masks and _masked(start, m.end(), index):
                continue
            mention = _digit_number(low, m, chunk)
            if mention is not None:
                found.append(mention)
    consumed = 0
    for m in _NUMBER_WORD.finditer(low):
        if m.start() < consumed:
            continue
        parsed = _word_number(low, m)
        if parsed is None:
            continue
        value, start, end = parsed
        if m.group() == "one" and end == m.end() and _is_pronoun_one(low, start, end):
            continue
        consumed = end
        found.append(Mention("number", float(value), "", start, end))
    found.sort(key=lambda n: n.start)
    return tuple(found)


def numbers_in(text: str) -> list[Mention]:
    """Every number the text claims, in order (what counts: see the module doc)."""
    return list(_numbers(text))


# --------------------------------------------------------------------------- booleans


_POSITIVE = frozenset({"yes", "yeah", "yep", "true", "correct"})
_NEGATIVE = frozenset({"no", "nope", "false", "incorrect"})
_NEGATORS = frozenset(
    "not never cannot neither nor isnt arent wasnt werent doesnt dont didnt hasnt havent hadnt "
    "cant wont wouldnt shouldnt couldnt".split()
)
_AFFIRMATIONS = frozenset(
    {
        ("it", "is"), ("it", "s"), ("it", "does"), ("it", "was"), ("it", "has"),
        ("there", "is"), ("there", "s"), ("there", "are"), ("they", "are"), ("they", "do"),
    }
)  # fmt: skip


def polarity(text: str) -> set[bool]:
    """The truth values the text asserts: {True}, {False}, both (a hedge) or none.

    Explicit yes/no/true/false words decide (a preceding "not" flips them); only without
    them does a negation mean {False} and an affirmation ("it is") mean {True}.
    """
    toks = _word_tokens(text)
    if len(toks) == 1 and toks[0] in ("y", "n"):
        return {toks[0] == "y"}
    out: set[bool] = set()
    for i, tok in enumerate(toks):
        if tok in _POSITIVE or tok in _NEGATIVE:
            out.add((tok in _POSITIVE) != (i > 0 and toks[i - 1] == "not"))
    if out:
        return out
    for i, tok in enumerate(toks):
        if tok in _NEGATORS or (tok == "t" and i > 0 and toks[i - 1].endswith("n")):
            return {False}
    if any(pair in _AFFIRMATIONS for pair in zip(toks, toks[1:], strict=False)):
        return {True}
    return set()


# --------------------------------------------------------------------------- kinds


_PLAIN_NUMBER = re.compile(r"[-+−]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)")
_ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?",
    re.I,
)
_BOOL_WORDS = {
    "true": True,
    "yes": True,
    "y": True,
    "1": True,
    "false": False,
    "no": False,
    "n": False,
    "0": False,
}


def infer_kind(value: Any) -> str:
    """bool, number (also a plain-number string), date (also an ISO-8601 string), else text."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Real):
        return "number"
    if isinstance(value, date):
        return "date"
    if isinstance(value, str):
        stripped = value.strip()
        if _ISO_DATE.fullmatch(stripped) and len(_dates(stripped)) == 1:
            return "date"
        if _PLAIN_NUMBER.fullmatch(stripped):
            return "number"
    return "text"


# --------------------------------------------------------------------------- expected values


@dataclass(frozen=True, slots=True)
class _Spec:
    """An expected value made ready to compare (parsed once, then cached)."""

    kind: str
    value: Any
    tolerance: float
    number: float = 0.0
    when: datetime | None = None
    precision: str = ""
    truth: bool = False
    toks: tuple[str, ...] = ()


@lru_cache(maxsize=4096)
def _expected_number(value: str) -> float:
    found = _numbers(value)
    if len(found) != 1:
        raise ValueError(f"expected number {value!r} does not read as one number")
    return found[0].value


@lru_cache(maxsize=4096)
def _expected_date(value: str) -> tuple[datetime, str]:
    found = _dates(value)
    if len(found) != 1:
        raise ValueError(f"expected date {value!r} does not read as one date")
    return found[0].value, found[0].precision


def _spec(e: Expected) -> _Spec:
    """Parse an expected value; raises ValueError when it cannot be read as its kind."""
    value, kind = e.value, e.kind
    if kind == "number":
        if isinstance(value, Real) and not isinstance(value, bool):
            number = float(value)
        else:
            number = _expected_number(str(value))
        return _Spec(kind, value, e.tolerance, number=number)
    if kind == "date":
        if isinstance(value, datetime):
            if value.tzinfo is not None:
                value = value.astimezone(UTC).replace(tzinfo=None)
            return _Spec(kind, e.value, 0.0, when=value, precision="second")
        if isinstance(value, date):
            return _Spec(
                kind, value, 0.0, when=datetime(value.year, value.month, value.day), precision="day"
            )
        when, precision = _expected_date(str(value))
        return _Spec(kind, value, 0.0, when=when, precision=precision)
    if kind == "bool":
        if isinstance(value, str):
            key = normalise(value)
            if key not in _BOOL_WORDS:
                raise ValueError(f"expected bool {value!r} is not a truth value")
            return _Spec(kind, value, 0.0, truth=_BOOL_WORDS[key])
        return _Spec(kind, value, 0.0, truth=bool(value))
    return _Spec(kind, value, 0.0, toks=tokens(str(value)))


_spec_cached = lru_cache(maxsize=4096)(_spec)
_HASHABLE = (str, int, float, bool, date, type(None))


# --------------------------------------------------------------------------- competitors


@lru_cache(maxsize=16)
def _pool_index(pool: frozenset[str]) -> dict[str, tuple[int, ...]]:
    """First token -> the token lengths of pool entries starting with it, longest first."""
    lengths: dict[str, set[int]] = {}
    for entry in pool:
        parts = entry.split(" ")
        if parts[0] and len(parts) <= _MAX_NGRAM:
            lengths.setdefault(parts[0], set()).add(len(parts))
    return {first: tuple(sorted(ns, reverse=True)) for first, ns in lengths.items()}


def _exempt(gram: tuple[str, ...], texts: list[tuple[str, ...]], request: tuple[str, ...]) -> bool:
    """A pool hit that is the asked value, part of it, or words the request itself used."""
    if _occurrences(request, gram):
        return True
    return any(_occurrences(value, gram) or _occurrences(gram, value) for value in texts if value)


def _competitor(
    atoks: tuple[str, ...],
    pool: frozenset[str],
    texts: list[tuple[str, ...]],
    request: tuple[str, ...],
) -> tuple[int, int] | None:
    """(token index, length) of the first pool value the answer names that was not asked."""
    index = _pool_index(pool)
    count = len(atoks)
    for i, tok in enumerate(atoks):
        lengths = index.get(tok)
        if lengths is None:
            continue
        for n in lengths:
            if i + n > count:
                continue
            gram = atoks[i : i + n]
            if (tok if n == 1 else " ".join(gram)) in pool and not _exempt(gram, texts, request):
                return i, n
    return None


def _only(mentions: tuple[Mention, ...], text: str) -> bool:
    """Whether ``text`` is one mention and nothing else but signs ("$1.5k", "Dec 5, 2025")."""
    if len(mentions) != 1:
        return False
    rest = text[: mentions[0].start] + text[mentions[0].end :]
    return _WORD.search(rest) is None


def _is_competitor_string(text: str) -> bool:
    """Whether a database string could name a candidate (the rule: :func:`competitor_pool`)."""
    if not 3 <= len(text.strip()) <= 120 or normalise(text) in _BOOL_WORDS:
        return False
    if _only(_dates(text), text) or _only(_numbers(text), text):
        return False
    toks = tokens(text)
    if not 1 <= len(toks) <= _MAX_NGRAM:
        return False
    if len(toks) == 1:
        tok = toks[0]
        return len(tok) >= 8 or "_" in tok or any(c.isdigit() for c in tok)
    return True


def competitor_pool(values: Iterable[Any]) -> frozenset[str]:
    """The strings in a database that could name a competing candidate, normalised.

    Walks nested dicts (their values), lists, tuples and sets; keeps a string leaf of 3..120
    characters and 1..12 tokens that is no number, date or boolean word (in any format this
    module reads: "$1.5k" and "Dec 5, 2025" are dropped too). A one-token string
    is kept only when it looks like an id (a digit or an underscore) or is >= 8 characters;
    "evt-1785920580" is two tokens and kept whole. Entries are ``" ".join(tokens(s))``.
    Build it once per database and reuse the object: :func:`check_answer` caches an index
    per pool.
    """
    out: set[str] = set()
    stack: list[Any] = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _is_competitor_string(item):
                out.add(" ".join(tokens(item)))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif isinstance(item, Iterable) and not isinstance(item, bytes | bytearray):
            stack.extend(item)
    return frozenset(out)


# --------------------------------------------------------------------------- the check


@lru_cache(maxsize=1024)
def _request_values(request: str) -> tuple[tuple[float, ...], tuple[Mention, ...]]:
    return tuple(n.value for n in _numbers(request)), _dates(request)


def _inside(mention: Mention, spans: list[tuple[int, int]]) -> bool:
    return any(start <= mention.start and mention.end <= end for start, end in spans)


def _close(a: float, b: float, tolerance: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL_TOL, abs_tol=tolerance)


def _dedupe(values: list[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def _shown(values: list[Any], limit: int = 8) -> str:
    """A short list for a reason: at most ``limit`` items, then how many more."""
    if len(values) <= limit:
        return repr(values)
    return f"{values[:limit]!r} and {len(values) - limit} more"


class _Answer:
    """The answer and what is read from it, each part computed once when first needed."""

    __slots__ = ("text", "_tokens", "_spans")

    def __init__(self, text: str) -> None:
        self.text = text
        self._tokens: tuple[str, ...] | None = None
        self._spans: tuple[tuple[int, ...], tuple[int, ...]] | None = None

    @property
    def tokens(self) -> tuple[str, ...]:
        if self._tokens is None:
            self._tokens = _word_tokens(self.text)
        return self._tokens

    def span(self, index: int, length: int) -> tuple[int, int]:
        """Character span of tokens ``index .. index + length - 1``."""
        if self._spans is None:
            if self.text.isascii() and "_" not in self.text:
                pairs = [m.span() for m in _WORD.finditer(self.text)]
                starts, ends = zip(*pairs, strict=True) if pairs else ((), ())
                self._spans = starts, ends
            else:
                _, starts, ends = _spanned(self.text)
                self._spans = starts, ends
        return self._spans[0][index], self._spans[1][index + length - 1]


def check_answer(
    answer: str,
    expected: Sequence[Expected],
    *,
    request: str = "",
    pool: frozenset[str] | None = None,
    exclusive: bool = True,
) -> AnswerResult:
    """Score ``answer`` by the expected values it states; refuse one that also states others.

    Args:
        answer: The agent's final text answer.
        expected: What was asked; the score is the fraction found.
        request: The task's instruction; numbers, dates and names it uses may be repeated.
        pool: Normalised candidate strings of the data (:func:`competitor_pool`).
        exclusive: Score 0 an answer that also claims unasked numbers, dates, both truth
            values or another candidate from ``pool``.

    Raises:
        ValueError: An expected value cannot be read as its kind (e.g. number "abc").
    """
    if not expected:
        return AnswerResult(1.0, True, "nothing asked")
    specs = [_spec_cached(e) if isinstance(e.value, _HASHABLE) else _spec(e) for e in expected]
    kinds = {s.kind for s in specs}
    read = _Answer(answer or "")
    numbers = _numbers(read.text) if "number" in kinds else ()
    dates = _dates(read.text) if "date" in kinds else ()
    truth = polarity(read.text) if "bool" in kinds else set()

    found: list[Any] = []
    missing: list[Any] = []
    text_hits: list[tuple[int, int]] = []  # (token index, length) of found text values
    for s in specs:
        if s.kind == "number":
            hit = any(_close(n.value, s.number, s.tolerance) for n in numbers)
        elif s.kind == "date":
            hit = any(_same_date(d.value, d.precision, s.when, s.precision) for d in dates)
        elif s.kind == "bool":
            hit = truth == {s.truth}
        else:
            starts = _occurrences(read.tokens, s.toks)
            text_hits.extend((i, len(s.toks)) for i in starts)
            hit = bool(starts)
        (found if hit else missing).append(s.value)

    if exclusive:
        problems, extra = _competing(read, specs, request, pool, numbers, dates, truth, text_hits)
        if problems:
            reason = "; ".join(problems)
            return AnswerResult(0.0, False, reason, tuple(found), tuple(missing), tuple(extra))
    total = len(specs)
    reason = f"found {len(found)}/{total}"
    if missing:
        reason = f"missing {_shown(missing)} ({reason})"
    return AnswerResult(len(found) / total, not missing, reason, tuple(found), tuple(missing))


def _competing(
    read: _Answer,
    specs: list[_Spec],
    request: str,
    pool: frozenset[str] | None,
    numbers: tuple[Mention, ...],
    dates: tuple[Mention, ...],
    truth: set[bool],
    text_hits: list[tuple[int, int]],
) -> tuple[list[str], list[Any]]:
    """Every competing claim the answer makes: (reasons, the claimed values)."""
    problems: list[str] = []
    extra: list[Any] = []
    request_numbers, request_dates = _request_values(request) if request else ((), ())
    spans: list[tuple[int, int]] | None = None

    def in_found_text(mention: Mention) -> bool:
        nonlocal spans
        if spans is None:
            spans = [read.span(i, n) for i, n in text_hits]
        return _inside(mention, spans)

    if numbers:
        asked = [(s.number, s.tolerance) for s in specs if s.kind == "number"]
        others = _dedupe(
            [
                n.value
                for n in numbers
                if not any(_close(n.value, v, tol) for v, tol in asked)
                and not any(_close(n.value, r, 0.0) for r in request_numbers)
                and not in_found_text(n)
            ]
        )
        if others:
            problems.append(f"also asserts numbers {_shown(others)} not asked")
            extra.extend(others)
    if dates:
        asked_dates = [(s.when, s.precision) for s in specs if s.kind == "date"]
        asked_dates.extend((r.value, r.precision) for r in request_dates)
        other_dates = [
            d
            for d in dates
            if not any(_same_date(d.value, d.precision, w, p) for w, p in asked_dates)
            and not in_found_text(d)
        ]
        if other_dates:
            shown = _dedupe([_format_date(d.value, d.precision) for d in other_dates])
            problems.append(f"also asserts dates {_shown(shown)} not asked")
            extra.extend(_dedupe([d.value for d in other_dates]))
    if truth == {True, False}:
        problems.append("asserts both yes and no")
        extra.extend((True, False))
    if pool and read.tokens:
        texts = [s.toks for s in specs if s.kind == "text"]
        hit = _competitor(read.tokens, pool, texts, tokens(request) if request else ())
        if hit is not None:
            start, end = read.span(*hit)
            named = read.text[start:end]
            problems.append(f"also names {named!r} (another value in the data)")
            extra.append(named)
    return problems, extra
