"""Drive ``agentworld serve-mcp`` with the official MCP client: list tools, play a task, submit.

This is what any MCP-speaking agent harness does against an AgentWorld environment. The script
starts the server itself (stdio: as a subprocess; http: as a subprocess listening on
127.0.0.1) and plays the gold solution of the task, then prints the reward and the round-trip
latency of a read-only tool call.

Run::

    pip install agentworld-gym[mcp]
    python examples/mcp_client.py                          # stdio
    python examples/mcp_client.py --transport http --port 8765

Against a server you started yourself (``agentworld serve-mcp notion --transport http``), point
any MCP client at ``http://127.0.0.1:8000/mcp``.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from agentworld_gym.integrations import GoldPolicy
from agentworld_gym.registry import load_spec


async def play(client: Client, env: str, task_id: str, repeats: int) -> None:
    tools = (await client.list_tools()).tools
    print(f"{len(tools)} tools: {', '.join(t.name for t in tools[:5])}, ...")
    prompt = await client.get_prompt("task")
    print(f"task: {prompt.messages[0].content.text}")

    timed = next(t for t in tools if not t.input_schema.get("required"))  # a read, no args
    latencies = []
    for _ in range(repeats):  # in an episode of their own, named in _meta
        start = time.perf_counter()
        await client.call_tool(timed.name, {}, meta={"agentworld/episode": "latency"})
        latencies.append(time.perf_counter() - start)
    print(
        f"round trip of {timed.name}: median {statistics.median(latencies) * 1000:.2f} ms, "
        f"p90 {sorted(latencies)[int(0.9 * len(latencies))] * 1000:.2f} ms over {repeats} calls"
    )

    # play the gold solution through MCP: the same chat a model would build
    policy = GoldPolicy(load_spec(env))
    messages = [{"role": "user", "content": prompt.messages[0].content.text}]
    while True:
        action = policy(messages, [])
        messages.append(action)
        if not action.get("tool_calls"):
            break
        call = action["tool_calls"][0]["function"]
        result = await client.call_tool(call["name"], json.loads(call["arguments"]))
        print(f"  {call['name']} -> {'error' if result.is_error else 'ok'}")
        messages.append({"role": "tool", "content": result.content[0].text})
    done = await client.call_tool("submit", {"answer": action["content"]})
    print(f"submitted {action['content']!r}: reward {done.structured_content['reward']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="notion")
    parser.add_argument("--task", default="notion-r01")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--repeats", type=int, default=50, help="calls timed for latency")
    args = parser.parse_args()
    command = [sys.executable, "-m", "agentworld_gym.cli", "serve-mcp", args.env]
    command += ["--task", args.task]
    if args.transport == "stdio":
        target = StdioServerParameters(command=command[0], args=command[1:])
        anyio.run(lambda: _run(target, args))
        return
    server = subprocess.Popen(command + ["--transport", "http", "--port", str(args.port)])
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", args.port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.1)
        anyio.run(lambda: _run(f"http://127.0.0.1:{args.port}/mcp", args))
    finally:
        server.terminate()
        server.wait()


async def _run(target: object, args: argparse.Namespace) -> None:
    async with Client(target) as client:
        await play(client, args.env, args.task, args.repeats)


if __name__ == "__main__":
    main()
