"""Stage 1, sample: something to execute — a walk over the tool graph, or a program instance.

- :mod:`.graph` — the tool-dependency graph; :mod:`.walk` — weighted walks, executed;
- :mod:`.programs` — the program runtime; :mod:`.templates` — the program templates;
- :mod:`.llm` — programs an LLM writes, checked and run in the sandbox.
"""
