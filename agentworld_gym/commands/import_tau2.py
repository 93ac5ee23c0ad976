"""``agentworld import-tau2 PATH``: a τ²-bench checkout's domains as AgentWorld environments."""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-tau2",
        help="expose a local tau2-bench checkout's domains as AgentWorld/tau2-* environments",
        description=(
            "Check a local checkout of sierra-research/tau2-bench and expose its domains "
            "(retail, airline, telecom) as Gymnasium environments on tau2's own tools, "
            "database and evaluators. Every task's gold actions are replayed through the "
            "environment with a scripted user and scored by tau2's evaluators (NL assertions "
            "stay unjudged without an LLM judge). Register the environments in a process with "
            "AGENTWORLD_TAU2=PATH (read by import agentworld_gym) or "
            "agentworld_gym.tau2.register(PATH). Needs the 'tau2' extra."
        ),
    )
    p.add_argument("path", help="the tau2-bench checkout (with src/tau2 and data/tau2)")
    p.add_argument(
        "--domains", nargs="+", default=None, help="domains (default: retail airline telecom)"
    )
    p.add_argument("--limit", type=int, default=None, help="replay at most N tasks per domain")
    p.add_argument("--no-replay", action="store_true", help="only load the domains")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_import_tau2)


def domain_report(path: str, domain: str, limit: int | None, replay: bool) -> dict[str, Any]:
    """One domain's tasks, tools and (with ``replay``) its gold replays' rewards."""
    from agentworld_gym.tau2 import Tau2ScriptedUser, gym_id
    from agentworld_gym.tau2.env import Tau2Env
    from agentworld_gym.tau2.replay import replay_gold

    env = Tau2Env(path, domain, split="all", user=Tau2ScriptedUser({}))
    tasks = env.domain.tasks
    bases = Counter(
        "+".join(b.value for b in t.evaluation_criteria.reward_basis)
        for t in tasks
        if t.evaluation_criteria is not None
    )
    row: dict[str, Any] = {
        "domain": domain,
        "gym_id": gym_id(domain),
        "tasks": len(tasks),
        "splits": {k: len(v) for k, v in env.domain.splits.items()},
        "tools": len(env._tool_schemas),
        "user_tools": len(env._user_schemas),
        "reward_basis": dict(bases),
    }
    if not replay:
        return row
    start = time.perf_counter()
    rewards, unjudged, failures = [], 0, []
    for task in tasks[:limit]:
        verification = replay_gold(env, task).get("verification", {})
        rewards.append(verification.get("reward", 0.0))
        unjudged += bool(verification.get("needs_judge"))
        if verification.get("reward") != 1.0:
            failures.append({"task_id": task.id, "breakdown": verification.get("breakdown")})
    row["replay"] = {
        "replayed": len(rewards),
        "reward_1": sum(r == 1.0 for r in rewards),
        "nl_unjudged": unjudged,
        "failures": failures,
        "seconds": round(time.perf_counter() - start, 1),
    }
    return row


def cmd_import_tau2(args: argparse.Namespace) -> int:
    from agentworld_gym.tau2 import DOMAINS
    from agentworld_gym.tau2.checkout import Tau2Checkout

    checkout = Tau2Checkout.open(args.path)
    names = args.domains or [d for d in DOMAINS if d in checkout.domain_names()]
    rows = []
    for name in names:
        try:
            rows.append(domain_report(args.path, name, args.limit, not args.no_replay))
        except (OSError, ValueError) as exc:  # a partial checkout: missing data files
            rows.append({"domain": name, "error": f"{type(exc).__name__}: {exc}"})
    if args.json:
        print(json.dumps({"checkout": str(checkout.path), "domains": rows}, indent=2))
        return 0
    print(f"{'domain':<10} {'gym id':<28} {'tasks':>5} {'tools':>5} {'user':>4}  gold replay")
    for row in rows:
        if "error" in row:
            print(f"{row['domain']:<10} error: {row['error']}")
            continue
        replay = row.get("replay")
        summary = (
            f"{replay['reward_1']}/{replay['replayed']} reward 1.0 "
            f"({replay['nl_unjudged']} with NL assertions unjudged; {replay['seconds']} s)"
            if replay
            else "-"
        )
        print(
            f"{row['domain']:<10} {row['gym_id']:<28} {row['tasks']:>5} {row['tools']:>5} "
            f"{row['user_tools']:>4}  {summary}"
        )
        for failure in (replay or {}).get("failures", [])[:10]:
            print(f"    task {failure['task_id']}: {failure['breakdown']}")
    print(f"\nregister them: AGENTWORLD_TAU2={checkout.path} (read by import agentworld_gym)")
    return 0
