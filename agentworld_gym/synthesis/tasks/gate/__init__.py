"""Stage 5, gate: which candidates are kept.

- :mod:`.accept` — solvable, stable and not trivial, judged with the task's own verifier.

The adversarial gate (tasks a weak policy solves are dropped) is
:mod:`agentworld_gym.adversarial`.
"""
