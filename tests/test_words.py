"""Which words a synthesized request may use (``synthesis.words``)."""

from __future__ import annotations

from agentworld_gym.synthesis.tasks.model import singular
from agentworld_gym.synthesis.words import known, prose_words, unknown


def test_identifier_fragments_are_not_words() -> None:
    for junk in ("dnse", "dbses", "bylatlong", "statuse", "upgradeo"):
        assert not known(junk), junk
    for word in ("webhook", "namespace", "invoices", "enabled", "processing", "sku", "2024"):
        assert known(word), word
    assert unknown("the dnse list of the webhook") == ["dnse"]


def test_singular_prefers_a_known_word() -> None:
    assert [singular(w) for w in ("statuses", "dnses", "databases", "addresses")] == [
        "status",
        "dns",
        "database",
        "address",
    ]


def test_an_environment_s_own_terms_are_known_to_its_requests() -> None:
    env = {
        "name": "App Service Plans",
        "description": "Manage Azure serverfarms.",
        "tools": [
            {"name": "AppServicePlans_ListWebApps", "description": "List web apps."},
            {"name": "Cancelthetransaction", "description": "Cancel a payment."},
        ],
        "collections": {"serverfarms": {}, "hybridconnectionrelays": {}, "byseller": {}},
    }
    words = prose_words(env)
    assert {"serverfarms", "app", "service", "plans"} <= words
    assert unknown("the serverfarm of the plan", words) == []
    # a phrase or a preposition glued to a noun is the API's spelling, not a term
    glued = "the cancelthetransaction of the hybridconnectionrelays byseller"
    assert unknown(glued, words) == ["cancelthetransaction", "hybridconnectionrelays", "byseller"]


def test_clitics_are_judged_by_their_word() -> None:
    text = "I'm sure the project's owner isn't done; don't wait, we'll see."
    assert unknown(text) == []
    assert unknown("the dnse's owner") == ["dnse's"]


def test_a_collection_noun_must_name_a_kind_of_thing():
    from agentworld_gym.synthesis.words import noun_reads

    assert noun_reads("question") and noun_reads("archived project") and noun_reads("speed")
    # a view of records or an operation is not a kind of thing ("the unanswereds", "add fulls")
    for bad in ("unanswered", "full", "create", "remove", "featured", "similar", "trending"):
        assert not noun_reads(bad), bad


def test_plurals_people_say():
    from agentworld_gym.synthesis.tasks.request.render import plural

    said = {
        "data": "data",
        "user data": "user data",
        "status": "statuses",
        "alias": "aliases",
        "analysis": "analyses",
        "settings": "settings",
        "company": "companies",
        "person": "people",
        "key": "keys",
    }
    assert {n: plural(n) for n in said} == said


def test_paging_fields_are_no_record_property():
    from agentworld_gym.synthesis.tasks.model import profile

    rows = [
        {"id": i, "totalSize": 10 * i, "per_page": 20 + i, "likes": 7 * i, "kind": "ab"[i % 2]}
        for i in range(6)
    ]
    prof = profile(rows, "id", {})
    assert prof.numeric == ["likes"]  # "total size over 82" is no condition a user states
    assert "per_page" not in prof.categorical and "kind" in prof.categorical
