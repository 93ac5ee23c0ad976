"""The 19 operations of the official Notion MCP server, as OpenAPI 3.1 fragments.

Transcribed from ``scripts/notion-openapi.json`` of github.com/makenotion/notion-mcp-server
(the 1.x "database" edition that exposes ``API-post-database-query``; the 2.x file renamed the
database endpoints to data sources). Only what the server turns into MCP tools is kept:
summaries, parameters, request bodies and error-response descriptions. :mod:`.toolspecs`
converts these fragments exactly as the server's ``OpenAPIToMCPConverter`` does, so names,
descriptions and argument schemas match what an agent connected to the real server sees.
"""

from __future__ import annotations

from typing import Any

_BAD_REQUEST = {"400": {"description": "Bad request"}}
_BAD_400 = {"400": {"description": "400"}}

_CURSOR_QUERY = (
    "If supplied, this endpoint will return a page of results starting after the cursor "
    "provided. If not supplied, this endpoint will return the first page of results."
)
_PAGE_SIZE_QUERY = "The number of items from the full list desired in the response. Maximum: 100"
_TEXT_OBJECT = {
    "type": "object",
    "properties": {
        "content": {"type": "string"},
        "link": {
            "type": ["object", "null"],
            "properties": {"url": {"type": "string"}},
            "required": ["url"],
        },
    },
    "additionalProperties": False,
    "required": ["content"],
}

COMPONENTS: dict[str, Any] = {
    "richTextRequest": {
        "type": "object",
        "required": ["text"],
        "properties": {
            "text": {
                "type": "object",
                "required": ["content"],
                "properties": {
                    "content": {"type": "string"},
                    "link": {
                        "type": ["object", "null"],
                        "properties": {"url": {"type": "string"}},
                        "required": ["url"],
                    },
                },
                "additionalProperties": False,
            },
            "type": {"enum": ["text"], "type": "string"},
        },
        "additionalProperties": False,
    },
    "pageIdParentRequest": {
        "type": "object",
        "properties": {"page_id": {"type": "string", "format": "uuid"}},
        "required": ["page_id"],
    },
    "databaseIdParentRequest": {
        "type": "object",
        "properties": {"database_id": {"type": "string", "format": "uuid"}},
        "required": ["database_id"],
    },
    "parentRequest": {
        "oneOf": [
            {"$ref": "#/components/schemas/pageIdParentRequest"},
            {"$ref": "#/components/schemas/databaseIdParentRequest"},
        ]
    },
    "sortObject": {
        "type": "object",
        "required": ["property", "direction"],
        "properties": {
            "property": {"type": "string"},
            "direction": {"enum": ["ascending", "descending"], "type": "string"},
        },
    },
    "paragraphBlockRequest": {
        "type": "object",
        "properties": {
            "paragraph": {
                "type": "object",
                "properties": {
                    "rich_text": {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/richTextRequest"},
                        "maxItems": 100,
                    }
                },
                "additionalProperties": False,
                "required": ["rich_text"],
            },
            "type": {"enum": ["paragraph"], "type": "string"},
        },
        "additionalProperties": False,
    },
    "bulletedListItemBlockRequest": {
        "type": "object",
        "properties": {
            "bulleted_list_item": {
                "type": "object",
                "properties": {
                    "rich_text": {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/richTextRequest"},
                        "maxItems": 100,
                    }
                },
                "additionalProperties": False,
                "required": ["rich_text"],
            },
            "type": {"enum": ["bulleted_list_item"], "type": "string"},
        },
        "additionalProperties": False,
    },
    "blockObjectRequest": {
        "anyOf": [
            {"$ref": "#/components/schemas/paragraphBlockRequest"},
            {"$ref": "#/components/schemas/bulletedListItemBlockRequest"},
        ]
    },
}


def _path(name: str, description: str, fmt: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if fmt:
        schema["format"] = fmt
    param = {"name": name, "in": "path", "schema": schema, "required": True}
    if description:
        param["description"] = description
    return param


def _query(name: str, description: str, schema: dict[str, Any], required: bool = False):
    param = {"name": name, "in": "query", "description": description, "schema": schema}
    if required:
        param["required"] = True
    return param


def _body(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {"content": {"application/json": {"schema": schema}}}


def _title_property_value() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "title": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": _TEXT_OBJECT,
                        "type": {"enum": ["text"], "type": "string"},
                    },
                    "additionalProperties": False,
                    "required": ["text"],
                },
                "maxItems": 100,
            },
            "type": {"enum": ["title"], "type": "string"},
        },
        "additionalProperties": True,
    }


_RICH_TEXT_ARRAY = {"type": "array", "items": {"$ref": "#/components/schemas/richTextRequest"}}

OPERATIONS: list[dict[str, Any]] = [
    {
        "operationId": "get-user",
        "summary": "Retrieve a user",
        "parameters": [_path("user_id", "", "uuid")],
        "responses": _BAD_400,
    },
    {
        "operationId": "get-users",
        "summary": "List all users",
        "parameters": [
            _query("start_cursor", _CURSOR_QUERY, {"type": "string"}),
            _query("page_size", _PAGE_SIZE_QUERY, {"type": "integer", "default": 100}),
        ],
        "responses": _BAD_400,
    },
    {
        "operationId": "get-self",
        "summary": "Retrieve your token's bot user",
        "parameters": [],
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "post-database-query",
        "summary": "Query a database",
        "parameters": [
            _path("database_id", "Identifier for a Notion database."),
            _query(
                "filter_properties",
                "A list of page property value IDs associated with the database. Use this "
                "param to limit the response to a specific page property value or values for "
                "pages that meet the `filter` criteria.",
                {"type": "array", "items": {"type": "string"}},
            ),
        ],
        "requestBody": _body(
            {
                "filter": {
                    "type": "object",
                    "description": "When supplied, limits which pages are returned based on "
                    "the [filter conditions](ref:post-database-query-filter).",
                    "properties": {
                        "or": {
                            "type": "array",
                            "items": {"type": "object"},
                            "maxItems": 100,
                        },
                        "and": {
                            "type": "array",
                            "items": {"type": "object"},
                            "maxItems": 100,
                        },
                    },
                },
                "sorts": {
                    "type": "array",
                    "description": "When supplied, orders the results based on the provided "
                    "[sort criteria](ref:post-database-query-sort).",
                    "items": {"$ref": "#/components/schemas/sortObject"},
                },
                "start_cursor": {
                    "type": "string",
                    "description": "When supplied, returns a page of results starting after "
                    "the cursor provided. If not supplied, this endpoint will return the first "
                    "page of results.",
                },
                "page_size": {
                    "type": "integer",
                    "description": "The number of items from the full list desired in the "
                    "response. Maximum: 100",
                    "default": 100,
                },
                "archived": {"type": "boolean"},
                "in_trash": {"type": "boolean"},
            }
        ),
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "post-search",
        "summary": "Search by title",
        "parameters": [],
        "requestBody": _body(
            {
                "query": {
                    "type": "string",
                    "description": "The text that the API compares page and database titles "
                    "against.",
                },
                "sort": {
                    "type": "object",
                    "description": "A set of criteria, `direction` and `timestamp` keys, that "
                    "orders the results. The **only** supported timestamp value is "
                    '`"last_edited_time"`. Supported `direction` values are `"ascending"` and '
                    '`"descending"`. If `sort` is not provided, then the most recently edited '
                    "results are returned first.",
                    "properties": {
                        "direction": {
                            "type": "string",
                            "description": "The direction to sort. Possible values include "
                            "`ascending` and `descending`.",
                        },
                        "timestamp": {
                            "type": "string",
                            "description": "The name of the timestamp to sort against. "
                            "Possible values include `last_edited_time`.",
                        },
                    },
                },
                "filter": {
                    "type": "object",
                    "description": "A set of criteria, `value` and `property` keys, that limits "
                    "the results to either only pages or only databases. Possible `value` "
                    'values are `"page"` or `"database"`. The only supported `property` value '
                    'is `"object"`.',
                    "properties": {
                        "value": {
                            "type": "string",
                            "description": "The value of the property to filter the results "
                            "by.  Possible values for object type include `page` or `database`."
                            "  **Limitation**: Currently the only filter allowed is `object` "
                            "which will filter by type of object (either `page` or `database`)",
                        },
                        "property": {
                            "type": "string",
                            "description": "The name of the property to filter by. Currently "
                            "the only property you can filter by is the object type.  Possible "
                            "values include `object`.   Limitation: Currently the only filter "
                            "allowed is `object` which will filter by type of object (either "
                            "`page` or `database`)",
                        },
                    },
                },
                "start_cursor": {
                    "type": "string",
                    "description": "A `cursor` value returned in a previous response that If "
                    "supplied, limits the response to results starting after the `cursor`. If "
                    "not supplied, then the first page of results is returned. Refer to "
                    "[pagination](https://developers.notion.com/reference/intro#pagination) for "
                    "more details.",
                },
                "page_size": {
                    "type": "integer",
                    "description": "The number of items from the full list to include in the "
                    "response. Maximum: `100`.",
                    "default": 100,
                    "format": "int32",
                },
            }
        ),
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "get-block-children",
        "summary": "Retrieve block children",
        "parameters": [
            _path("block_id", "Identifier for a [block](ref:block)"),
            _query("start_cursor", _CURSOR_QUERY, {"type": "string"}),
            _query(
                "page_size",
                _PAGE_SIZE_QUERY,
                {"type": "integer", "format": "int32", "default": 100},
            ),
        ],
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "patch-block-children",
        "summary": "Append block children",
        "parameters": [
            _path(
                "block_id",
                "Identifier for a [block](ref:block). Also accepts a [page](ref:page) ID.",
            )
        ],
        "requestBody": _body(
            {
                "children": {
                    "type": "array",
                    "items": {"$ref": "#/components/schemas/blockObjectRequest"},
                    "description": "Child content to append to a container block as an array "
                    "of [block objects](ref:block)",
                },
                "after": {
                    "type": "string",
                    "description": "The ID of the existing block that the new block should be "
                    "appended after.",
                },
            },
            ["children"],
        ),
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "retrieve-a-block",
        "summary": "Retrieve a block",
        "parameters": [_path("block_id", "Identifier for a Notion block")],
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "update-a-block",
        "summary": "Update a block",
        "parameters": [_path("block_id", "Identifier for a Notion block")],
        "requestBody": _body(
            {
                "type": {
                    "type": "object",
                    "description": "The [block object `type`](ref:block#block-object-keys) "
                    "value with the properties to be updated. Currently only `text` (for "
                    "supported block types) and `checked` (for `to_do` blocks) fields can be "
                    "updated.",
                    "properties": {},
                },
                "archived": {
                    "type": "boolean",
                    "description": "Set to true to archive (delete) a block. Set to false to "
                    "un-archive (restore) a block.",
                    "default": True,
                },
            }
        ),
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "delete-a-block",
        "summary": "Delete a block",
        "parameters": [_path("block_id", "Identifier for a Notion block")],
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "retrieve-a-page",
        "summary": "Retrieve a page",
        "parameters": [
            _path("page_id", "Identifier for a Notion page"),
            _query(
                "filter_properties",
                "A list of page property value IDs associated with the page. Use this param to "
                "limit the response to a specific page property value or values. To retrieve "
                "multiple properties, specify each page property ID. For example: "
                "`?filter_properties=iAk8&filter_properties=b7dh`.",
                {"type": "string"},
            ),
        ],
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "patch-page",
        "summary": "Update page properties",
        "parameters": [_path("page_id", "The identifier for the Notion page to be updated.")],
        "requestBody": _body(
            {
                "properties": {
                    "description": "The property values to update for the page. The keys are "
                    "the names or IDs of the property and the values are property values. If a "
                    "page property ID is not included, then it is not changed.",
                    **_title_property_value(),
                },
                "in_trash": {
                    "type": "boolean",
                    "description": "Set to true to delete a block. Set to false to restore a "
                    "block.",
                    "default": False,
                },
                "archived": {"type": "boolean"},
                "icon": {
                    "description": "A page icon for the page. Supported types are [external "
                    "file object](https://developers.notion.com/reference/file-object) or "
                    "[emoji object](https://developers.notion.com/reference/emoji-object).",
                    "type": "object",
                    "properties": {"emoji": {"type": "string"}},
                    "additionalProperties": False,
                    "required": ["emoji"],
                },
                "cover": {
                    "type": "object",
                    "description": "A cover image for the page. Only [external file objects]"
                    "(https://developers.notion.com/reference/file-object) are supported.",
                    "properties": {
                        "external": {
                            "type": "object",
                            "properties": {"url": {"type": "string"}},
                            "additionalProperties": False,
                            "required": ["url"],
                        },
                        "type": {"enum": ["external"], "type": "string"},
                    },
                    "required": ["external"],
                    "additionalProperties": False,
                },
            }
        ),
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "post-page",
        "summary": "Create a page",
        "parameters": [],
        "requestBody": _body(
            {
                "parent": {"$ref": "#/components/schemas/parentRequest"},
                "properties": _title_property_value(),
                "children": {
                    "type": "array",
                    "description": "The content to be rendered on the new page, represented as "
                    "an array of [block objects](https://developers.notion.com/reference/block).",
                    "items": {"type": "string"},
                },
                "icon": {
                    "type": "string",
                    "description": "The icon of the new page. Either an [emoji object]"
                    "(https://developers.notion.com/reference/emoji-object) or an [external "
                    "file object](https://developers.notion.com/reference/file-object)..",
                    "format": "json",
                },
                "cover": {
                    "type": "string",
                    "description": "The cover image of the new page, represented as a [file "
                    "object](https://developers.notion.com/reference/file-object).",
                    "format": "json",
                },
            },
            ["parent", "properties"],
        ),
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "create-a-database",
        "summary": "Create a database",
        "parameters": [],
        "requestBody": _body(
            {
                "parent": {"$ref": "#/components/schemas/pageIdParentRequest"},
                "properties": {
                    "type": "object",
                    "description": "Property schema of database. The keys are the names of "
                    "properties as they appear in Notion and the values are [property schema "
                    "objects](https://developers.notion.com/reference/property-schema-object).",
                },
                "title": {**_RICH_TEXT_ARRAY, "maxItems": 100},
            },
            ["parent", "properties"],
        ),
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "update-a-database",
        "summary": "Update a database",
        "parameters": [_path("database_id", "identifier for a Notion database")],
        "requestBody": _body(
            {
                "title": {
                    **_RICH_TEXT_ARRAY,
                    "description": "An array of [rich text objects](https://developers.notion."
                    "com/reference/rich-text) that represents the title of the database that is "
                    "displayed in the Notion UI. If omitted, then the database title remains "
                    "unchanged.",
                },
                "description": {
                    **_RICH_TEXT_ARRAY,
                    "maxItems": 100,
                    "description": "An array of [rich text objects](https://developers.notion."
                    "com/reference/rich-text) that represents the description of the database "
                    "that is displayed in the Notion UI. If omitted, then the database "
                    "description remains unchanged.",
                },
                "properties": {
                    "type": "object",
                    "description": "The properties of a database to be changed in the request, "
                    "in the form of a JSON object. If updating an existing property, then the "
                    "keys are the names or IDs of the properties as they appear in Notion, and "
                    "the values are [property schema objects](ref:property-schema-object). If "
                    "adding a new property, then the key is the name of the new database "
                    "property and the value is a [property schema object]"
                    "(ref:property-schema-object).",
                },
            }
        ),
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "retrieve-a-database",
        "summary": "Retrieve a database",
        "parameters": [_path("database_id", "An identifier for the Notion database.")],
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "retrieve-a-page-property",
        "summary": "Retrieve a page property item",
        "parameters": [
            _path("page_id", "Identifier for a Notion page"),
            _path(
                "property_id",
                "Identifier for a page [property](https://developers.notion.com/reference/"
                "page#all-property-values)",
            ),
            _query(
                "page_size",
                "For paginated properties. The max number of property item objects on a page. "
                "The default size is 100",
                {"type": "integer", "format": "int32"},
            ),
            _query("start_cursor", "For paginated properties.", {"type": "string"}),
        ],
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "retrieve-a-comment",
        "summary": "Retrieve comments",
        "description": "Retrieves a list of un-resolved [Comment objects](ref:comment-object) "
        "from a page or block.",
        "parameters": [
            _query(
                "block_id",
                "Identifier for a Notion block or page",
                {"type": "string"},
                required=True,
            ),
            _query("start_cursor", _CURSOR_QUERY, {"type": "string"}),
            _query("page_size", _PAGE_SIZE_QUERY, {"type": "integer", "format": "int32"}),
        ],
        "responses": _BAD_REQUEST,
    },
    {
        "operationId": "create-a-comment",
        "summary": "Create comment",
        "description": "Creates a comment in a page or existing discussion thread.",
        "requestBody": _body(
            {
                "parent": {
                    "type": "object",
                    "description": "The page that contains the comment",
                    "required": ["page_id"],
                    "properties": {"page_id": {"type": "string", "description": "the page ID"}},
                },
                "rich_text": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["text"],
                        "properties": {
                            "text": {
                                "type": "object",
                                "required": ["content"],
                                "properties": {
                                    "content": {
                                        "type": "string",
                                        "description": "The content of the comment",
                                    }
                                },
                            }
                        },
                    },
                },
            },
            ["parent", "rich_text"],
        ),
        "responses": _BAD_REQUEST,
    },
]
"""In the order the server lists them (its ``paths`` order)."""
