"""``agentworld serve-mcp``: an environment's tools as an MCP server (stdio or HTTP)."""

from __future__ import annotations

import argparse

from agentworld_gym.registry import load_spec, resolve


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve-mcp",
        help="serve an environment's tools over MCP (stdio or streamable HTTP)",
        description=(
            "Expose one task of an environment as an MCP server: its tools (JSON Schemas "
            "verbatim) plus 'submit', which ends the episode and returns the verifier's "
            "reward. Each client session gets its own episode state; see "
            "agentworld_gym.integrations.mcp_server for the isolation rules. "
            "Needs the 'mcp' extra: pip install agentworld-gym[mcp]."
        ),
    )
    p.add_argument("env", help="environment: notion, notion-v0 or AgentWorld/notion-v0")
    p.add_argument("--task", help="task id (default: drawn with --seed)")
    p.add_argument("--seed", type=int, default=0, help="picks the task when --task is not given")
    p.add_argument("--max-turns", type=int, help="turn budget (default: the env's own)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default: 8000)")
    p.set_defaults(func=cmd_serve_mcp)


def cmd_serve_mcp(args: argparse.Namespace) -> int:
    try:
        from agentworld_gym.integrations.mcp_server import serve
    except ImportError as exc:  # pragma: no cover - depends on the install
        message = f"serve-mcp needs the mcp SDK: pip install agentworld-gym[mcp] ({exc})"
        raise SystemExit(message) from None
    spec = load_spec(resolve(args.env).gym_id)
    if args.task:
        spec.task(args.task)  # an unknown id fails here, with close matches
    serve(
        spec,
        task_id=args.task,
        seed=args.seed,
        max_turns=args.max_turns,
        transport=args.transport,
        host=args.host,
        port=args.port,
    )
    return 0
