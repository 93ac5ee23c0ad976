"""``AgentWorld/notion-v0``: a Notion workspace behind the official Notion MCP server's tools.

Tool surface: :mod:`.openapi` (the server's OpenAPI operations) and :mod:`.toolspecs` (converted
to tool specs the way the server converts them). API semantics: :mod:`.objects` (shapes, ids,
errors, cursors), :mod:`.properties` (schemas and values), :mod:`.filters` (query filters and
sorts). Tools: :mod:`.blocks`, :mod:`.pages`, :mod:`.databases`, :mod:`.workspace`, re-exported
by :mod:`.tools`. Data: :mod:`.seed_data`, :mod:`.seed_content`, :mod:`.seed_schema` and
:mod:`.seed` (the Northwind Labs workspace). Tasks: :mod:`.taskkit` and ``tasks_*``, collected by
:mod:`.tasks` and validated by :mod:`.selfcheck`. :mod:`.build` writes ``envs_generated/notion``.
"""
