"""``agentworld serve-mcp`` with the official MCP client: stdio in a subprocess, and HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from agentworld_gym.registry import load_spec  # noqa: E402

TASK = "notion-r01"  # one database query, then the answer "15"
ROOT = Path(__file__).resolve().parent.parent


def _gold_query() -> dict:
    return load_spec("notion").task(TASK).gold["calls"][0]["arguments"]


async def _play(client: Client) -> dict:
    """List tools, make a bad call, play the gold solution, submit; timings in the result."""
    spec = load_spec("notion")
    listed = (await client.list_tools()).tools
    names = [t.name for t in listed]
    assert names == [t.name for t in spec.tools] + ["submit"]
    for tool, ours in zip(listed, spec.tools, strict=False):
        assert tool.input_schema == ours.parameters  # verbatim
        assert tool.annotations.read_only_hint == (ours.kind == "read")

    bad = await client.call_tool("API-retrieve-a-page", {"page_id": "no-such-page"})
    assert bad.is_error
    assert "no-such-page" in bad.content[0].text
    invalid = await client.call_tool("API-get-user", {"user_id": 7})
    assert invalid.is_error and "user_id" in invalid.content[0].text

    start = time.perf_counter()
    query = await client.call_tool("API-post-database-query", _gold_query())
    latency = time.perf_counter() - start
    assert not query.is_error
    assert len(json.loads(query.content[0].text)["results"]) == 15

    done = await client.call_tool("submit", {"answer": "15 tasks are overdue."})
    assert not done.is_error
    result = done.structured_content
    assert result["reward"] == 1.0 and result["ended_by"] == "submit"
    assert result["task_id"] == TASK

    prompt = await client.get_prompt("task")
    assert "overdue" in prompt.messages[0].content.text
    return {"latency_s": latency}


def test_stdio_server_in_a_subprocess():
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentworld_gym.cli", "serve-mcp", "notion", "--task", TASK],
        cwd=str(ROOT),
        env={**os.environ},
    )

    async def main() -> dict:
        async with Client(params) as client:
            return await _play(client)

    timings = anyio.run(main)
    assert timings["latency_s"] < 2.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server():
    port = _free_port()
    cmd = [sys.executable, "-m", "agentworld_gym.cli", "serve-mcp", "notion", "--task", TASK]
    cmd += ["--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(proc.stderr.read().decode())
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


PAGE = "14f84a77-468d-53e3-bd99-818c8c51f67a"


async def _comment(client: Client, meta: dict | None = None) -> None:
    arguments = {"parent": {"page_id": PAGE}, "rich_text": [{"text": {"content": "hello"}}]}
    assert not (await client.call_tool("API-create-a-comment", arguments, meta=meta)).is_error


async def _comments(client: Client, meta: dict | None = None) -> int:
    listed = await client.call_tool("API-retrieve-a-comment", {"block_id": PAGE}, meta=meta)
    return len(json.loads(listed.content[0].text)["results"])


def test_http_server_isolates_sessions(http_server):
    async def main() -> None:
        # each stateful (handshake) HTTP session has its own episode
        async with Client(http_server, mode="legacy") as first:
            async with Client(http_server, mode="legacy") as second:
                await _play(first)  # ends first's episode; its next call starts a new one
                before = await _comments(second)
                await _comment(first)
                assert await _comments(first) == before + 1
                assert await _comments(second) == before
                done = await second.call_tool("submit", {"answer": "15"})
                assert done.structured_content["reward"] < 1.0  # second never queried
        # a stateless (modern protocol) client names its episodes in _meta
        async with Client(http_server) as client:
            a, b = {"agentworld/episode": "a"}, {"agentworld/episode": "b"}
            c = {"agentworld/episode": "c"}
            await _comment(client, a)
            assert await _comments(client, a) == await _comments(client, b) + 1
            await client.call_tool("API-post-database-query", _gold_query(), meta=c)
            done_a = await client.call_tool("submit", {"answer": "15"}, meta=a)
            done_b = await client.call_tool("submit", {"answer": "15"}, meta=b)
            done_c = await client.call_tool("submit", {"answer": "15"}, meta=c)
            assert done_c.structured_content["reward"] == 1.0
            assert done_b.structured_content["reward"] < 1.0  # never queried
            assert done_a.structured_content["reward"] < 1.0  # its comment was not asked for

    anyio.run(main)


def test_turn_budget_ends_the_episode_with_its_reward():
    from agentworld_gym.integrations.mcp_server import EpisodeStore

    store = EpisodeStore(load_spec("notion"), task_id=TASK, max_turns=2)
    episode = store.get("x")
    first = store.step(episode, "API-get-self", {})
    assert "result" not in first and not first["error"]
    second = store.step(episode, "API-get-self", {})
    assert second["result"]["ended_by"] == "turn_budget" and episode.done
    third = store.step(episode, "API-get-self", {})  # a fresh episode of the same task
    assert "result" not in third and episode.episodes == 2
