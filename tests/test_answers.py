"""Answer checks: correct paraphrases pass, gamed answers (lists, dumps, hedges) fail."""

from __future__ import annotations

import re
import timeit
from datetime import date, datetime, timedelta, timezone

import pytest

from agentworld_gym.verifiers.answers import (
    KINDS,
    AnswerResult,
    Expected,
    check_answer,
    competitor_pool,
    dates_in,
    infer_kind,
    mentions_text,
    normalise,
    numbers_in,
    polarity,
    tokens,
)


def values(text: str) -> list[float]:
    return [m.value for m in numbers_in(text)]


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,234", [1234]),
        ("1,234.5", [1234.5]),
        ("-3", [-3]),
        ("(-3)", [-3]),
        ("3.0", [3]),
        (".5", [0.5]),
        ("It was 3.5.", [3.5]),
        ("1.5k", [1500]),
        ("1.5K", [1500]),
        ("2m", [2_000_000]),
        ("2M", [2_000_000]),
        ("2 million", [2_000_000]),
        ("1.2bn", [1_200_000_000]),
        ("1.2 billion", [1_200_000_000]),
        ("3 thousand", [3000]),
        ("1.5 thousand", [1500]),
        ("2 hundred thousand", [200_000]),
        ("2 dozen", [24]),
        ("$1.5k", [1500]),
        ("€1,200", [1200]),
        ("£3", [3]),
        ("USD 40", [40]),
        ("40 USD", [40]),
        ("50%", [50]),
        ("#12", [12]),
        ("1st", [1]),
        ("the 2nd and 21st", [2, 21]),
        ("5kg", [5]),
        ("3-year-old", [3]),
        ("2-3 people", [2, 3]),
        ("1,2,3", [1, 2, 3]),
        ("x=3", [3]),
        ("４２ items", [42]),
    ],
)
def test_numbers_in_reads_digit_forms(text: str, expected: list[float]) -> None:
    assert values(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("zero", [0]),
        ("nineteen", [19]),
        ("fourteen", [14]),
        ("ninety", [90]),
        ("twenty-one", [21]),
        ("twenty one", [21]),
        ("a hundred", [100]),
        ("one hundred and five", [105]),
        ("three thousand", [3000]),
        ("two thousand and twenty", [2020]),
        ("a dozen", [12]),
        ("fifteen hundred", [1500]),
        ("a thousand and one", [1001]),
        ("Three of them", [3]),
        ("THREE", [3]),
        ("one two three", [1, 2, 3]),  # a list, not 6 or 123
        ("twenty, one", [20, 1]),
        ("one", [1]),
        ("exactly one task", [1]),
    ],
)
def test_numbers_in_reads_number_words(text: str, expected: list[float]) -> None:
    assert values(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "wor_86ac888005",
        "v2",
        "evt-1785920580",
        "abc123",
        "123abc",
        "Q3",
        "550e8400-e29b-41d4-a716-446655440000",
        "none",
        "no items",
        "hundred",  # a bare scale word is no number
        "the one that matches",
        "one of them",
        "Only one of them",
        "that one",
        "no one",
        "one's own",
        "someone",
        "often",
        "at 12:33",
        "at 3 pm",
        "12:33:07",
        "2025-12-05",
        "2025-12-05T12:33:00.000Z",
        "December 5, 2025",
        "05.12.2025",
    ],
)
def test_numbers_in_skips_ids_pronouns_dates_and_times(text: str) -> None:
    assert values(text) == []


def test_numbers_in_masks_dates_but_keeps_the_other_numbers() -> None:
    assert values("Due 2025-12-05 12:33, 3 items, at 14:00 add 4") == [3, 4]


def test_numbers_in_masks_numbered_list_markers_only_in_a_list() -> None:
    assert values("1. Ada\n2. Bob has 3") == [3]
    assert values("3. That is all") == [3]  # one marker: a claim, not a list


def test_number_mentions_carry_their_span() -> None:
    text = "It costs $1.5k or -3 at most"
    spans = [text[m.start : m.end] for m in numbers_in(text)]
    assert spans == ["1.5k", "-3"]
    assert all(m.kind == "number" and m.precision == "" for m in numbers_in(text))


# --------------------------------------------------------------------------- dates


@pytest.mark.parametrize(
    ("text", "when", "precision"),
    [
        ("2025-12-05", "2025-12-05 00:00:00", "day"),
        ("2025-12-05T12:33:00Z", "2025-12-05 12:33:00", "second"),
        ("2025-12-05T12:33:00.000Z", "2025-12-05 12:33:00", "second"),
        ("2025-12-05 12:33", "2025-12-05 12:33:00", "minute"),
        ("2025-12-05T12:33:00+02:00", "2025-12-05 10:33:00", "second"),
        ("2025-12-05T00:30:00+02:00", "2025-12-04 22:30:00", "second"),
        ("2025-12-05 12:33:00+00:00", "2025-12-05 12:33:00", "second"),
        ("2025/12/05", "2025-12-05 00:00:00", "day"),
        ("12/05/2025", "2025-12-05 00:00:00", "day"),  # US month/day
        ("13/05/2025", "2025-05-13 00:00:00", "day"),  # first part > 12: day/month
        ("05.12.2025", "2025-12-05 00:00:00", "day"),  # day.month.year
        ("December 5, 2025", "2025-12-05 00:00:00", "day"),
        ("Dec 5 2025", "2025-12-05 00:00:00", "day"),
        ("DEC. 5th, 2025", "2025-12-05 00:00:00", "day"),
        ("5 December 2025", "2025-12-05 00:00:00", "day"),
        ("5 Dec, 2025", "2025-12-05 00:00:00", "day"),
        ("5th of December 2025", "2025-12-05 00:00:00", "day"),
        ("December 5, 2025 12:33", "2025-12-05 12:33:00", "minute"),
        ("December 5, 2025 12:33:07", "2025-12-05 12:33:07", "second"),
        ("Dec 5 2025 12:33 PM", "2025-12-05 12:33:00", "minute"),
        ("Dec 5 2025 at 12:33 pm", "2025-12-05 12:33:00", "minute"),
        ("5 December 2025 at 3 pm", "2025-12-05 15:00:00", "minute"),
        ("December 5, 2025 at 12:00 a.m.", "2025-12-05 00:00:00", "minute"),
        ("2025-12-05 12:33 UTC", "2025-12-05 12:33:00", "minute"),
        ("2025-12-05 12:33 UTC+2", "2025-12-05 10:33:00", "minute"),
        ("2025-12-05 25:00", "2025-12-05 00:00:00", "day"),  # bad time: the day stands
    ],
)
def test_dates_in_reads_every_format(text: str, when: str, precision: str) -> None:
    (mention,) = dates_in(f"It was {text}.")
    assert mention.kind == "date"
    assert str(mention.value) == when
    assert mention.precision == precision
    assert mention.value.tzinfo is None


@pytest.mark.parametrize(
    "text", ["2025-13-05", "2025-02-30", "2020-2025", "xdec 5 2025", "v2025-12-05"]
)
def test_dates_in_refuses_non_dates(text: str) -> None:
    assert dates_in(text) == []


def test_dates_in_finds_several_in_order_with_spans() -> None:
    text = "from 2025-12-05 to Dec 7, 2025"
    found = dates_in(text)
    assert [text[d.start : d.end] for d in found] == ["2025-12-05", "Dec 7, 2025"]


@pytest.mark.parametrize(
    ("answer", "met"),
    [
        ("2025-12-05", True),  # day precision matches any time that day
        ("2025-12-05 12:33", True),
        ("December 5, 2025 at 12:33 PM", True),
        ("12/05/2025", True),
        ("2025-12-05T14:33:00+02:00", True),  # the same instant
        ("2025-12-05 12:34", False),
        ("2025-12-06", False),
    ],
)
def test_date_matches_at_the_mentions_precision(answer: str, met: bool) -> None:
    assert check_answer(answer, [Expected("2025-12-05T12:33:00.000Z")]).met is met


def test_day_precision_expected_matches_an_answer_with_a_time() -> None:
    assert check_answer("2025-12-05 23:59", [Expected("2025-12-05")]).met


def test_expected_date_objects_are_accepted() -> None:
    aware = datetime(2025, 12, 5, 14, 33, tzinfo=timezone(timedelta(hours=2)))
    assert check_answer("2025-12-05 12:33", [Expected(aware)]).met
    assert check_answer("Dec 5, 2025", [Expected(date(2025, 12, 5))]).met


# --------------------------------------------------------------------------- text


def test_normalise_drops_case_markdown_quotes_and_spacing() -> None:
    assert normalise('  **"Religious   Indeed"**. ') == "religious indeed"
    assert normalise("`code` _emph_ wor_86ac") == "code emph wor_86ac"


@pytest.mark.parametrize(
    "text",
    [
        'The query statement is **"religious indeed".**',
        "_italic_ wor_86ac888005 evt-1785920580",
        "Ünïcödé STRASSE straße ＡＢＣ",
        "it's “quoted” and `ticked`",
    ],
)
def test_tokens_are_the_words_of_the_normalised_text(text: str) -> None:
    assert tokens(text) == tuple(re.findall(r"\w+", normalise(text)))


def test_tokens_keep_inner_underscores_and_split_hyphens() -> None:
    assert tokens("wor_86ac888005 evt-1785920580") == ("wor_86ac888005", "evt", "1785920580")


@pytest.mark.parametrize(
    ("answer", "value", "found"),
    [
        ('The query statement is **"religious indeed".**', "Religious indeed", True),
        ('"Religious Indeed"', "Religious indeed", True),
        ("ADA LOVELACE wrote it", "Ada Lovelace", True),
        ("adam", "ada", False),  # whole tokens only
        ("Lovelace, Ada", "Ada Lovelace", False),  # contiguous, in order
        ("id: wor_86ac888005.", "wor_86ac888005", True),
        ("id: wor_86ac888005x", "wor_86ac888005", False),
    ],
)
def test_mentions_text_is_whole_token_and_contiguous(answer: str, value: str, found: bool) -> None:
    assert mentions_text(tokens(answer), value) is found


# --------------------------------------------------------------------------- booleans


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes", {True}),
        ("yes.", {True}),
        ("True", {True}),
        ("y", {True}),
        ("N", {False}),
        ("No", {False}),
        ("false", {False}),
        ("That is correct", {True}),
        ("It is not true", {False}),
        ("not false", {True}),
        ("It isn't", {False}),
        ("It doesnt", {False}),
        ("There are no overdue tasks", {False}),
        ("Never", {False}),
        ("It is.", {True}),
        ("It's archived", {True}),
        ("yes and no", {True, False}),
        ("The task is overdue", set()),
        ("x and y", set()),  # "y" counts only as the whole answer
    ],
)
def test_polarity(text: str, expected: set[bool]) -> None:
    assert polarity(text) == expected


@pytest.mark.parametrize(
    ("answer", "value", "met"),
    [
        ("Yes, it is.", True, True),
        ("No.", False, True),
        ("No.", True, False),
        ("Yes or no", True, False),
        ("It is not archived", False, True),
    ],
)
def test_bool_answers(answer: str, value: bool, met: bool) -> None:
    assert check_answer(answer, [Expected(value)]).met is met


def test_hedged_bool_scores_zero_with_a_reason() -> None:
    result = check_answer("Yes. Or no.", [Expected(True)])
    assert (result.score, result.met) == (0.0, False)
    assert result.reason == "asserts both yes and no"


# --------------------------------------------------------------------------- kinds


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (True, "bool"),
        (False, "bool"),
        (42, "number"),
        (3.5, "number"),
        ("42", "number"),
        ("-3.5", "number"),
        ("1,234", "number"),
        ("2025-12-05", "date"),
        ("2025-12-05T12:33:00.000Z", "date"),
        ("2025-12-05 12:33:00+00:00", "date"),
        (date(2025, 12, 5), "date"),
        (datetime(2025, 12, 5, 12, 33), "date"),
        ("2025-13-05", "text"),
        ("December 5, 2025", "text"),  # only ISO strings infer a date
        ("Ada Lovelace", "text"),
        ("v2", "text"),
        ("true", "text"),
        (None, "text"),
    ],
)
def test_infer_kind(value: object, kind: str) -> None:
    assert infer_kind(value) == kind
    assert kind in KINDS


def test_expected_resolves_and_validates_its_kind() -> None:
    assert Expected(42).kind == "number"
    assert Expected("42", kind="text").kind == "text"
    with pytest.raises(ValueError, match="unknown kind"):
        Expected(1, kind="integer")
    with pytest.raises(ValueError, match="tolerance"):
        Expected(1, tolerance=-1)


def test_unreadable_expected_value_raises() -> None:
    with pytest.raises(ValueError, match="does not read as one number"):
        check_answer("3", [Expected("three or four", kind="number")])
    with pytest.raises(ValueError, match="does not read as one date"):
        check_answer("3", [Expected("soon", kind="date")])


# --------------------------------------------------------------------------- check_answer


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("3", Expected(3)),
        ("Three of them", Expected(3)),
        ("fourteen", Expected(14)),
        ("There are fourteen.", Expected("14")),
        ("$1.5k", Expected(1500)),
        ("1,500", Expected(1500)),
        ("1500.00", Expected(1500)),
        ("fifteen hundred", Expected(1500)),
        ("1.5 thousand", Expected(1500)),
        ("1,234 users", Expected("1,234")),
        ("about 3.2", Expected(3, tolerance=0.5)),
        ("-3 degrees", Expected(-3)),
        ("2025-12-05 12:33", Expected("2025-12-05T12:33:00.000Z")),
        ('"Religious Indeed"', Expected("Religious indeed")),
        ("The owner is **Ada Lovelace**.", Expected("Ada Lovelace")),
        ("Yes", Expected(True)),
    ],
)
def test_correct_answers_written_differently_pass(answer: str, expected: Expected) -> None:
    result = check_answer(answer, [expected])
    assert (result.score, result.met, result.reason) == (1.0, True, "found 1/1")
    assert result.found == (expected.value,)


def test_partial_answer_scores_the_fraction_found() -> None:
    result = check_answer("Ada did it", [Expected("Ada"), Expected("Bob")])
    assert (result.score, result.met) == (0.5, False)
    assert result.found == ("Ada",)
    assert result.missing == ("Bob",)
    assert result.reason == "missing ['Bob'] (found 1/2)"


def test_wrong_number_is_missing_and_extra() -> None:
    result = check_answer("4", [Expected(3)])
    assert (result.score, result.met) == (0.0, False)
    assert result.missing == (3,)
    assert result.extra == (4.0,)


def test_empty_expected_list_is_met() -> None:
    assert check_answer("anything", []) == AnswerResult(1.0, True, "nothing asked")


def test_several_kinds_at_once() -> None:
    answer = "Ada Lovelace owns 3 of them, due 2025-12-05; yes, overdue."
    expected = [Expected("Ada Lovelace"), Expected(3), Expected("2025-12-05"), Expected(True)]
    result = check_answer(answer, expected)
    assert (result.score, result.met) == (1.0, True)
    assert result.reason == "found 4/4"


# --------------------------------------------------------------------------- exclusivity


@pytest.mark.parametrize(
    "answer",
    [
        "0 1 2 3 4 5 6 7 8 9 10 11",
        "It is one of 0, 1, 2, 3 or 4",
        "3 or 4",
        "between 2 and 3",
        "There are 3 (out of 10)",
        "three, maybe four",
    ],
)
def test_listing_other_numbers_scores_zero(answer: str) -> None:
    result = check_answer(answer, [Expected(3)])
    assert (result.score, result.met) == (0.0, False)
    assert result.found == (3,)
    assert result.reason.startswith("also asserts numbers [")
    assert result.reason.endswith("not asked")


def test_constant_list_reason_names_the_extra_numbers() -> None:
    result = check_answer("0 1 2 3 4 5 6 7 8 9 10 11", [Expected(3)])
    assert result.extra == (0.0, 1.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0)
    assert result.reason == (
        "also asserts numbers [0.0, 1.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0] and 3 more not asked"
    )


def test_two_numbers_reason_is_exact() -> None:
    result = check_answer("3, 5 or 7", [Expected(3)])
    assert result.reason == "also asserts numbers [5.0, 7.0] not asked"


def test_numbers_from_the_request_may_be_repeated() -> None:
    answer = "There are 3 (out of 10)"
    assert not check_answer(answer, [Expected(3)]).met
    assert check_answer(answer, [Expected(3)], request="How many of the 10 tasks are done?").met


def test_numbers_inside_a_found_expected_text_are_allowed() -> None:
    expected = [Expected("Amber beacon 359"), Expected(3)]
    assert check_answer("Amber beacon 359 has 3 lamps", expected).met
    result = check_answer("Amber beacon 360 has 3 lamps", expected)
    assert not result.met
    assert result.extra == (360.0,)


def test_numbers_inside_an_expected_text_count_only_when_it_is_found() -> None:
    result = check_answer("beacon 359 has 3 lamps", [Expected("Amber beacon 359"), Expected(3)])
    assert (result.score, result.met) == (0.0, False)
    assert result.extra == (359.0,)


def test_exclusive_false_only_counts_what_is_found() -> None:
    result = check_answer("0 1 2 3 4 5 6 7 8 9 10 11", [Expected(3)], exclusive=False)
    assert (result.score, result.met) == (1.0, True)
    assert check_answer("Yes and no", [Expected(True)], exclusive=False).met is False


def test_numbers_are_only_policed_when_a_number_is_asked() -> None:
    assert check_answer("Ada, with 3 tasks and 7 notes", [Expected("Ada")]).met


def test_ids_in_the_answer_are_no_competing_numbers() -> None:
    assert check_answer("3 (wor_86ac888005, evt-1785920580, v2)", [Expected(3)]).met


def test_other_dates_score_zero_unless_in_the_request() -> None:
    expected = [Expected("2025-12-05")]
    result = check_answer("on 2025-12-05 or 2025-12-06", expected)
    assert (result.score, result.met) == (0.0, False)
    assert result.reason == "also asserts dates ['2025-12-06'] not asked"
    assert result.extra == (datetime(2025, 12, 6),)
    request = "Was it moved from December 6, 2025?"
    assert check_answer("on 2025-12-05, moved from 2025-12-06", expected, request=request).met


def test_dates_in_a_number_answer_are_not_policed() -> None:
    assert check_answer("3, as of 2025-12-05", [Expected(3)]).met


POOL = competitor_pool(
    [
        {"id": "wor_86ac888005", "name": "Amber beacon 359", "zone": "North wing"},
        {"id": "wor_11aa22bb33", "name": "Amber beacon 360", "zone": "South wing"},
        {"id": "evt-1785920580", "name": "Blue gate 12", "status": "completed"},
    ]
)


def test_dump_with_competitors_from_the_pool_scores_zero() -> None:
    answer = "Amber beacon 359, Amber beacon 360, Blue gate 12"
    result = check_answer(answer, [Expected("Amber beacon 359")], pool=POOL)
    assert (result.score, result.met) == (0.0, False)
    assert result.found == ("Amber beacon 359",)
    assert result.reason == "also names 'Amber beacon 360' (another value in the data)"
    assert result.extra == ("Amber beacon 360",)


def test_competitor_ids_are_caught_including_hyphenated_ones() -> None:
    result = check_answer("It is evt-1785920580 or 3", [Expected(3)], pool=POOL)
    assert not result.met
    assert "also names 'evt-1785920580'" in result.reason


@pytest.mark.parametrize(
    ("answer", "request_text"),
    [
        ("**Amber beacon 359**.", ""),  # the value itself
        ("Amber beacon 359, not Amber beacon 360", "Is it Amber beacon 359 or Amber beacon 360?"),
        ("Amber beacon 359 is completed", "Which beacon is completed?"),
    ],
)
def test_pool_hits_that_were_asked_or_named_in_the_request_are_allowed(
    answer: str, request_text: str
) -> None:
    result = check_answer(answer, [Expected("Amber beacon 359")], request=request_text, pool=POOL)
    assert result.met, result.reason


def test_pool_entries_inside_or_around_the_expected_value_are_allowed() -> None:
    pool = frozenset({"beacon 359", "amber beacon 359 north", "amber beacon 360"})
    assert check_answer("Amber beacon 359 north", [Expected("Amber beacon 359")], pool=pool).met
    assert check_answer(
        "Amber beacon 359 (beacon 359)", [Expected("Amber beacon 359")], pool=pool
    ).met
    assert check_answer("Amber beacon 359", [Expected("Amber beacon 359")], pool=pool).met


def test_long_single_words_in_the_pool_count_unless_the_request_used_them() -> None:
    expected = [Expected("Amber beacon 359")]
    result = check_answer("Amber beacon 359 is completed", expected, pool=POOL)
    assert result.extra == ("completed",)
    assert check_answer(
        "Amber beacon 359 is completed", expected, pool=POOL, request="Completed?"
    ).met


def test_competitor_names_the_first_one_in_the_answer() -> None:
    answer = "Blue gate 12 then Amber beacon 360 then Amber beacon 359"
    result = check_answer(answer, [Expected("Amber beacon 359")], pool=POOL)
    assert result.extra == ("Blue gate 12",)


def test_without_a_pool_text_competitors_are_not_checked() -> None:
    answer = "Amber beacon 359, Amber beacon 360"
    assert check_answer(answer, [Expected("Amber beacon 359")]).met


def test_long_answers_are_scanned_in_full() -> None:
    answer = "filler " * 5000 + "Amber beacon 359 and Amber beacon 360"
    assert not check_answer(answer, [Expected("Amber beacon 359")], pool=POOL).met


# --------------------------------------------------------------------------- competitor_pool


def test_competitor_pool_keeps_candidate_names_and_ids() -> None:
    data = {
        "records": [
            {"id": "wor_86ac888005", "name": "Amber beacon 359", "tags": ["Quiet zone", "lamp"]},
            {
                "id": "evt-1785920580",
                "title": "Religious indeed",
                "nested": {"deep": ["Analytics"]},
            },
        ],
        "count": 3,
        "flag": True,
    }
    pool = competitor_pool([data])
    assert pool == frozenset(
        {
            "wor_86ac888005",
            "amber beacon 359",
            "quiet zone",
            "evt 1785920580",
            "religious indeed",
            "analytics",
        }
    )


@pytest.mark.parametrize(
    "leaf",
    [
        "42",  # a number
        "1,234.5",
        "$1.5k",
        "twenty-one",
        "2025-12-05T12:33:00.000Z",  # a date
        "December 5, 2025",
        "05.12.2025 12:33",
        "true",  # a boolean word
        "yes",
        "ab",  # shorter than 3 characters
        "x" * 121,  # longer than 120
        " ".join(["word"] * 13),  # more than 12 tokens
        "lamp",  # one short plain token
        "open",
        "!!!",  # no tokens at all
    ],
)
def test_competitor_pool_drops_non_candidates(leaf: str) -> None:
    assert competitor_pool([leaf]) == frozenset()


@pytest.mark.parametrize(
    ("leaf", "entry"),
    [
        ("completed", "completed"),  # one token of 8+ characters
        ("abc123", "abc123"),  # one token with a digit
        ("snake_case", "snake_case"),  # one token with an underscore
        ("Blue Gate", "blue gate"),  # several tokens
        (" ".join(["word"] * 12), " ".join(["word"] * 12)),
    ],
)
def test_competitor_pool_keeps_candidates(leaf: str, entry: str) -> None:
    assert competitor_pool([leaf]) == frozenset({entry})


# --------------------------------------------------------------------------- speed


def test_speed_smoke() -> None:
    """Prints the cost of one check (run with -s); asserts only the result, never a time."""
    pool = competitor_pool(
        [{"id": f"wor_{i:010x}", "name": f"Amber beacon {i}"} for i in range(1000)]
    )
    answer = (
        "After checking the records, the beacon you asked about is Amber beacon 359, which has "
        "3 lamps and was last serviced on 2025-12-05 at 12:33; it is the only one that matches."
    )
    expected = [Expected("Amber beacon 359"), Expected(3)]
    assert check_answer(answer, expected, pool=pool).met
    n = 200
    seconds = timeit.timeit(lambda: check_answer(answer, expected, pool=pool), number=n)
    print(f"check_answer: {seconds / n * 1e6:.1f} us per call (pool of {len(pool)})")
