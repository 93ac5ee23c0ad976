"""Small builders for notion-v0 tasks: gold calls, rubric checks, script verifiers.

Task modules (:mod:`.tasks_read`, :mod:`.tasks_write`, :mod:`.tasks_content`, :mod:`.tasks_long`,
:mod:`.tasks_long_content`) describe each task with these helpers so that the JSON in
``tasks.json`` stays uniform. Facts the tasks depend on come from :mod:`.seed_data` (``TODAY``,
:func:`open_tasks`, :func:`overdue`) and the seeded ids from here (``DB``, ``USER``,
``PROJECT``, ``PAGE``, ``MEETING``) rather than being typed twice.
"""

from __future__ import annotations

import textwrap
from typing import Any

from agentworld_gym.domains.notion import seed_data as data
from agentworld_gym.domains.notion.objects import stable_id
from agentworld_gym.domains.notion.seed import ids
from agentworld_gym.domains.notion.toolspecs import WRITE_OPERATIONS

TODAY = "2026-08-05"
IDS = ids()
USERS = {key: name for key, name, _ in data.PEOPLE}
PROJECT_NAMES = {p[0]: p[1] for p in data.PROJECTS}
PROJECT_OWNERS = {p[0]: p[3] for p in data.PROJECTS}
DB = IDS["database"]
USER = IDS["user"]
PROJECT = IDS["project"]
PAGE = IDS["page"]
MEETING = IDS["meeting"]
NOT_DONE = {"property": "Status", "status": {"does_not_equal": "Done"}}
DONE_UNCHECKED = {
    "and": [
        {"property": "Status", "status": {"equals": "Done"}},
        {"property": "Done", "checkbox": {"equals": False}},
    ]
}
"""Tasks whose Status says Done while the Done box is unchecked."""
CHECKED_NOT_DONE = {"and": [NOT_DONE, {"property": "Done", "checkbox": {"equals": True}}]}
"""Tasks whose Done box is checked while the Status is not Done."""
NO_WRITE = "Done, I've taken care of it."
"""A claim of success without the writes: the ``wrong`` answer of write tasks."""


# -- facts -----------------------------------------------------------------------------------
def open_tasks() -> list[tuple]:
    """Non-archived tasks whose Status is not Done (Status is authoritative)."""
    return [t for t in data.TASKS if t[2] != "Done"]


def overdue() -> list[tuple]:
    return [t for t in open_tasks() if t[4] and t[4] < TODAY]


def task_id(name: str) -> str:
    return IDS["task"][name]


def block_id(owner: str, path: str) -> str:
    """The id of a seeded block: ``block_id("dev-setup", "8.1")`` (see :mod:`.seed`)."""
    return stable_id("block", owner, path)


def rt(text: str) -> list[dict[str, Any]]:
    """Request rich text."""
    return [{"text": {"content": text}}]


# -- gold chains -----------------------------------------------------------------------------
def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": f"API-{name}", "arguments": arguments}


def query(db: str, **arguments: Any) -> dict[str, Any]:
    return call("post-database-query", database_id=DB[db], **arguments)


def in_project(project: str) -> dict[str, Any]:
    """The filter for tasks related to ``project`` (a key of ``PROJECT``)."""
    return {"property": "Project", "relation": {"contains": PROJECT[project]}}


def search_and_read(title: str) -> list[dict[str, Any]]:
    """Find a page by title, then list its blocks: the first two calls of a chain (``$0``)."""
    return [
        call("post-search", query=title),
        call("get-block-children", block_id="$0.results.0.id"),
    ]


def set_props(page_id: str, **properties: Any) -> dict[str, Any]:
    return call("patch-page", page_id=page_id, properties=properties)


def comment(page_id: str, text: str) -> dict[str, Any]:
    return call("create-a-comment", parent={"page_id": page_id}, rich_text=rt(text))


# -- rubric checks ---------------------------------------------------------------------------
def crit(text: str, weight: float, check: dict[str, Any]) -> dict[str, Any]:
    return {"text": text, "weight": weight, "check": check}


def contains(*values: str) -> dict[str, Any]:
    return {"type": "answer_contains", "value": list(values), "case_sensitive": False}


def in_order(*values: str) -> dict[str, Any]:
    """Every value, in this order (and no other candidate from the data)."""
    return {"type": "answer", "expect": [{"value": v} for v in values], "ordered": True}


def date(value: str) -> dict[str, Any]:
    """A date, accepted in any common format."""
    return {"type": "answer", "expect": [{"value": value, "kind": "date"}]}


def number(value: float, tolerance: float = 0.0) -> dict[str, Any]:
    return {"type": "answer_equals", "value": value, "tolerance": tolerance}


def record(
    key: str,
    path: str,
    equals: Any = None,
    collection: str = "pages",
    *,
    exists: bool | None = None,
) -> dict[str, Any]:
    """A state check on one record; ``exists=False`` requires the path to be absent/null."""
    check = {"type": "record", "collection": collection, "key": key, "path": path}
    if exists is None:
        check["equals"] = equals
    else:
        check["exists"] = exists
    return check


def count(where: dict[str, Any], equals: int, collection: str = "pages") -> dict[str, Any]:
    return {"type": "count", "collection": collection, "where": where, "equals": equals}


def called(name: str, min_times: int = 1, **arguments: Any) -> dict[str, Any]:
    return {
        "type": "tool_called",
        "name": f"API-{name}",
        "arguments": arguments,
        "min_times": min_times,
    }


def rubric(*criteria: dict[str, Any]) -> dict[str, Any]:
    return {"type": "rubric", "criteria": list(criteria)}


# -- script verifiers ------------------------------------------------------------------------
PRELUDE = """\
import re


def _plain(items):
    return "".join(x.get("plain_text", "") for x in items or [])


def _title(page):
    for value in page.get("properties", {}).values():
        if value.get("type") == "title":
            return _plain(value.get("title"))
    return ""


def _by_id(state, collection):
    return {r["id"]: r for r in state.get(collection, [])}


def _pages_titled(state, title, parent=None):
    return [p for p in state.get("pages", []) if _title(p).strip().casefold()
            == title.casefold() and (parent is None or parent in p["parent"].values())]


def _children(state, parent_id, archived=False):
    found = [b for b in state.get("blocks", [])
             if parent_id in (b["parent"].get("page_id"), b["parent"].get("block_id"))
             and (archived or not b.get("archived"))]
    return sorted(found, key=lambda b: (b.get("_seq", 0), b["id"]))


def _text(block):
    return _plain(block.get(block["type"], {}).get("rich_text"))


def _people(page, prop):
    return [u["id"] for u in (page["properties"].get(prop) or {}).get("people") or []]


def _status(page):
    value = page["properties"].get("Status", {}).get("status")
    return value["name"] if value else None


def _date(page, prop):
    value = page["properties"].get(prop, {}).get("date")
    return value["start"] if value else None


def _comments(state, page_id):
    return [c for c in state.get("comments", []) if c["parent"].get("page_id") == page_id]


def _norm(text):
    return " ".join(str(text).casefold().replace("*", "").split())


def _numbers(text):
    return [float(n.replace(",", "")) for n in re.findall(r"-?\\d[\\d,]*(?:\\.\\d+)?", text)]


def _unchanged(initial, final, collection, keys):
    before, after = _by_id(initial, collection), _by_id(final, collection)
    return all(before.get(k) == after.get(k) for k in keys)
"""


_WRAPPER = '''

def verify(initial_state, final_state, answer):
    """Partial credit in [0, 1], rounded so that a perfect run is exactly 1.0."""
    value = _score(initial_state, final_state, answer)
    return round(max(0.0, min(1.0, float(value))), 6)
'''


def script(body: str, **constants: Any) -> dict[str, Any]:
    """A script verifier: the shared prelude, ``constants`` as literals, then ``body``.

    ``body`` defines ``verify(initial_state, final_state, answer)``; it is renamed ``_score``
    and wrapped so that the returned value is clamped to [0, 1] and rounded.
    """
    consts = "".join(f"{name} = {value!r}\n" for name, value in sorted(constants.items()))
    code = textwrap.dedent(body).strip().replace("def verify(", "def _score(", 1)
    source = PRELUDE + "\n" + consts + "\n\n" + code + "\n" + _WRAPPER
    return {"type": "script", "source": source}


# -- tasks -----------------------------------------------------------------------------------
def task(
    task_id_: str,
    instruction: str,
    calls: list[dict[str, Any]],
    answer: str,
    verifier: dict[str, Any],
    *,
    wrong: str,
    split: str = "train",
    tags: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One task entry; ``wrong`` is a plausible wrong answer the tests must score below 0.5."""
    writes = sum(1 for c in calls if c["name"].removeprefix("API-") in WRITE_OPERATIONS)
    return {
        "id": task_id_,
        "split": split,
        "kind": "manual",
        "instruction": " ".join(instruction.split()),
        "reference_answer": answer,
        "verifier": verifier,
        "gold": {"type": "tool_chain", "calls": calls, "answer": answer},
        "difficulty": {"min_calls": len(calls), "writes": writes},
        "provenance": {
            "source": "manual",
            "author": "notion domain",
            "wrong_answer": wrong,
            "tags": list(tags),
        },
    }
