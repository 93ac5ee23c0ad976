"""Do our τ² environments score what tau2-bench's own pipeline scores? Two steps.

    # 1. episodes through our env (this package's venv): trajectories and our rewards
    .venv/bin/python benchmarks/tau2_agreement.py play --tau2 PATH --domain retail \
        --out retail.json [--random 150]
    # 2. tau2's own evaluate_simulation on the same trajectories (a venv with tau2 installed:
    #    Python >= 3.12, pip install PATH); imports only tau2, never agentworld_gym
    /path/to/tau2-venv/bin/python benchmarks/tau2_agreement.py judge --domain retail retail.json

``play`` runs, for every task of the domain: its gold actions (``replay_gold``: the user's
own gold calls made by a scripted user), a lazy agent (one message, no call) and the gold
minus its last write; with ``--random N`` also N random policies (calls borrowed from all
tasks' gold actions, some arguments spoilt, unknown tools, plain messages). ``judge`` rebuilds
each trajectory as tau2 messages, scores it with ``evaluate_simulation(...,
EvaluationType.ALL)`` and counts where tau2's reward equals ours. NL assertions need an LLM
judge on both sides; both use a stand-in that finds every assertion met, so the comparison
covers the DB, env-assertion, action and communicate checks and their combination.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import random
import sys
import time
from pathlib import Path


class AllMetJudge:
    """An LLM-interface judge that finds every expected outcome met."""

    def chat(self, messages, tools=None, **sampling):
        items = ast.literal_eval(messages[-1]["content"].split("expectedOutcomes:")[1].strip())
        results = [{"expectedOutcome": a, "metExpectation": True, "reasoning": "-"} for a in items]
        return {"role": "assistant", "content": json.dumps({"results": results})}


def _row(env, task_id: str, variant: str, info: dict) -> dict:
    verification = info["verification"]
    return {
        "task_id": task_id,
        "variant": variant,
        "ours": verification["reward"],
        "termination": verification["termination"],
        "messages": [m.model_dump(mode="json") for m in env.trajectory],
    }


def _finish(env, text: str) -> dict:
    while True:
        _, _, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            return info


def play(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from agentworld_gym.tau2.env import Tau2Env
    from agentworld_gym.tau2.replay import replay_gold
    from agentworld_gym.tau2.users import Tau2ScriptedUser

    env = Tau2Env(args.tau2, args.domain, split="all", user=None, judge=AllMetJudge())
    writes = {name for name, kind in env._tool_types.items() if kind.value == "write"}
    rows, start = [], time.perf_counter()
    for task in env.domain.tasks[: args.limit]:
        rows.append(_row(env, task.id, "gold", replay_gold(env, task)))
        env.user = Tau2ScriptedUser({task.id: ["Hi, I need help.", "###STOP###"]})
        env.reset(options={"task_id": task.id})
        rows.append(_row(env, task.id, "lazy", _finish(env, "I cannot help with that.")))
        actions = list(task.evaluation_criteria.actions or [])
        last = [i for i, a in enumerate(actions) if a.name in writes and a.requestor == "assistant"]
        if last:
            env.reset(options={"task_id": task.id})
            for i, a in enumerate(actions):
                if i != last[-1] and a.requestor == "assistant":
                    env.step({"name": a.name, "arguments": dict(a.arguments)})
            rows.append(_row(env, task.id, "drop_last_write", _finish(env, "All done.")))
    rng = random.Random(0)
    pool = [
        a
        for t in env.domain.tasks
        for a in (t.evaluation_criteria.actions or [])
        if a.requestor == "assistant"
    ]
    for _ in range(args.random):
        task = rng.choice(env.domain.tasks)
        env.user = Tau2ScriptedUser({task.id: ["Hi."] + ["Go on."] * rng.randint(0, 3)})
        env.reset(options={"task_id": task.id})
        own = list(task.evaluation_criteria.actions or [])
        info = None
        for _ in range(rng.randint(1, 10)):
            a = rng.choice(own if own and rng.random() < 0.5 else pool)
            arguments = dict(a.arguments)
            if arguments and rng.random() < 0.2:
                key = rng.choice(list(arguments))
                arguments[key] = rng.choice([5, "x", None, arguments[key]])
            name = a.name if rng.random() > 0.05 else a.name + "_v2"
            action = {"name": name, "arguments": arguments}
            _, _, terminated, truncated, info = env.step(
                action if rng.random() > 0.15 else "Let me check that for you."
            )
            if terminated or truncated:
                break
        else:
            info = _finish(env, "Done.")
        rows.append(_row(env, task.id, "random", info))
    Path(args.out).write_text(json.dumps(rows))
    print(f"{len(rows)} episodes in {time.perf_counter() - start:.0f} s -> {args.out}")


def judge(args: argparse.Namespace) -> int:
    from importlib import import_module

    from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
    from tau2.data_model.simulation import NLAssertionCheck, SimulationRun, TerminationReason
    from tau2.evaluator import evaluator_nl_assertions
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    def all_met(cls, trajectory, assertions):
        return [NLAssertionCheck(nl_assertion=a, met=True, justification="-") for a in assertions]

    evaluator_nl_assertions.NLAssertionsEvaluator.evaluate_nl_assertions = classmethod(all_met)
    module = import_module(f"tau2.domains.{args.domain}.environment")
    try:
        tasks = {t.id: t for t in module.get_tasks(None)}
    except FileNotFoundError:  # a partial checkout (telecom's tasks.json): the small set
        from tau2.utils import DATA_DIR

        path = DATA_DIR / "tau2" / "domains" / args.domain / "tasks_small.json"
        tasks = {t.id: t for t in module.load_tasks(str(path))}
    kinds = {"assistant": AssistantMessage, "user": UserMessage, "tool": ToolMessage}
    counts: collections.Counter = collections.Counter()
    differ = []
    for row in json.loads(Path(args.trajectories).read_text()):
        messages = [kinds[m["role"]].model_validate(m) for m in row["messages"]]
        run = SimulationRun(
            id=row["variant"],
            task_id=row["task_id"],
            start_time="-",
            end_time="-",
            duration=0.0,
            termination_reason=TerminationReason(row["termination"]),
            messages=messages,
        )
        theirs = evaluate_simulation(
            run, tasks[row["task_id"]], EvaluationType.ALL, solo_mode=False, domain=args.domain
        ).reward
        same = abs(theirs - row["ours"]) < 1e-9
        counts[(row["variant"], theirs, same)] += 1
        if not same:
            differ.append((row["task_id"], row["variant"], row["ours"], theirs))
    print(f"{'variant':<16} {'tau2 reward':>11} {'episodes':>9} {'ours equal':>10}")
    for (variant, reward, same), n in sorted(counts.items()):
        print(f"{variant:<16} {reward:>11.1f} {n:>9} {'yes' if same else 'NO':>10}")
    print(
        f"{sum(counts.values()) - len(differ)}/{sum(counts.values())} agree; differ: {differ[:10]}"
    )
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("play", help="episodes through our env")
    p.add_argument("--tau2", required=True, help="the tau2-bench checkout")
    p.add_argument("--domain", default="retail")
    p.add_argument("--limit", type=int, default=None, help="first N tasks")
    p.add_argument("--random", type=int, default=0, help="also N random policies")
    p.add_argument("--out", required=True)
    j = sub.add_parser("judge", help="tau2's evaluate_simulation on them (tau2's own venv)")
    j.add_argument("--domain", default="retail")
    j.add_argument("trajectories")
    args = parser.parse_args()
    if args.step == "play":
        play(args)
        return 0
    return judge(args)


if __name__ == "__main__":
    sys.exit(main())
