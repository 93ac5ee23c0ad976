"""Stage 2, goal: what a task asks, from its executed sample — facts to report, the end state.

- :mod:`.walk` — a graph walk's goal (``GraphTaskBuilder``);
- :mod:`.program` — a program's goal: its answer and gold chain (``ProgramTaskBuilder``).

Each builder then has the request written (:mod:`agentworld_gym.synthesis.tasks.request`) and
the verifier made (:mod:`agentworld_gym.synthesis.tasks.verifier`), and returns a candidate.
"""
