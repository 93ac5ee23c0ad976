"""Stage 1, sample (LLM route): task programs an LLM writes, run in the sandbox.

- :mod:`.writer` — the prompt, the reply parsed, the draft packaged as a candidate;
- :mod:`.policy` — what a program may contain, read from its syntax tree;
- :mod:`.execute` — running it in the sandbox, its tool calls proxied to the real runtime.

Its verification script is derived from the execution in
:mod:`agentworld_gym.synthesis.tasks.verifier.llm_script`.
"""
