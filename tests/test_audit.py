"""The catalog audit: each bar's per-task check on crafted tasks, and the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld_gym.synthesis import audit as A

ENV: dict[str, Any] = {
    "id": "shop",
    "name": "Shop API",
    "description": "",
    "runtime": {"max_turns": 20},
    "collections": {"orders": {"primary_key": "id"}, "notes": {"primary_key": "id"}},
    "tools": [
        {
            "name": "ListOrders",
            "description": "List orders.",
            "kind": "read",
            "parameters": {},
            "implementation": {"type": "op", "op": "list", "collection": "orders"},
        },
        {
            "name": "GetOrder",
            "description": "Get order.",
            "kind": "read",
            "parameters": {},
            "implementation": {"type": "op", "op": "get", "collection": "orders", "key": "orderId"},
        },
        {
            "name": "CancelOrder",
            "description": "Cancel order.",
            "kind": "write",
            "parameters": {},
            "implementation": {
                "type": "op",
                "op": "update",
                "collection": "orders",
                "key": "orderId",
            },
        },
        {
            "name": "UpdateOrder",
            "description": "Update order.",
            "kind": "write",
            "parameters": {},
            "implementation": {
                "type": "op",
                "op": "update",
                "collection": "orders",
                "key": "orderId",
            },
        },
        {
            "name": "CreateNote",
            "description": "Create note.",
            "kind": "write",
            "parameters": {},
            "implementation": {"type": "op", "op": "create", "collection": "notes"},
        },
    ],
}
ORDERS = [
    {"id": "ord_938d63d9e9", "name": "Blue teapot", "status": "open"},
    {"id": "ord_0e7ed52700", "name": "Red kettle", "status": "open"},
]


@pytest.fixture
def env(tmp_path: Path) -> A.EnvFacts:
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "orders.json").write_text(json.dumps(ORDERS))
    return A.env_facts(ENV, tmp_path)


def task(
    instruction: str, calls: list[tuple[str, dict[str, Any]]], **difficulty: Any
) -> dict[str, Any]:
    return {
        "id": "shop-g001",
        "instruction": instruction,
        "gold": {"type": "tool_chain", "calls": [{"name": n, "arguments": a} for n, a in calls]},
        "difficulty": difficulty,
    }


def test_numbered_steps() -> None:
    assert A.numbered_steps("Steps:\n1. List the orders.\n2. Cancel the first.")
    assert not A.numbered_steps("Cancel my order for the Blue teapot.")
    assert not A.numbered_steps("Set the count to 3. Then tell me 2 things.")


def test_placeholder_values_skip_enums_ids_and_slugs() -> None:
    assert A.placeholder_values('Set the last name to "Golden lagoon 951".') == [
        "Golden lagoon 951"
    ]
    for text in (
        "Use HMAC_SHA256 now",
        "file fil_bfceffe861",
        "slug content-providerf839",
        "mail amber.harbor417@example.com",
        "Rename it to Blue teapot.",
        "more than 100 items",
    ):
        assert A.placeholder_values(text) == [], text


def test_opening_masks_api_quotes_and_numbers() -> None:
    a = A.opening('In Shop API, set "x" to 3 and then do the rest of it', "Shop API")
    b = A.opening('In Shop API, set "yy" to 45 and then do the rest of it', "Shop API")
    assert a == b == "in api, set q to n and then"
    assert A.top_openings_share(["a", "a", "b", "c", "d", "e"], k=1) == pytest.approx(2 / 6)


def test_names_findable_id(env: A.EnvFacts) -> None:
    by_id = task('Cancel order "ord_938d63d9e9".', [("CancelOrder", {"orderId": "ord_938d63d9e9"})])
    assert A.names_findable_id(by_id, env) == ["ord_938d63d9e9"]
    by_name = task("Cancel my Blue teapot order.", [("CancelOrder", {"orderId": "ord_938d63d9e9"})])
    assert A.names_findable_id(by_name, env) == []
    # No name-like field in the collection: the id is the only handle, so it is not counted.
    env.records["orders"] = [{"id": "ord_938d63d9e9", "status": "open"}]
    assert A.names_findable_id(by_id, env) == []


def test_verb_mismatch(env: A.EnvFacts) -> None:
    lie = task(
        'Update order "ord_938d63d9e9": set reason "late".',
        [("CancelOrder", {"orderId": "ord_938d63d9e9", "reason": "late"})],
    )
    assert A.verb_mismatches(lie, env) == [
        'CancelOrder: Update order "ord_938d63d9e9": set reason "late".'
    ]
    honest = task(
        'Cancel order "ord_938d63d9e9" because it is "late".',
        [("CancelOrder", {"orderId": "ord_938d63d9e9", "reason": "late"})],
    )
    assert A.verb_mismatches(honest, env) == []
    update = task(
        'Set the status of "ord_0e7ed52700" to "shipped".',
        [("UpdateOrder", {"orderId": "ord_0e7ed52700", "status": "shipped"})],
    )
    assert A.verb_mismatches(update, env) == []
    create_as_update = task(
        'Update the notes: set text "call back".', [("CreateNote", {"text": "call back"})]
    )
    assert len(A.verb_mismatches(create_as_update, env)) == 1
    unseen = task("Cancel every open order.", [("CancelOrder", {"orderId": "ord_938d63d9e9"})])
    assert A.verb_mismatches(unseen, env) == []  # no sentence holds its values: not judged


def test_chained(env: A.EnvFacts) -> None:
    linked = task(
        "...",
        [
            ("ListOrders", {}),
            ("GetOrder", {"orderId": "ord_0e7ed52700"}),
            ("CancelOrder", {"orderId": "$1.id"}),
        ],
    )
    assert A.chained(linked, env)
    loose = task("...", [("CreateNote", {"text": "one"}), ("CreateNote", {"text": "two"})])
    assert not A.chained(loose, env)
    jump = task(
        "...", [("CreateNote", {"text": "one"}), ("GetOrder", {"orderId": "ord_0e7ed52700"})]
    )
    assert not A.chained(jump, env)


def test_spare_turns(env: A.EnvFacts) -> None:
    calls = [("CreateNote", {"text": str(i)}) for i in range(13)]
    assert not A.spare_turns(task("...", calls), env)  # 20 < 1.5 * 14
    assert A.spare_turns(task("...", calls[:12]), env)  # 20 >= 1.5 * 13
    assert A.spare_turns(task("...", calls, max_turns=30), env)


def test_audit_command_on_a_tiny_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentworld_gym.cli import main

    folder = tmp_path / "shop"
    (folder / "db").mkdir(parents=True)
    (folder / "db" / "orders.json").write_text(json.dumps(ORDERS))
    (folder / "env.json").write_text(json.dumps(ENV))
    tasks = [
        task(
            'Cancel my "Blue teapot" order.',
            [("ListOrders", {}), ("CancelOrder", {"orderId": "$0.items.0.id"})],
        ),
        task(
            '1. Look up order "ord_0e7ed52700".\n2. Update it: set status "Golden lagoon 951".',
            [
                ("GetOrder", {"orderId": "ord_0e7ed52700"}),
                ("CancelOrder", {"orderId": "ord_0e7ed52700", "status": "Golden lagoon 951"}),
            ],
            long_horizon=True,
        ),
    ]
    tasks[1]["id"] = "shop-g002"
    (folder / "tasks.json").write_text(json.dumps(tasks))
    out = tmp_path / "audit.json"
    assert (
        main(["synth", "audit", "--root", str(tmp_path), "--workers", "1", "--json", str(out)]) == 0
    )
    assert main(["synth", "audit", "--root", str(tmp_path), "--workers", "1", "--strict"]) == 1
    text = capsys.readouterr().out
    assert "numbered-step requests" in text and "shop-g002" in text
    bars = {b["bar"]: b for b in json.loads(out.read_text())["bars"]}
    assert bars["numbered-step requests"]["value"] == 0.5
    assert bars["placeholder-shaped values"]["value"] == 0.5
    assert bars["verb/tool mismatches"]["examples"][0].startswith("shop-g002: CancelOrder")
    assert bars["findable internal id named"]["value"] == 0.5
    assert bars["long-horizon tasks"]["value"] == 1
    assert bars["long-horizon tasks chained"]["value"] == 1.0


def test_verb_judged_on_the_clause_naming_the_write(env: A.EnvFacts) -> None:
    # the note is written by a create: "add" in its own clause, whatever the other clause says
    mixed = task(
        'Set the status of "ord_0e7ed52700" to "shipped" and add a note "Left at the door".',
        [
            ("UpdateOrder", {"orderId": "ord_0e7ed52700", "status": "shipped"}),
            ("CreateNote", {"text": "Left at the door"}),
        ],
    )
    assert A.verb_mismatches(mixed, env) == []
    lie = task(
        'Set the status of "ord_0e7ed52700" to "shipped" and set note "Left at the door".',
        [("CreateNote", {"text": "Left at the door"})],
    )
    assert len(A.verb_mismatches(lie, env)) == 1


def test_readability_detectors() -> None:
    assert A.positional("Tell me the name of the third account in the account list.")
    assert A.positional("What is the ip of the first arista switch listed?")
    assert not A.positional('Tell me the name of the account "First National".')
    assert A.raw_field_words("Change its is active to false.")
    assert not A.raw_field_words("Make sure the key is not active.")
    deep = "Look up the extra of the rvs of the media of the uks and tell me its price."
    assert A.deep_relation(deep) and not A.deep_relation("Tell me the owner of the task.")


def test_same_field_written_twice(env: A.EnvFacts) -> None:
    twice = task(
        'Set the status of "ord_0e7ed52700" to "shipped", then to "held".',
        [
            ("UpdateOrder", {"orderId": "ord_0e7ed52700", "status": "shipped"}),
            ("UpdateOrder", {"orderId": "ord_0e7ed52700", "status": "held"}),
        ],
    )
    assert A.overwritten_writes(twice, env)
    two_records = task(
        "...",
        [
            ("UpdateOrder", {"orderId": "ord_0e7ed52700", "status": "shipped"}),
            ("UpdateOrder", {"orderId": "ord_938d63d9e9", "status": "shipped"}),
        ],
    )
    assert not A.overwritten_writes(two_records, env)


def test_unreadable_names_what_a_reader_stumbles_on() -> None:
    assert A.unreadable('Tell me the type of the dnse "web-1".') == "unknown word 'dnse'"
    assert A.unreadable('Tell me the type of the webhook "web-1".') is None
    assert A.unreadable("How many invoices were processed?") is None
    assert A.unreadable('Update it in parent parent "payments-eu".') == (
        "a word written twice in a row"
    )
    assert A.unreadable("Please add 3 put resource policies.") == "an operation name as the noun"
    assert A.unreadable('Create the user "Ada" again, this time with role "admin".') == (
        "a write worded as a second create"
    )
    assert A.unreadable('Rename the cluster "Public-key full-range strategy".') == (
        "a slogan as a value"
    )
    ids = ", ".join(f'"ord_{k}0e7ed5270"' for k in range(4))
    assert A.unreadable(f"Delete the orders {ids}.") == "more than three ids"
    assert A.unreadable(f"Delete the orders {ids[: ids.rindex(',')]}.") is None
    assert A.unreadable("What is the name of the second order in the order list?") == (
        "record picked by its place in a list"
    )
    assert A.unreadable('Log in with password "2d996O7BT6Bld0DMe3jiynSQBYE1DaYz".') == (
        "a random token as a value"
    )
    assert A.unreadable('Set the code of "Spring Launch" to "ABC-1234".') is None
    # the environment's own terms are words too
    assert A.unreadable('Tell me the sku of the serverfarm "plan-1".', {"serverfarm"}) is None


def test_a_write_of_a_number_or_flag_is_judged_where_the_request_says_it(
    env: A.EnvFacts,
) -> None:
    question = 'Which is older, the order "Blue teapot" or "Red kettle"?'
    right = task(
        f"{question} If it's the first, cancel it with priority 3.",
        [("CancelOrder", {"orderId": "ord_938d63d9e9", "priority": 3})],
    )
    assert A.verb_mismatches(right, env) == []
    wrong = task(
        f"{question} If it's the first, update it: set its flagged to true.",
        [("CancelOrder", {"orderId": "ord_938d63d9e9", "flagged": True})],
    )
    assert len(A.verb_mismatches(wrong, env)) == 1


def test_a_write_is_judged_by_the_sentence_holding_its_values():
    # the key names the record in both sentences; the second write is the one with "20" (a
    # short number) or a value nested in its body, and is worded by its own verb
    request = (
        'Update the order "o-123": set its carrier to "UPS". Next, reject it with quantity 20.'
    )
    reject = {"name": "reject", "arguments": {"orderId": "o-123", "quantity": 20}}
    assert A.write_sentences(request, reject, frozenset({"orderId"})) == [
        "Next, reject it with quantity 20."
    ]
    patch = {"name": "patch", "arguments": {"jobId": "j-1", "constraints": {"retries": 55}}}
    text = 'Terminate the job "j-1". Next, set its max retries to 55.'
    assert A.write_sentences(text, patch, frozenset({"jobId"})) == [
        "Next, set its max retries to 55."
    ]
    assert A.write_sentences("Set its weight to 20.5 kg.", reject, frozenset()) == []
    # a one-character value counts when quoted
    deploy = {"name": "deploy", "arguments": {"name": "web-test", "meta": {"nodeCount": "8"}}}
    text = 'Export the model "web-test" as "xlsx". Next, deploy it with node count "8".'
    assert A.write_sentences(text, deploy, frozenset({"name"})) == [
        'Next, deploy it with node count "8".'
    ]
