"""Task synthesis: from an environment to verified tasks, in five stages.

Start here. Each task is made in the same order, one subpackage per stage; two routes run
through it: **graph walks** (tool calls chained by what they return; rubric verifiers) and
**programs** (real control flow over tool results, from templates or written by an LLM).

1. **sample** (:mod:`.sample`) — something to execute on a fork of the environment:

   - :mod:`.sample.graph` — the tool-dependency graph (which output feeds which input);
   - :mod:`.sample.walk` — weighted walks over it, each call executed as it is drawn;
   - :mod:`.sample.programs` — the program runtime: ``Program``, ``Caller``, capabilities;
   - :mod:`.sample.templates` — the program templates (the table; one module per kind:
     ``listing``, ``aggregate``, ``given``, ``lookup_create``, and ``shapes`` they share);
   - :mod:`.sample.llm` — programs an LLM writes: ``writer`` (prompt, parse, package),
     ``policy`` (what the source may contain), ``execute`` (run in the sandbox, calls proxied).

2. **goal** (:mod:`.goal`) — what the task asks, from the executed sample: the facts to
   report and the end state; each builder also assembles the candidate:

   - :mod:`.goal.walk` — a walk's facts, its needed steps, its stable values;
   - :mod:`.goal.program` — a template drawn and run: its answer and its gold chain.

3. **request** (:mod:`.request`) — the words. *A request's wording comes from here:*

   - :mod:`.request.walk` — a graph task's request, written from the goal of its walk;
   - :mod:`.request.program` — how program requests say things (used by every template);
   - :mod:`.request.render` — shared: quoting, plurals, the leak check, an LLM paraphrase.

4. **verifier** (:mod:`.verifier`) — how a task is scored. *A verifier comes from here:*

   - :mod:`.verifier.rubric` — rubric criteria: a graph task's facts and writes, a program's
     answer;
   - :mod:`.verifier.seal` — sealing: the rubric's state checks become one exact-state check;
   - :mod:`.verifier.scripts` — a template program's cross-check script (recomputes the truth);
   - :mod:`.verifier.llm_script` — an LLM program's script, derived from what it did.

5. **gate** (:mod:`.gate`) — what is kept:

   - :mod:`.gate.accept` — solvable, stable, not trivial (the adversarial gate is
     :mod:`agentworld_gym.adversarial`).

Shared by every stage:

- :mod:`.model` — what synthesis knows of an environment: its tools' roles, its state;
- :mod:`.runner` — executing calls through the agent's own runtime, on forks;
- :mod:`.values` — seeded values and rngs (the same seed gives the same bytes);
- :mod:`.candidate` — a task before acceptance, with the evidence the gate needs.

Drivers and reports:

- :mod:`.pipeline` — one environment: sample, build, seal, judge, split train/test;
- :mod:`.catalog` — every environment, in worker processes (``agentworld synth tasks``);
- :mod:`.stats` — task statistics per category (``agentworld tasks stats``);
- :mod:`.sft` — gold trajectories as SFT data (``agentworld synth export-sft``).
"""

from __future__ import annotations

from agentworld_gym.synthesis.tasks.pipeline import (
    EnvReport,
    EnvSynthesizer,
    TaskSynthConfig,
    synthesize_tasks,
)

__all__ = ["EnvReport", "EnvSynthesizer", "TaskSynthConfig", "synthesize_tasks"]
