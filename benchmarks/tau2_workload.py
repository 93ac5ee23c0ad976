"""tau2-bench's gold workloads, timed the way ``workload.py`` times ours; prints JSON.

    /path/to/tau2-venv/bin/python benchmarks/tau2_workload.py --tau2 /path/to/tau2-bench \
        [--domains retail,airline] [--rounds 1] [--tasks N] [--out rows.json]

Run by ``workload.py --tau2 PATH --tau2-python PY`` (tau2-bench needs Python >= 3.12 and its
own environment; this script imports only tau2 and ``benchlib``, never ``agentworld_gym``).
For every task of the domain's standard ("base") split that has gold actions:

- reset: ``get_environment()`` (loads the domain database) plus the task's initial state;
- each gold action through ``Environment.get_response`` (tool call, ``sync_tools``, JSON
  text of the result: what tau2's orchestrator does per agent tool call), grouped by the
  tool's own READ / WRITE / GENERIC label; a call that returns an error goes to an
  ``(error path)`` row;
- verify: tau2's ``EnvironmentEvaluator.calculate_reward`` on the episode (it rebuilds the
  predicted and the gold environments and compares their database hashes), and, as the
  smallest possible check, the episode database's hash against the gold hash alone.

Loguru's sinks are removed first (a run of tau2 sets its own log level; printing every tool
result to stderr is not part of the work). Times are CPU (this thread) and wall, in µs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import sys
from pathlib import Path
from typing import Any

from benchlib import Load, Series, timed


def run_domain(
    domain: str, rounds: int, limit: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Time ``rounds`` replays of every gold episode of ``domain`` (the first ``limit``
    tasks); rows and metadata."""
    from tau2.data_model.message import AssistantMessage, ToolCall
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    module = importlib.import_module(f"tau2.domains.{domain}.environment")
    tasks = [
        t for t in module.get_tasks() if t.evaluation_criteria and t.evaluation_criteria.actions
    ][:limit]

    def new_env(task: Any) -> Any:
        env = module.get_environment()
        state = task.initial_state
        if state is not None:
            env.set_state(
                initialization_data=state.initialization_data,
                initialization_actions=state.initialization_actions,
                message_history=state.message_history or [],
            )
        return env

    gold_hash = {}
    for task in tasks:  # untimed: the gold end state each episode must reach
        env = new_env(task)
        for a in task.evaluation_criteria.actions:
            with contextlib.suppress(Exception):
                env.make_tool_call(a.name, requestor=a.requestor, **a.arguments)
        gold_hash[task.id] = env.get_db_hash()

    names = {
        "reset": "reset (get_environment + initial state)",
        "read": "read step",
        "write": "write step",
        "generic": "generic step (calculate, transfer)",
        "verify": "final answer + verify (evaluator DB check)",
        "hash": "verify (DB hash only)",
        "episode": "whole episode (reset + steps + evaluator)",
        "steps": "steps of one episode (no reset, no verify)",
    }
    series = {key: Series(name) for key, name in names.items()}
    errors: dict[str, Series] = {}
    tools: dict[str, Series] = {}
    failed_verify = 0
    for _ in range(rounds):
        for task in tasks:
            env, cpu, wall = timed(lambda t=task: new_env(t))
            series["reset"].add(cpu, wall)
            episode, steps = [cpu, wall], [0, 0]
            messages: list[Any] = []
            for k, a in enumerate(task.evaluation_criteria.actions):
                call = ToolCall(
                    id=f"call_{k}", name=a.name, arguments=a.arguments, requestor=a.requestor
                )
                result, cpu, wall = timed(lambda c=call, e=env: e.get_response(c))
                kind = env.tools.tool_type(a.name).value if env.tools.has_tool(a.name) else "user"
                if result.error:
                    errors.setdefault(kind, Series(f"{kind} step (error path)")).add(cpu, wall)
                else:
                    series.get(kind, series["generic"]).add(cpu, wall)
                    tools.setdefault(a.name, Series(f"{kind} {a.name}")).add(cpu, wall)
                steps[0] += cpu
                steps[1] += wall
                messages += [AssistantMessage(role="assistant", tool_calls=[call]), result]
            same, cpu, wall = timed(lambda e=env, t=task: e.get_db_hash() == gold_hash[t.id])
            series["hash"].add(cpu, wall)
            info, cpu, wall = timed(
                lambda t=task, m=messages: EnvironmentEvaluator.calculate_reward(
                    environment_constructor=module.get_environment, task=t, full_trajectory=m
                )
            )
            series["verify"].add(cpu, wall)
            failed_verify += not (same and info.reward >= 1.0 - 1e-9)
            series["steps"].add(*steps)
            series["episode"].add(episode[0] + steps[0] + cpu, episode[1] + steps[1] + wall)
    rows = [s.summary() for s in series.values()] + [s.summary() for s in errors.values()]
    per_tool = [s.summary() for s in sorted(tools.values(), key=lambda s: s.name)]
    meta = {
        "tasks": len(tasks),
        "calls": sum(len(t.evaluation_criteria.actions) for t in tasks),
        "failed_verify": failed_verify,
        "rounds": rounds,
    }
    return rows + per_tool, meta


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 2)[2],
    )
    parser.add_argument("--tau2", required=True, help="a tau2-bench checkout (its src/ is used)")
    parser.add_argument("--domains", default="retail,airline")
    parser.add_argument("--rounds", type=int, default=1, help="replays of every gold episode")
    parser.add_argument("--tasks", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--out", help="write the JSON here (default: stdout)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.tau2).resolve() / "src"))
    with contextlib.redirect_stdout(io.StringIO()):  # tau2 prints its registry on import
        import tau2
        from loguru import logger

        logger.remove()
        result: dict[str, Any] = {"tau2": str(Path(tau2.__file__).parent), "domains": {}}
        result["skipped"] = {}
        for domain in args.domains.split(","):
            try:
                with Load() as load:
                    rows, meta = run_domain(domain, args.rounds, args.tasks)
            except FileNotFoundError as exc:  # a checkout without the domain's data files
                result["skipped"][domain] = f"{type(exc).__name__}: {exc}"
                continue
            result["domains"][domain] = {"rows": rows, "meta": meta, "load": load.as_dict()}
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
