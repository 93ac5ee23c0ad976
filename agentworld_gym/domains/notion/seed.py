"""Build the initial Northwind Labs workspace (deterministic: same records on every build).

Ids are uuid5 values derived from names (:func:`.objects.stable_id`), timestamps come from a
fixed schedule before the pinned clock, and nothing is random, so two builds are byte-identical.
:func:`ids` exposes the ids task authors need (``ids()["task"]["Add Apple Pay support"]``).
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

from agentworld_gym.domains.notion import seed_content as content
from agentworld_gym.domains.notion import seed_data as data
from agentworld_gym.domains.notion.objects import notion_url, rich_text, stable_id, user_ref
from agentworld_gym.domains.notion.properties import option_id
from agentworld_gym.domains.notion.seed_schema import DB_KEYS, schemas, title_value

Record = dict[str, Any]
SCHEDULE_START = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
LAST_EDIT_CAP = dt.datetime(2026, 8, 4, 20, tzinfo=dt.UTC)
_KINDS = {
    "h1": "heading_1",
    "h2": "heading_2",
    "h3": "heading_3",
    "p": "paragraph",
    "quote": "quote",
    "bullet": "bulleted_list_item",
    "num": "numbered_list_item",
    "todo": "to_do",
    "toggle": "toggle",
    "callout": "callout",
    "code": "code",
    "divider": "divider",
}


def _iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:00.000Z")


class _Schedule:
    """Hands out increasing created times and later, distinct last-edited times."""

    def __init__(self) -> None:
        self.n = 0

    def stamps(self) -> tuple[str, str]:
        self.n += 1
        created = SCHEDULE_START + dt.timedelta(hours=16 * self.n, minutes=7 * self.n % 60)
        edited = created + dt.timedelta(hours=(self.n * 53) % 400, minutes=self.n % 53)
        if edited > LAST_EDIT_CAP:
            edited = LAST_EDIT_CAP - dt.timedelta(minutes=13 * self.n)
        return _iso(created), _iso(max(edited, created))


@functools.cache
def ids() -> dict[str, dict[str, str]]:
    """Every seeded id, by kind and name (tasks by name, the rest by key)."""
    return {
        "user": {k: stable_id("user", k) for k, _, _ in data.PEOPLE}
        | {"bot": stable_id("user", "bot")},
        "database": {k: stable_id("database", k) for k in DB_KEYS},
        "page": {"hq": stable_id("page", "hq")}
        | {w[0]: stable_id("page", w[0]) for w in content.WIKI},
        "project": {p[0]: stable_id("project", p[0]) for p in data.PROJECTS},
        "task": {t[0]: stable_id("task", t[0]) for t in data.TASKS + data.ARCHIVED_TASKS},
        "meeting": {m[0]: stable_id("meeting", m[0]) for m in data.MEETINGS},
    }


class _Builder:
    def __init__(self) -> None:
        self.when = _Schedule()
        self.ids = ids()
        self.users: list[Record] = []
        self.databases: list[Record] = []
        self.pages: list[Record] = []
        self.blocks: list[Record] = []
        self.comments: list[Record] = []

    # -- users ---------------------------------------------------------------------------
    def add_users(self) -> None:
        for key, name, _role in data.PEOPLE:
            email = f"{name.split()[0].lower().replace('á', 'a')}@{data.EMAIL_DOMAIN}"
            self.users.append(
                {
                    "object": "user",
                    "id": self.ids["user"][key],
                    "name": name,
                    "avatar_url": f"https://avatars.{data.EMAIL_DOMAIN}/{key}.png",
                    "type": "person",
                    "person": {"email": email},
                }
            )
        self.users.append(
            {
                "object": "user",
                "id": self.ids["user"]["bot"],
                "name": data.BOT[1],
                "avatar_url": None,
                "type": "bot",
                "bot": {
                    "owner": {"type": "workspace", "workspace": True},
                    "workspace_name": data.WORKSPACE,
                },
                "_self": True,
            }
        )

    def person(self, key: str) -> Record:
        uid = self.ids["user"][key]
        user = next(u for u in self.users if u["id"] == uid)
        return {k: v for k, v in user.items() if not k.startswith("_")}

    # -- generic objects -----------------------------------------------------------------
    def page(
        self,
        pid: str,
        parent: Record,
        properties: Record,
        author: str,
        icon: str | None = None,
        archived: bool = False,
        url_title: str = "",
    ) -> Record:
        created, edited = self.when.stamps()
        page = {
            "object": "page",
            "id": pid,
            "created_time": created,
            "last_edited_time": edited,
            "created_by": user_ref(self.ids["user"][author]),
            "last_edited_by": user_ref(self.ids["user"][author]),
            "cover": None,
            "icon": {"type": "emoji", "emoji": icon} if icon else None,
            "parent": parent,
            "archived": archived,
            "in_trash": archived,
            "properties": properties,
            "url": notion_url(url_title, pid),
            "public_url": None,
        }
        self.pages.append(page)
        return page

    def expand(
        self,
        owner: str,
        parent: Record,
        items: list[tuple],
        author: str,
        path: str = "",
        start: int = 0,
    ) -> None:
        """Turn the block notation of :mod:`.seed_content` into block records."""
        for i, item in enumerate(items, start=start):
            kind = _KINDS[item[0]]
            here = f"{path}.{i}" if path else str(i)
            bid = stable_id("block", owner, here)
            nested = item[2] if item[0] in ("bullet", "num", "toggle") else []
            body: Record = (
                {} if kind == "divider" else {"rich_text": rich_text(item[1]), "color": "default"}
            )
            if kind == "to_do":
                body["checked"] = item[2]
            elif kind.startswith("heading_"):
                body["is_toggleable"] = False
            elif kind == "callout":
                body["icon"] = {"type": "emoji", "emoji": item[2]}
            elif kind == "code":
                body.update(caption=[], language=item[2])
            self.blocks.append(self.block(bid, parent, kind, body, author, bool(nested), i))
            if nested:
                self.expand(owner, {"type": "block_id", "block_id": bid}, nested, author, here)

    def block(
        self,
        bid: str,
        parent: Record,
        kind: str,
        body: Record,
        author: str,
        has_children: bool,
        index: int,
        archived: bool = False,
    ) -> Record:
        created, edited = self.when.stamps()
        return {
            "object": "block",
            "id": bid,
            "parent": parent,
            "created_time": created,
            "last_edited_time": edited,
            "created_by": user_ref(self.ids["user"][author]),
            "last_edited_by": user_ref(self.ids["user"][author]),
            "has_children": has_children,
            "archived": archived,
            "in_trash": archived,
            "type": kind,
            kind: body,
            "_seq": (index + 1) * 1024,
        }

    def child_link(
        self, holder: str, index: int, kind: str, target: str, title: str, archived: bool = False
    ) -> None:
        parent = {"type": "page_id", "page_id": holder}
        self.blocks.append(
            self.block(target, parent, kind, {"title": title}, "maya", False, index, archived)
        )


class _Values:
    """Stored property values for seeded pages of one database."""

    def __init__(self, builder: _Builder, db: str, schema: Record) -> None:
        self.b, self.db, self.schema = builder, db, schema

    def __call__(self, name: str, value: Any) -> Record:
        prop = self.schema[name]
        kind = prop["type"]
        if kind == "title":
            return title_value(value)
        if kind in ("select", "status"):
            stored = (
                None
                if value is None
                else {
                    "id": option_id(self.db, name, value),
                    "name": value,
                    "color": next(o["color"] for o in prop[kind]["options"] if o["name"] == value),
                }
            )
        elif kind == "multi_select":
            stored = [
                {
                    "id": option_id(self.db, name, v),
                    "name": v,
                    "color": next(o["color"] for o in prop[kind]["options"] if o["name"] == v),
                }
                for v in value
            ]
        elif kind == "people":
            stored = [self.b.person(k) for k in value]
        elif kind == "date":
            stored = {"start": value, "end": None, "time_zone": None} if value else None
        elif kind == "relation":
            stored = [{"id": v} for v in value]
        elif kind == "rich_text":
            stored = rich_text(value)
        else:
            stored = value
        out = {"id": prop["id"], "type": kind, kind: stored}
        if kind == "relation":
            out["has_more"] = False
        return out


def _database(b: _Builder, key: str, schema: Record, icon: str, description: str) -> Record:
    created, edited = b.when.stamps()
    dbid = b.ids["database"][key]
    record = {
        "object": "database",
        "id": dbid,
        "cover": None,
        "icon": {"type": "emoji", "emoji": icon},
        "created_time": created,
        "created_by": user_ref(b.ids["user"]["maya"]),
        "last_edited_by": user_ref(b.ids["user"]["maya"]),
        "last_edited_time": edited,
        "title": rich_text(DB_KEYS[key]),
        "description": rich_text(description),
        "is_inline": False,
        "properties": schema,
        "parent": {"type": "page_id", "page_id": b.ids["page"]["hq"]},
        "url": notion_url("", dbid),
        "public_url": None,
        "archived": False,
        "in_trash": False,
    }
    b.databases.append(record)
    return record


def build_records() -> dict[str, list[Record]]:
    """The whole initial state: ``{"users": [...], "databases": [...], "pages": [...], ...}``."""
    b = _Builder()
    b.add_users()
    hq = b.ids["page"]["hq"]
    b.page(
        hq,
        {"type": "workspace", "workspace": True},
        {"title": title_value("Northwind Labs HQ")},
        "maya",
        "🏢",
        url_title="Northwind Labs HQ",
    )
    b.expand(
        "hq",
        {"type": "page_id", "page_id": hq},
        [
            (
                "callout",
                "Everything about Northwind Labs lives here. Ask Maya if you cannot find "
                "something.",
                "🏢",
            ),
            ("h2", "Team databases"),
        ],
        "maya",
    )
    sch = schemas()
    descriptions = {
        "projects": "All company projects with owners, budgets and deadlines.",
        "tasks": "Every task, linked to its project.",
        "meetings": "Notes from recurring and ad-hoc meetings.",
    }
    icons = {"projects": "🚀", "tasks": "✅", "meetings": "🗒️"}
    for n, key in enumerate(DB_KEYS):
        _database(b, key, sch[key], icons[key], descriptions[key])
        b.child_link(hq, 2 + n, "child_database", b.ids["database"][key], DB_KEYS[key])
    _add_projects(b, sch["projects"])
    _add_tasks(b, sch["tasks"])
    _add_wiki(b)
    _add_meetings(b, sch["meetings"])
    _add_comments(b)
    return {
        "users": b.users,
        "databases": b.databases,
        "pages": b.pages,
        "blocks": b.blocks,
        "comments": b.comments,
    }


def _add_projects(b: _Builder, schema: Record) -> None:
    v = _Values(b, "projects", schema)
    parent = {"type": "database_id", "database_id": b.ids["database"]["projects"]}
    for key, name, status, owner, prio, tags, start, due, budget, active, archived in data.PROJECTS:
        props = {
            "Name": v("Name", name),
            "Status": v("Status", status),
            "Owner": v("Owner", [owner]),
            "Priority": v("Priority", prio),
            "Tags": v("Tags", tags),
            "Start": v("Start", start),
            "Due": v("Due", due),
            "Budget": v("Budget", budget),
            "Active": v("Active", active),
        }
        b.page(b.ids["project"][key], parent, props, owner, archived=archived)


def _add_tasks(b: _Builder, schema: Record) -> None:
    v = _Values(b, "tasks", schema)
    parent = {"type": "database_id", "database_id": b.ids["database"]["tasks"]}
    rows = [(t, False) for t in data.TASKS] + [(t, True) for t in data.ARCHIVED_TASKS]
    owners = {p[0]: p[3] for p in data.PROJECTS}
    for row, archived in rows:
        name, project, status, assignee, due, estimate, labels = row[:7]
        done = row[7] if len(row) > 7 else status == "Done"
        props = {
            "Name": v("Name", name),
            "Status": v("Status", status),
            "Assignee": v("Assignee", [assignee] if assignee else []),
            "Project": v("Project", [b.ids["project"][project]] if project else []),
            "Due": v("Due", due),
            "Estimate": v("Estimate", estimate),
            "Labels": v("Labels", labels),
            "Done": v("Done", done),
        }
        author = owners.get(project, "maya")
        b.page(b.ids["task"][name], parent, props, author, archived=archived)


def _add_wiki(b: _Builder) -> None:
    hq = b.ids["page"]["hq"]
    top = 2 + len(DB_KEYS)
    sub_counts: dict[str, int] = {}
    for key, title, icon, parent_key, archived, blocks in content.WIKI:
        pid = b.ids["page"][key]
        holder = b.ids["page"][parent_key] if parent_key else hq
        b.page(
            pid,
            {"type": "page_id", "page_id": holder},
            {"title": title_value(title)},
            "maya" if parent_key is None else "diego",
            icon,
            archived,
            url_title=title,
        )
        b.expand(key, {"type": "page_id", "page_id": pid}, blocks, "maya")
        if parent_key is None:
            b.child_link(hq, top, "child_page", pid, title, archived)
            top += 1
        else:
            own = next(w[5] for w in content.WIKI if w[0] == parent_key)
            index = len(own) + sub_counts.get(parent_key, 0)
            sub_counts[parent_key] = sub_counts.get(parent_key, 0) + 1
            b.child_link(holder, index, "child_page", pid, title, archived)


def _add_meetings(b: _Builder, schema: Record) -> None:
    v = _Values(b, "meetings", schema)
    parent = {"type": "database_id", "database_id": b.ids["database"]["meetings"]}
    for key, title, date, kind, attendees, project, summary in data.MEETINGS:
        props = {
            "Name": v("Name", title),
            "Date": v("Date", date),
            "Type": v("Type", kind),
            "Attendees": v("Attendees", attendees),
            "Project": v("Project", [b.ids["project"][project]] if project else []),
            "Summary": v("Summary", summary),
        }
        pid = b.ids["meeting"][key]
        b.page(pid, parent, props, attendees[0])
        b.expand(
            key, {"type": "page_id", "page_id": pid}, content.MEETING_BLOCKS[key], attendees[0]
        )


def _add_comments(b: _Builder) -> None:
    for n, (kind, target, author, text) in enumerate(content.COMMENTS):
        pid = b.ids["page" if kind == "wiki" else kind][target]
        created, _ = b.when.stamps()
        b.comments.append(
            {
                "object": "comment",
                "id": stable_id("comment", str(n)),
                "parent": {"type": "page_id", "page_id": pid},
                "discussion_id": stable_id("discussion", kind, target),
                "created_time": created,
                "last_edited_time": created,
                "created_by": user_ref(b.ids["user"][author]),
                "rich_text": rich_text(text),
                "_seq": n,
            }
        )
