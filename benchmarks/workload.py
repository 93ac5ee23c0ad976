"""Gold workloads: what a trainer pays per episode, per step kind, tool and environment.

    python benchmarks/workload.py [--envs 20] [--rounds 5] [--seed 0]
    python benchmarks/workload.py --tau2 /path/to/tau2-bench --tau2-python /path/to/py3.12
    python benchmarks/workload.py --compare ../other-checkout --ab-rounds 4

Every task's gold tool chain is replayed through ``env.step`` (references to earlier outputs
resolved live, as ``replay_gold`` does), then its gold final answer is submitted, which runs
the verifier. Timed per step: reset, each read and write call, the final answer + verify,
and the whole episode (their sum). Workloads: notion (hand-built) and a seeded sample of
catalog environments (``--envs``, ``--seed``). Tasks whose gold chain does not replay to 1.0
are left out (counted in the header). A call that fails goes to an ``(error path)`` row.

With ``--tau2 PATH`` the same is done for tau2-bench's retail and airline domains in the same
run, by ``tau2_workload.py`` under ``--tau2-python`` (tau2 needs Python >= 3.12 and its own
environment), and printed beside ours with ratios; without it, or when tau2 does not import,
a line says it was skipped. Times: CPU (this thread) and wall, µs; ratios on CPU means
(the total a trainer pays) and medians.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchlib import (
    Load,
    Series,
    answer_action,
    gold_action,
    gold_calls,
    load_line,
    package_line,
    parse,
    parse_output,
    parser_for,
    table,
    timed,
    write_json,
)

HERE = Path(__file__).resolve().parent
OPS = ("reset", "read", "write", "verify", "rubric", "script", "episode", "steps")
LABELS = {
    "reset": "reset",
    "read": "read step",
    "write": "write step",
    "verify": "final answer + verify",
    "rubric": "final answer + verify, rubric tasks",
    "script": "final answer + verify, script tasks",
    "episode": "whole episode (reset + steps + verify)",
    "steps": "steps of one episode (no reset, no verify)",
}


class Workload:
    """Series of one workload: per operation, per tool, per environment, and error paths."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ops = {op: Series(f"{name}: {LABELS[op]}") for op in OPS}
        self.errors: dict[str, Series] = {}
        self.tools: dict[str, Series] = {}
        self.envs: dict[str, dict[str, Series]] = {}
        self.tasks = self.skipped = self.failed_verify = self.calls = 0

    def rows(self) -> list[dict[str, Any]]:
        return [s.summary() for s in self.ops.values()] + [
            s.summary() for s in self.errors.values()
        ]


def play_episode(env: Any, task: Any, kinds: dict[str, str], load: Workload, env_id: str) -> None:
    """One gold episode, every step timed into ``load``."""
    per_env = load.envs.setdefault(env_id, {op: Series(op) for op in OPS})
    _, cpu, wall = timed(lambda: env.reset(options={"task_id": task.id}))
    total, steps = [cpu, wall], [0, 0]
    for op, c, w in [("reset", cpu, wall)]:
        load.ops[op].add(c, w)
        per_env[op].add(c, w)
    outputs: list[Any] = []
    for call in gold_calls(task):
        action = gold_action(call, outputs)
        (obs, *_, info), cpu, wall = timed(lambda a=action: env.step(a))
        kind = kinds.get(call["name"], "write")
        if info["tool_results"][0]["ok"]:
            load.ops[kind].add(cpu, wall)
            per_env[kind].add(cpu, wall)
            name = f"{load.name} {kind} {call['name']}"
            load.tools.setdefault(name, Series(name)).add(cpu, wall)
        else:
            name = f"{load.name}: {LABELS[kind]} (error path)"
            load.errors.setdefault(name, Series(name)).add(cpu, wall)
        steps[0] += cpu
        steps[1] += wall
        outputs.append(parse_output(obs))
    action = answer_action(task)
    (_, reward, terminated, _, _), cpu, wall = timed(lambda: env.step(action))
    if terminated and reward >= 1.0 - 1e-9:
        kind = "script" if task.verifier.get("type") == "script" else "rubric"
        for op in ("verify", kind):
            load.ops[op].add(cpu, wall)
            per_env[op].add(cpu, wall)
    else:
        load.failed_verify += 1
        name = f"{load.name}: final answer + verify (error path: reward < 1)"
        load.errors.setdefault(name, Series(name)).add(cpu, wall)
    for op, c, w in (
        ("steps", *steps),
        ("episode", total[0] + steps[0] + cpu, total[1] + steps[1] + wall),
    ):
        load.ops[op].add(c, w)
        per_env[op].add(c, w)


def run_ours(args: argparse.Namespace) -> list[Workload]:
    from agentworld_gym.env import AgentWorldEnv
    from agentworld_gym.registry import list_envs, load_spec
    from agentworld_gym.replay import replay_gold

    entries = [e for e in list_envs() if e.id != "notion"]
    sample = sorted(
        random.Random(args.seed).sample(entries, min(args.envs, len(entries))), key=lambda e: e.id
    )
    plan = [(Workload("notion"), ["AgentWorld/notion-v0"])]
    if sample:
        plan.append((Workload(f"catalog ({len(sample)} envs)"), [e.gym_id for e in sample]))
    prepared = []
    for load, ids in plan:
        for gym_id in ids:
            spec = load_spec(gym_id)
            env = AgentWorldEnv(spec, split="all", max_turns=10**9)
            tasks = [t for t in spec.tasks if gold_calls(t)]
            ok = [t for t in tasks if replay_gold(env, t).ok]  # untimed: validation, warm-up
            load.tasks += len(ok)
            load.skipped += len(spec.tasks) - len(ok)
            load.calls += sum(len(gold_calls(t)) for t in ok)
            prepared.append((load, gym_id, env, ok, {t.name: t.kind for t in spec.tools}))
    for _ in range(args.rounds):
        for load, gym_id, env, tasks, kinds in prepared:
            for task in tasks:
                play_episode(env, task, kinds, load, gym_id)
    return [load for load, _ in plan]


def run_tau2(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    """tau2's workloads from ``tau2_workload.py`` under its own Python, or why not."""
    if not args.tau2:
        return None, "tau2-bench: skipped (no --tau2 PATH given)"
    python = args.tau2_python or sys.executable
    src = str(Path(args.tau2).resolve() / "src")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    probe = subprocess.run(
        [python, "-c", f"import sys; sys.path.insert(0, {src!r}); import tau2"],
        capture_output=True,
        text=True,
        env=env,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"tau2-bench: skipped (not importable with {python}: {last})"
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    cmd = [
        python,
        str(HERE / "tau2_workload.py"),
        "--tau2",
        args.tau2,
        "--rounds",
        str(args.tau2_rounds),
        "--out",
        out,
    ]
    if args.tau2_tasks:
        cmd += ["--tasks", str(args.tau2_tasks)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"tau2-bench: skipped (tau2_workload.py failed: {last})"
    data = json.loads(Path(out).read_text())
    os.unlink(out)
    line = f"tau2-bench from {data['tau2']}"
    for domain, why in data.get("skipped", {}).items():
        line += f"; tau2 {domain}: skipped ({why})"
    return data, line


PAIRS = (
    ("read step", "read step", "read step"),
    ("write step", "write step", "write step"),
    ("verify (tau2: evaluator)", LABELS["verify"], "final answer + verify (evaluator"),
    ("verify (tau2: DB hash only)", LABELS["verify"], "verify (DB hash only)"),
    ("steps of one episode", "steps of one episode", "steps of one episode"),
    ("whole episode", "whole episode", "whole episode"),
)
"""(label, our row, tau2's row): names are matched by prefix after the workload name."""


def _find(rows: list[dict[str, Any]], prefix: str, key: str) -> float | None:
    for r in rows:
        if r["name"].split(": ", 1)[-1].startswith(prefix) and r.get("n"):
            return r[key]
    return None


def _cell(value: float | None, ratio: bool = False) -> str:
    if value is None:
        return f"{'-':>9}"
    return f"{value:>8.2f}x" if ratio else f"{value:>9.1f}"


def ratio_table(ours: list[Workload], tau2: dict[str, Any] | None) -> str:
    """tau2 / ours per step kind, CPU time: > 1 means ours is cheaper."""
    if not tau2:
        return ""
    lines = [
        f"| {'ours vs tau2 (CPU µs)':<60} | {'ours mean':>9} | {'tau2 mean':>9} "
        f"| {'tau2/ours':>9} | {'ours med':>9} | {'tau2 med':>9} | {'tau2/ours':>9} |",
        f"|{'-' * 62}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 11}|",
    ]
    for load in ours:
        for domain, data in tau2["domains"].items():
            for label, mine, theirs in PAIRS:
                cells = []
                for key in ("cpu_mean", "cpu_med"):
                    a, b = _find(load.rows(), mine, key), _find(data["rows"], theirs, key)
                    cells += [_cell(a), _cell(b), _cell(b / a if a and b else None, ratio=True)]
                name = f"{load.name} / tau2 {domain}: {label}"
                lines.append(f"| {name:<60} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def env_table(load: Workload) -> str:
    """One line per environment of a workload: CPU means (µs)."""
    head = f"| {'environment':<60} | " + " | ".join(f"{op:>8}" for op in OPS) + " |"
    lines = [head, "|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|"]
    for env_id, ops in sorted(load.envs.items()):
        cells = [f"{s.summary()['cpu_mean']:>8.1f}" if s.cpu else f"{'-':>8}" for s in ops.values()]
        lines.append(f"| {env_id:<60} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = parser_for(__doc__)
    parser.add_argument("--envs", type=int, default=20, help="catalog environments sampled")
    parser.add_argument("--seed", type=int, default=0, help="seed of the catalog sample")
    parser.add_argument("--rounds", type=int, default=5, help="replays of every gold episode")
    parser.add_argument("--tau2", metavar="PATH", help="a tau2-bench checkout to time beside ours")
    parser.add_argument("--tau2-python", metavar="PY", help="a Python that imports tau2")
    parser.add_argument("--tau2-rounds", type=int, default=1, help="replays of tau2's episodes")
    parser.add_argument("--tau2-tasks", type=int, default=None, help="first N tau2 tasks only")
    parser.add_argument("--per-env", action="store_true", help="also print one line per env")
    parsed = parse(parser, __file__)
    if parsed is None:
        return
    args, pinned = parsed
    import agentworld_gym  # noqa: F401  (registers the catalog)

    with Load() as load:
        ours = run_ours(args)
    tau2, tau2_line = run_tau2(args)
    rows = [r for w in ours for r in w.rows()]
    print(f"\n{package_line()}; {pinned}; µs per operation")
    for w in ours:
        print(
            f"{w.name}: {w.tasks} tasks x {args.rounds} rounds, {w.calls} gold calls per "
            f"round, {w.skipped} tasks left out (no chain replaying to 1.0)"
        )
    print(f"{load_line(load.as_dict())}\n{tau2_line}")
    if tau2:
        for domain, data in tau2["domains"].items():
            meta = data["meta"]
            print(
                f"tau2 {domain}: {meta['tasks']} tasks x {meta['rounds']} rounds, "
                f"{meta['calls']} gold calls per round, {meta['failed_verify']} failed verify; "
                f"{load_line(data['load'])}"
            )
            for r in data["rows"]:
                if not r.get("n"):
                    continue
                if not r["name"].startswith(("read ", "write ", "generic ")) or "step" in r["name"]:
                    rows.append({**r, "name": f"tau2 {domain}: {r['name']}"})
    print()
    print(table(rows))
    if tau2:
        print()
        print(ratio_table(ours, tau2))
    print()
    print(table(s.summary() for s in sorted(ours[0].tools.values(), key=lambda s: s.name)))
    if tau2:
        for domain, data in tau2["domains"].items():
            tools = [r for r in data["rows"] if r["name"].startswith(("read ", "write "))]
            tools = [
                {**r, "name": f"tau2 {domain} {r['name']}"}
                for r in tools
                if "step" not in r["name"]
            ]
            print()
            print(table(tools))
    if args.per_env and len(ours) > 1:
        print()
        print(env_table(ours[1]))
    tool_rows = [s.summary() for w in ours for s in w.tools.values()]
    write_json(args.json, rows + tool_rows, load.as_dict(), package=package_line())


if __name__ == "__main__":
    main()
