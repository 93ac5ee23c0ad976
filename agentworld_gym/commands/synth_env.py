"""``agentworld synth env``: an LLM writes a code-implemented environment from a theme."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentworld_gym.commands import subcommands
from agentworld_gym.synthesis.llm_env.pipeline import default_synth_root


def register(sub: argparse._SubParsersAction) -> None:
    p = subcommands(sub, "synth", "synthesize environments and tasks").add_parser(
        "env",
        help="an LLM designs a database, writes tools and tests; validated, then emitted",
        description=(
            "From a theme (and local documents or API-spec files given with --source), an LLM "
            "designs a database, writes the tools as Python in the Agent-World release "
            "contract and unit tests for them. The tests run in the isolated tool worker; a "
            "tool is kept when it passes more than --threshold of its tests, the environment "
            "when it keeps at least one tool and one passing test. It is then imported "
            "(its task chains replayed) into a catalog root. A weak model's output is rejected "
            "with reasons."
        ),
    )
    p.add_argument("--theme", required=True, help="what the environment is about")
    p.add_argument("--llm-base-url", required=True, help="OpenAI-compatible server, with /v1")
    p.add_argument("--llm-model", required=True, help="model name as the server knows it")
    p.add_argument("--llm-api-key", default=None, help="default: OPENAI_API_KEY or EMPTY")
    p.add_argument("--llm-timeout-s", type=float, default=300.0, help="seconds per request")
    p.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="PATH",
        help="a local document or API spec (file or folder); repeatable",
    )
    p.add_argument("--out", default=None, help=f"catalog root (default: {default_synth_root()})")
    p.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="keep tools passing more than this fraction of their tests",
    )
    p.add_argument("--max-attempts", type=int, default=2, help="requests per stage")
    p.add_argument(
        "--wall-s", type=float, default=5.0, help="per-call time limit of tools and tests (s)"
    )
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--max-tokens", type=int, default=6000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.set_defaults(func=cmd_synth_env)


def cmd_synth_env(args: argparse.Namespace) -> int:
    from agentworld_gym.llm import LLMConfig, make_backend
    from agentworld_gym.synthesis.llm_env import LLMEnvConfig, synthesize_env

    config = LLMEnvConfig(
        theme=args.theme,
        sources=[Path(s) for s in args.source],
        threshold=args.threshold,
        max_attempts=args.max_attempts,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        seed=args.seed,
    )
    config.limits = {**config.limits, "wall_s": args.wall_s, "cpu_s": args.wall_s}
    if args.out:
        config.out = Path(args.out)
    llm = LLMConfig(
        model=args.llm_model,
        base_url=args.llm_base_url,
        api_key=args.llm_api_key,
        timeout_s=args.llm_timeout_s,
        max_tokens=args.max_tokens,
    )
    result = synthesize_env(config, make_backend(llm), model=args.llm_model)
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.summary())
    return 0 if result.accepted else 1
