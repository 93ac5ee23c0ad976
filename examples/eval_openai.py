"""``agentworld eval`` end to end, offline: a local OpenAI-compatible server plays gold solutions.

With a real model you only need the command line (any OpenAI-compatible server)::

    pip install agentworld-gym[llm]
    vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice --tool-call-parser hermes &
    agentworld eval --base-url http://localhost:8000/v1 --model Qwen/Qwen3-8B \\
        --envs notion --split test --concurrency 8

This script starts a stand-in server on 127.0.0.1 that answers ``/v1/chat/completions`` with
the gold tool calls of the task in the chat (so every task should score 1.0), then runs the same
command against it and prints the results table::

    python examples/eval_openai.py --envs notion --split all --concurrency 8
"""

from __future__ import annotations

import argparse
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from agentworld_gym.cli import main as agentworld
from agentworld_gym.integrations import GoldPolicy
from agentworld_gym.integrations.scripted import openai_policy_server
from agentworld_gym.registry import load_spec


def gold_server(envs: list[str]) -> ThreadingHTTPServer:
    """An OpenAI-compatible chat endpoint whose 'model' plays the gold solutions of ``envs``."""
    by_task = {i: p for p in (GoldPolicy(load_spec(e)) for e in envs) for i in p.plays}

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        instruction = next(m["content"] for m in messages if m["role"] == "user")
        return by_task[instruction](messages, tools)

    return openai_policy_server(policy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="notion")
    parser.add_argument("--split", default="test")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--output", default="eval-gold.jsonl")
    args = parser.parse_args()
    server = gold_server(args.envs.split(","))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    argv = ["eval", "--base-url", url, "--model", "gold", "--envs", args.envs]
    argv += ["--split", args.split, "--concurrency", str(args.concurrency)]
    argv += ["--output", args.output, "--quiet"]
    try:
        raise SystemExit(agentworld(argv))
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
