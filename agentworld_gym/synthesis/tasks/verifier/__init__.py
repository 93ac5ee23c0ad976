"""Stage 4, verifier: how a task is scored.

- :mod:`.rubric` — rubric criteria: a graph task's facts and writes, a program's answer;
- :mod:`.seal` — sealing: per-record state checks become one exact end-state check;
- :mod:`.scripts` — a template program's cross-check script;
- :mod:`.llm_script` — an LLM-written program's script, derived from its execution.
"""
