"""The 19 tools of ``AgentWorld/notion-v0``: the functions named by the tool entrypoints.

Each is called as ``fn(ctx, **arguments)`` after the runtime has validated the arguments
against the tool's JSON Schema; an API-level failure raises ``ToolExecutionError`` whose body
is a Notion error object (``{"object": "error", "status": 404, "code": "object_not_found",
...}``), and the runtime rolls back any write made before it.
"""

from __future__ import annotations

from agentworld_gym.domains.notion.blocks import (
    delete_a_block,
    get_block_children,
    patch_block_children,
    retrieve_a_block,
    update_a_block,
)
from agentworld_gym.domains.notion.databases import (
    create_a_database,
    post_database_query,
    retrieve_a_database,
    update_a_database,
)
from agentworld_gym.domains.notion.pages import (
    patch_page,
    post_page,
    retrieve_a_page,
    retrieve_a_page_property,
)
from agentworld_gym.domains.notion.workspace import (
    create_a_comment,
    get_self,
    get_user,
    get_users,
    post_search,
    retrieve_a_comment,
)

__all__ = [
    "create_a_comment",
    "create_a_database",
    "delete_a_block",
    "get_block_children",
    "get_self",
    "get_user",
    "get_users",
    "patch_block_children",
    "patch_page",
    "post_database_query",
    "post_page",
    "post_search",
    "retrieve_a_block",
    "retrieve_a_comment",
    "retrieve_a_database",
    "retrieve_a_page",
    "retrieve_a_page_property",
    "update_a_block",
    "update_a_database",
]
