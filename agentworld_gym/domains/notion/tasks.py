"""All notion-v0 tasks (read, write and long-horizon), in a stable order.

``python -m agentworld_gym.domains.notion.build`` writes them to
``envs_generated/notion/tasks.json`` after replaying every gold chain.
"""

from __future__ import annotations

from typing import Any

from agentworld_gym.domains.notion.tasks_content import content_tasks
from agentworld_gym.domains.notion.tasks_long import long_tasks
from agentworld_gym.domains.notion.tasks_long_content import long_content_tasks
from agentworld_gym.domains.notion.tasks_read import read_tasks
from agentworld_gym.domains.notion.tasks_write import write_tasks


def all_tasks() -> list[dict[str, Any]]:
    tasks = read_tasks() + write_tasks() + content_tasks() + long_tasks() + long_content_tasks()
    tasks.sort(key=lambda t: ("rwl".index(t["id"].split("-")[1][0]), t["id"]))
    ids = [t["id"] for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate notion task ids")
    return tasks
