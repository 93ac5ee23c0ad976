"""How requests name collections, fields and yes/no conditions (blind readers' defects)."""

from __future__ import annotations

import random

from agentworld_gym.ops import op_tool
from agentworld_gym.spec import EnvSpec, RuntimeSpec
from agentworld_gym.synthesis.tasks.model import build_model, singular
from agentworld_gym.synthesis.tasks.request.program import (
    extreme,
    label_of,
    measure,
    np,
    pred,
    scope_label,
)

S = {"type": "string"}


def test_singular_of_plurals_in_es() -> None:
    said = {
        "searches": "search",
        "statuses": "status",
        "invitation_statuses": "invitation_status",  # judged on the last word
        "projectstatuses": "projectstatus",  # two words run together
        "add_onses": "add_on",  # a plural made plural again
        "caches": "cache",
        "databases": "database",
        "addresses": "address",
        "boxes": "box",
        "buses": "bus",
        "analyses": "analysis",
        "quizzes": "quiz",
        "dnses": "dns",
        "status": "status",
        "menus": "menu",
        "topics": "topic",
    }
    assert {p: singular(p) for p in said} == said


def _env(collections: dict[str, list[str]], description: str = "") -> EnvSpec:
    """An environment whose collections each have the (update) tools named."""
    tools = [
        op_tool(
            name,
            "write",
            {"id": S, "title": S},
            ["id"],
            {"op": "update", "collection": coll, "key": "id", "body": {"title": "title"}},
            description=description or "Change a record.",
        )
        for coll, names in collections.items()
        for name in names
    ]
    return EnvSpec(
        id="wording",
        name="Wording",
        description=description,
        tools=tools,
        collections={c: {"primary_key": "id"} for c in collections},
        records={c: [{"id": "1", "title": "One"}] for c in collections},
        taxonomy={"l1": "L1", "l2": "L2", "l3": "L3"},
        runtime=RuntimeSpec(max_turns=10),
    )


def test_a_collection_named_by_a_fragment_takes_its_tools_noun() -> None:
    # discourse's "ts": its tools say what the records are
    tools = ["removeTopic", "bookmarkTopic", "updateTopicTimestamp", "inviteToTopic"]
    nouns = build_model(_env({"ts": tools, "invitation_statuses": ["setInvite"]})).nouns()
    assert nouns == {"ts": "topic", "invitation_statuses": "invitation status"}


def test_a_name_the_prose_spells_is_spelled_so() -> None:
    env = _env(
        {"apinfs": ["login_apinf"], "springs": ["Services_Get", "Services_Update"]},
        "Log in using an APInf account. PUT /providers/Microsoft.AppPlatform/Spring/{name}",
    )
    assert build_model(env).nouns() == {"apinfs": "APInf", "springs": "Spring service"}


def test_a_collection_glued_from_words_or_a_tool_reads_as_words() -> None:
    nouns = build_model(
        _env(
            {
                "projectstatuses": ["updateProjectStatus"],
                "assigned_add_onses": ["updateAssignedAddOn"],
                "get_log_file_urls": ["Deployments_GetLogFileUrl"],
                "workspace_ids": ["updateWorkspace"],
            }
        )
    ).nouns()
    assert nouns == {
        "projectstatuses": "project status",
        "assigned_add_onses": "assigned add-on",
        "get_log_file_urls": "log file url",
        "workspace_ids": "workspace",
    }


def test_acronyms_series_and_camel_case_terms_read_as_their_users_say_them() -> None:
    from agentworld_gym.synthesis.tasks.request.render import plural

    env = _env(
        {
            "ips": ["updateIp"],
            "series": ["updateSeries"],
            "storageclasses": ["patchStorageClass"],
            "giftcards": ["updateGiftcard"],
        },
        "Change the IP of a StorageClass in a series. The giftcard balance is kept.",
    )
    nouns = build_model(env).nouns()
    # "IP" (the prose's capitals), never "ips"/"ipses"; "series", never "sery"; CamelCase
    # is two words; a word the prose writes whole in a sentence stays whole
    assert nouns == {
        "ips": "IP",
        "series": "series",
        "storageclasses": "storage class",
        "giftcards": "giftcard",
    }
    assert [plural(n) for n in ("IP", "DNS", "series")] == ["IPs", "DNS", "series"]


def test_a_noun_another_collection_has_is_not_taken() -> None:
    nouns = build_model(_env({"ts": ["removeTopic"], "topics": ["updateTopic"]})).nouns()
    assert nouns["topics"] == "topic" and nouns["ts"] != "topic"


def test_field_labels_read_as_words() -> None:
    said = {
        "totalTotalEntries": "total entries",
        "created_at": "creation date",
        "updatedAt": "update date",
        "date_created": "creation date",
        "ele": "elevation",
        "project_id": "project",
        "createdBy": "creator",  # "tell me the created by" names no thing
        "lastModifiedBy": "last editor",
        "sortBy": "sort by",
    }
    assert {f: label_of(f) for f in said} == said
    for f in ("total_entries", "total_total", "name_name"):
        w = label_of(f).split()
        assert all(a != b for a, b in zip(w, w[1:], strict=False)), f


def test_aggregates_say_each_word_once_and_dates_are_early_or_late() -> None:
    assert measure("sum", "totalEntries") == "total entries"
    assert measure("sum", "cpus") == "total cpus"
    assert measure("min", "created_at") == "earliest creation date"
    assert measure("max", "passwordUpdate") == "latest password update"
    assert measure("max", "response_time") == "highest response time"  # a duration
    assert extreme("actualTimeMinutes", False) == "lowest"
    assert extreme("dueDate", True) == "latest"


def test_yes_no_fields_named_by_a_noun_are_not_adjectives() -> None:
    rng = random.Random(0)
    assert np("site", [["error", True]], rng) == "sites with error set to true"
    assert pred([["is_error", False]], rng) == "have error set to false"
    assert np("site", [["archived", True]], rng) == "archived sites"
    assert np("site", [["active", False]], rng) == "inactive sites"
    assert pred([["pinned", True]], rng) == "are pinned"
    assert pred([["inbound", False]], rng) == "are not inbound"


def test_a_parent_named_by_its_username_is_a_user() -> None:
    assert scope_label("username") == "user"
    assert scope_label("owner_name") == "owner"
    assert scope_label("project_id") == "project"
    assert scope_label("conversation_sid") == "conversation"


def test_past_tense_doubles_a_consonant_only_in_one_syllable() -> None:
    from agentworld_gym.synthesis.tasks.request.program import past

    assert [past(v) for v in ("stop", "ship", "tag", "submit")] == [
        "stopped", "shipped", "tagged", "submitted"
    ]  # fmt: skip
    assert [past(v) for v in ("edit", "visit", "audit", "add")] == [
        "edited", "visited", "audited", "added"
    ]  # fmt: skip


def test_foreign_keys_are_ids() -> None:
    from agentworld_gym.synthesis.tasks.model import looks_like_id

    assert looks_like_id("CompanyIDFK") and looks_like_id("owner_fk")
    assert not looks_like_id("status") and not looks_like_id("feedback")


def test_a_number_named_by_one_of_the_worlds_things_is_no_quantity() -> None:
    # "the total speaker of the talks" means nothing: speaker points at a speaker
    from agentworld_gym.synthesis.tasks.model import profile

    talks = [{"id": str(i), "room": i % 4 + 1, "minutes": 10 * i} for i in range(6)]
    assert profile(talks, "id", {}, "talk", frozenset({"room"})).numeric == ["minutes"]
    assert profile(talks, "id", {}, "talk").numeric == ["room", "minutes"]
    # a person the record points at is no quantity in any world ("the total speaker")
    talks = [{**t, "speaker": t["room"]} for t in talks]
    assert "speaker" not in profile(talks, "id", {}, "talk").numeric
    rated = [{"id": str(i), "rating": i % 5 + 1} for i in range(6)]
    assert profile(rated, "id", {}, "review", frozenset({"rating"})).numeric == ["rating"]


def test_soft_delete_marks_and_dates_kept_as_numbers_are_no_conditions_or_quantities() -> None:
    from agentworld_gym.synthesis.tasks.model import profile

    rows = [
        {"id": str(i), "deleted": i % 2 == 0, "modification_date": 1000 + i, "size": i * 3}
        for i in range(6)
    ]
    prof = profile(rows, "id", {})
    assert "deleted" not in prof.categorical  # "delete every one that is not deleted"
    assert prof.numeric == ["size"]  # "modification date above 500" is no quantity


def test_field_names_read_as_words_and_people_are_no_quantities() -> None:
    from agentworld_gym.synthesis.tasks.model import profile
    from agentworld_gym.synthesis.tasks.request.program import field_label

    said = {
        "servicenames": "service names",
        "isfavorite": "is favorite",
        "allowCategorysCreation": "allow categories creation",
        "spreadsheet": "spreadsheet",  # run together but one word people write so
        "keys": "keys",
    }
    assert {f: field_label(f) for f in said} == said
    rows = [{"id": str(i), "patient": 600 + i, "dose": i * 2, "take": 10} for i in range(6)]
    assert profile(rows, "id", {}).numeric == ["dose"]  # "patient above 600" means nothing


def test_records_named_by_key_say_a_shared_parent_once():
    from agentworld_gym.synthesis.tasks.request.render import keyed

    same = [('"a"', 'project "P"'), ('"b"', 'project "P"'), ('"c"', 'project "P"')]
    assert keyed(same) == '"a", "b" and "c" in project "P"'
    assert keyed([("9", "app 6"), ("8", "app 4")]) == "9 in app 6 and 8 in app 4"
    # two records under one parent and one under another: each parent said once
    mixed = [('"a"', 'group "G"'), ('"c"', 'group "H"'), ('"b"', 'group "G"')]
    assert keyed(mixed) == '"a" and "b" in group "G", and "c" in group "H"'
    deep = [('"a"', 'group "G", app "x"'), ('"b"', 'group "G", app "y"')]
    assert keyed(deep) == '"a" in group "G", app "x"; and "b" in group "G", app "y"'
    assert keyed([('"a"', ""), ('"b"', "")]) == '"a" and "b"'
