"""Write ``envs_generated/notion`` (env.json, db/*.json, tasks.json) for ``AgentWorld/notion-v0``.

Run ``python -m agentworld_gym.domains.notion.build [--out DIR] [--no-check]``. The output is
deterministic (two runs give byte-identical files); by default every task's gold chain is
replayed through the environment and the build fails if one does not earn 1.0.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from agentworld_gym.domains.notion.seed import build_records
from agentworld_gym.domains.notion.toolspecs import tool_specs
from agentworld_gym.spec import EnvSpec, RuntimeSpec, TaskSpec, ToolSpec

DEFAULT_OUT = Path(__file__).resolve().parents[3] / "envs_generated" / "notion"
CLOCK = "2026-08-05T09:00:00Z"
SYSTEM_PROMPT = (
    "You are an assistant connected to the Northwind Labs Notion workspace through the "
    "official Notion MCP server (the API-* tools). Today is Wednesday 2026-08-05 and the time "
    "is 09:00 UTC. Use the tools to look things up and to make the requested changes; ids "
    "come from earlier tool results, never guess them. When you are done, reply with a short "
    "final answer that states the facts or numbers you were asked for."
)


def make_spec(tasks: list[dict[str, Any]] | None = None) -> EnvSpec:
    """The EnvSpec of notion-v0, with its records in memory and every task sealed: its
    verifier checks the exact end state its gold chain makes (see
    :mod:`agentworld_gym.synthesis.tasks.verifier.seal`)."""
    from agentworld_gym.synthesis.tasks.verifier.seal import seal_spec

    if tasks is None:
        from agentworld_gym.domains.notion.tasks import all_tasks

        tasks = all_tasks()
    records = build_records()
    spec = EnvSpec(
        id="notion",
        name="Notion",
        version=0,
        description=(
            "A Notion workspace of a small software company (Northwind Labs): a wiki with "
            "nested blocks, Projects, Tasks and Meeting Notes databases with people, relation, "
            "status, select, date and number properties, and comments. Driven through the 19 "
            "tools of the official Notion MCP server with Notion's filter, sort, pagination, "
            "archival and error semantics."
        ),
        tools=[ToolSpec(**spec) for spec in tool_specs()],
        collections={name: {"primary_key": "id"} for name in records},
        taxonomy={
            "l1": "L1-17 Document & Design",
            "l2": "Notes & Knowledge Bases",
            "l3": "Workspace wikis",
        },
        provenance={
            "source": "Official Notion MCP server tool surface (github.com/makenotion/"
            "notion-mcp-server, scripts/notion-openapi.json, 1.x database edition): tool "
            "names, descriptions and argument schemas as the server publishes them.",
            "semantics": "Notion API 2022-06-28 behaviour (filters, sorts, cursor pagination, "
            "archival, error objects) re-implemented over a synthetic workspace.",
            "data": "synthetic, deterministic (agentworld_gym.domains.notion.seed)",
            "license": "MIT (tool schemas, from makenotion/notion-mcp-server); data original",
            "tasks": "hand-written",
        },
        runtime=RuntimeSpec(max_turns=40, clock=CLOCK, system_prompt=SYSTEM_PROMPT),
        tasks=[TaskSpec(**t) for t in tasks],
        records=records,
    )
    unsealed = seal_spec(spec)
    if unsealed:
        raise SystemExit(f"notion tasks could not be sealed: {unsealed}")
    _stamp_horizon(spec)
    return spec


def _stamp_horizon(spec: EnvSpec) -> None:
    """Each task's turn budget and long-horizon flag, by the rule synthesized tasks follow
    (:func:`agentworld_gym.synthesis.tasks.candidate.horizon`, on a replay of its gold)."""
    from agentworld_gym.synthesis.tasks.candidate import horizon
    from agentworld_gym.synthesis.tasks.runner import Runner

    runner = Runner(spec)
    for task in spec.tasks:
        calls = (task.gold or {}).get("calls") or []
        stamp = horizon(calls, runner, task.id, task.instruction, set(), spec.runtime.max_turns)
        task.difficulty = {**task.difficulty, **stamp}


def write(out: Path = DEFAULT_OUT, check: bool = True) -> EnvSpec:
    """Build, optionally validate by replaying every gold chain, and write the folder."""
    spec = make_spec()
    if check:
        from agentworld_gym.domains.notion.selfcheck import check_tasks

        problems = check_tasks(spec)
        if problems:
            raise SystemExit("notion tasks failed validation:\n" + "\n".join(problems))
    if (out / "db").exists():
        shutil.rmtree(out / "db")
    spec.save(out)
    _refresh_index(out, spec)
    return spec


def _refresh_index(out: Path, spec: EnvSpec) -> None:
    """Keep the catalog index's entry of the written folder in step (task count, tools)."""
    from agentworld_gym.registry import entry_for, read_index, write_index

    entries = read_index(out.parent)
    if not entries:
        return
    fresh = entry_for(spec, out.name)
    write_index(out.parent, [fresh if e.path == out.name else e for e in entries])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-check", action="store_true", help="skip gold-chain replay")
    args = parser.parse_args(argv)
    spec = write(args.out, check=not args.no_check)
    counts = {name: len(rows) for name, rows in (spec.records or {}).items()}
    print(f"wrote {args.out}: {len(spec.tools)} tools, {len(spec.tasks)} tasks, records {counts}")


if __name__ == "__main__":
    main()
