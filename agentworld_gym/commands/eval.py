"""``agentworld eval``: run a served model through catalog tasks with native tool calling."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from agentworld_gym.integrations.openai_eval import evaluate, format_table, select_tasks
from agentworld_gym.integrations.rollout import Trajectory, backend_policy
from agentworld_gym.llm import LLMConfig, make_backend
from agentworld_gym.suites import format_suite_table, get_suite, list_suites


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate a model served behind an OpenAI-compatible API",
        description=(
            "Run every task of the chosen environments with a model behind any "
            "OpenAI-compatible /v1 endpoint (vLLM, SGLang, llama.cpp, hosted APIs), using "
            "native tool calling. Prints success rate and mean reward per environment and "
            "per L1 category (at the end, and on Ctrl-C for what finished), and writes one "
            "JSON line per trajectory as it finishes. A request that times out or fails "
            "after its retries makes an error row (counted, with its reason); the run goes "
            "on. --resume continues an interrupted run from its JSONL."
        ),
    )
    p.add_argument(
        "--base-url", help="server root with /v1, e.g. http://localhost:8000/v1 (required)"
    )
    p.add_argument("--model", help="model name as the server knows it (required)")
    p.add_argument("--api-key", help="bearer token (default: $OPENAI_API_KEY, else EMPTY)")
    p.add_argument("--envs", default="all", help="comma-separated environments, or 'all'")
    p.add_argument(
        "--suite",
        help=(
            "a held-out benchmark suite instead of --envs (bfcl-multi-turn, "
            "bfcl-multi-turn-base, ...; 'list' lists them); adds a per-category table with "
            "task counts and 95%% Wilson intervals"
        ),
    )
    p.add_argument("--split", default="test", help="train, test or all (default: test)")
    p.add_argument("--limit", type=int, help="at most this many tasks per environment")
    p.add_argument("--concurrency", type=int, default=8, help="episodes in flight (threads)")
    p.add_argument("--max-turns", type=int, help="turn budget (default: each env's own)")
    p.add_argument("--retries", type=int, default=2, help="retries per request and per episode")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int, default=2048, help="tokens per model turn")
    p.add_argument("--output", help="trajectories JSONL (default: eval-<model>.jsonl)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the finished episodes already in --output, run the rest, append",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no per-episode progress lines")
    p.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    suite = None
    if args.suite == "list":
        for known in list_suites():
            state = f"  (unavailable: {known.requires})" if known.requires else ""
            print(f"{known.name:<32} {known.description}{state}")
        return 0
    missing = [flag for flag in ("base_url", "model") if not getattr(args, flag)]
    if missing:
        flags = " and ".join("--" + m.replace("_", "-") for m in missing)
        print(f"agentworld eval: error: {flags} required", file=sys.stderr)
        return 2
    if args.suite:
        suite = get_suite(args.suite)
        suite.check()
        refs = select_tasks(list(suite.envs), suite.split, args.limit)
    else:
        envs = [e.strip() for e in args.envs.split(",") if e.strip()]
        refs = select_tasks(envs, args.split, args.limit)
    if not refs:
        print(f"no {args.split!r} tasks in {args.suite or args.envs}", file=sys.stderr)
        return 1
    config = LLMConfig(
        model=args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        timeout_s=args.timeout,
        max_retries=args.retries,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
    )
    backend = make_backend(config)  # one client, shared by the threads (it is thread-safe)
    output = args.output or f"eval-{re.sub(r'[^A-Za-z0-9._-]+', '_', args.model)}.jsonl"
    done = 0

    def progress(t: Trajectory) -> None:
        nonlocal done
        done += 1
        if not args.quiet:
            status = f"error: {t.error}" if t.error else f"reward={t.reward:.3f} turns={t.turns}"
            print(f"[{done}/{len(refs)}] {t.env_id} {t.task_id}: {status}", file=sys.stderr)

    report = evaluate(
        refs,
        lambda env_id: backend_policy(backend),
        concurrency=args.concurrency,
        max_turns=args.max_turns,
        retries=args.retries,
        jsonl=output,
        on_result=progress,
        resume=args.resume,
    )
    print(format_table(report.rows))
    if suite is not None:
        print()
        print(format_suite_table(suite, report.trajectories))
    ran = len(report.trajectories) - report.resumed
    errors = sum(t.error is not None for t in report.trajectories)
    tokens = getattr(backend, "completion_tokens", 0)
    speed = f"{report.episodes_per_min:.1f} episodes/min"
    if tokens:
        speed += f", {tokens / report.elapsed_s:.1f} generated tokens/s"
    where = f"trajectories: {output}" if Path(output).is_file() else "no trajectory finished"
    print(
        f"{ran} episodes run ({report.resumed} resumed, {errors} errors) in "
        f"{report.elapsed_s:.1f}s, {speed}; {where}"
    )
    if report.interrupted:
        print("interrupted: rerun with --resume to finish the rest", file=sys.stderr)
        return 130
    return 0
