"""Stage 3, request: the words a user would say for a task's goal.

- :mod:`.walk` — a graph task's request, one sentence per outcome of its walk;
- :mod:`.program` — how program requests say things (conditions, verbs, records by name);
- :mod:`.render` — shared by both: quoting, plurals, the leak check, an LLM paraphrase.
"""
