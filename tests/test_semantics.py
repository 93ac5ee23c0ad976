"""Tool semantics: op, own verb, resource noun and destructiveness from the API's words."""

from __future__ import annotations

import pytest

from agentworld_gym.semantics import Meaning, classify, meaning, singular


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("PUT", "/orders/{id}/cancel", "CancelOrder2", "Cancel order"),
            ("action", "cancel", "order", True),
        ),
        (
            ("", "", "StartHandling2", "", "Start handling order.", "create"),
            ("action", "start", "handling", False),
        ),
        (
            ("", "", "GetOrder2", "", "Get order.", "get", "documents"),
            ("read", "get", "order", False),
        ),
        (
            ("", "", "ListConfigurationSets", "", "", "list"),
            ("list", "list", "configuration set", False),
        ),
        (("", "", "sign_delete", "", "", "delete", "scopes"), ("delete", "delete", "scope", True)),
        (
            ("", "", "datacatalog_projects_locations_entryGroups_entries_create", "", "", "create"),
            ("create", "create", "entry", False),
        ),
        (
            ("", "", "PUT_ApplyPayment", "", "Apply a payment.", "update"),
            ("action", "apply", "payment", False),
        ),
        (
            ("", "", "sql_instances_truncateLog", "", "", "update"),
            ("action", "truncate", "log", True),
        ),
        (
            ("", "", "addPartnerOrganization", "", "Add partner.", "update"),
            ("create", "add", "partner organization", False),
        ),
        (
            ("", "", "removeProfileAttribute", "", "", "delete"),
            ("delete", "remove", "profile attribute", True),
        ),
        (("", "", "ValidateAddress", "", "", "get"), ("action", "validate", "address", False)),
        (
            ("", "", "DescribeRouteCalculator", "", "", "get"),
            ("read", "get", "route calculator", False),
        ),
        (
            ("", "", "Remove_a_member_from_the_organization", "", "", "delete"),
            ("delete", "remove", "member", True),
        ),
        (
            ("", "", "PutDedicatedIpInPool", "", "", "update"),
            ("update", "update", "dedicated ip", False),
        ),
        (  # a check asks a question: no "name availability" is made
            ("POST", "", "Servers_CheckNameAvailability", "", "", "update"),
            ("action", "check", "name availability", False),
        ),
        (("", "", "CheckRun", "", "", "create"), ("create", "create", "run", False)),
    ],
)
def test_classify(args: tuple[str, ...], expected: tuple[object, ...]) -> None:
    assert classify(*args) == Meaning(*expected)


def test_path_in_description_gives_action() -> None:
    m = classify(
        "",
        "",
        "post_api_v1_admin_accounts_id_reject",
        "",
        "POST /api/v1/admin/accounts/{id}/reject",
        "update",
    )
    assert (m.op, m.verb, m.noun) == ("action", "reject", "account")


def test_generic_update_yields_to_summary_action() -> None:
    assert classify("", "", "UpdateOrder", "Cancel an order", "", "update").verb == "cancel"


@pytest.mark.parametrize(
    ("plural", "one"),
    [
        ("statuses", "status"),
        ("policies", "policy"),
        ("addresses", "address"),
        ("databases", "database"),
        ("boxes", "box"),
        ("photos", "photo"),
        ("movies", "movie"),
        ("analyses", "analysis"),
        ("apis", "api"),
        ("upgrades", "upgrade"),
        ("people", "person"),
        ("class", "class"),
    ],
)
def test_singular(plural: str, one: str) -> None:
    assert singular(plural) == one


def test_meaning_reads_stored_semantics_and_json_tools() -> None:
    stored = {"op": "action", "verb": "void", "noun": "invoice", "destructive": True}
    tool = {
        "name": "UpdateInvoice",
        "description": "",
        "implementation": {"op": "update"},
        "semantics": stored,
    }
    assert meaning(tool) == Meaning("action", "void", "invoice", True)
    plain = {
        "name": "CancelOrder2",
        "description": "Cancel order.",
        "implementation": {"type": "op", "op": "update", "collection": "documents"},
    }
    assert meaning(plain).verb == "cancel"


def test_meaning_of_a_toolspec_and_a_hand_built_tool() -> None:
    from agentworld_gym.spec import ToolSpec

    spec = ToolSpec(
        "API-patch-page",
        "Update page properties",
        {},
        {"type": "python", "entrypoint": "x:y"},
        "write",
    )
    assert meaning(spec).op == "update"
    spec = ToolSpec("API-get-users", "List all users", {}, {"type": "python", "entrypoint": "x:y"})
    assert meaning(spec).op in ("read", "list")


def test_a_path_ending_in_a_record_names_no_action() -> None:
    # ``DELETE /sql/v1beta4/projects/{p}/instances/{i}/backupRuns/{id}`` deletes a backup run
    # (it must never be asked for as "back up the backup runs")
    m = classify(
        "DELETE",
        "/sql/v1beta4/projects/{project}/instances/{instance}/backupRuns/{id}",
        "sql_backupRuns_delete",
        "Deletes the backup run.",
    )
    assert (m.op, m.verb, m.destructive) == ("delete", "delete", True)
    cancel = classify("POST", "/orders/{orderId}/cancel", "CancelOrder", "Cancel an order")
    assert (cancel.op, cancel.verb) == ("action", "cancel")
