"""An AgentWorld environment as an MCP server, so any MCP client can be evaluated against it.

Built on the official ``mcp`` SDK (2.x) at its low level (``mcp.server.lowlevel.Server``)
rather than ``MCPServer``: the high-level server derives each tool's input schema from a Python
signature and validates arguments with pydantic, while we must publish our JSON Schemas
verbatim and let the environment's own validator produce the error messages agents learn from.

What a client sees:

- ``tools/list``: every tool of the environment (schema verbatim, ``read_only_hint`` from the
  tool's kind) plus ``submit`` (``{"answer": str}``), which ends the episode and returns the
  verifier's reward and breakdown as JSON;
- ``tools/call``: the call runs through ``env.step``, exactly as for an RL agent; a failed call
  (bad arguments, unknown id, API error) is an MCP tool error (``isError``) whose text is the
  environment's error observation;
- ``prompts/get task``: the task instruction; the server ``instructions`` carry the system
  prompt and the task.

Isolation: every episode has its own copy-on-write database. The episode of a call is chosen by,
in order, ``_meta["agentworld/episode"]`` on the request (any client can open parallel
episodes), the ``Mcp-Session-Id`` of a stateful HTTP session, else the one episode of the
server process (stdio: one client per process). After ``submit`` (or the turn budget) the next
call starts a fresh episode of the same task.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson

from agentworld_gym.actions import SUBMIT_SCHEMA, SUBMIT_TOOL
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.spec import EnvSpec

EPISODE_META_KEY = "agentworld/episode"
"""Request ``_meta`` key naming the episode a call belongs to."""
DEFAULT_EPISODE = "default"


@dataclass
class Episode:
    """One isolated episode: its environment and the lock that orders its calls."""

    env: AgentWorldEnv
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    done: bool = True
    episodes: int = 0


class EpisodeStore:
    """Episodes by key, at most ``max_episodes`` (the least recently used is dropped)."""

    def __init__(
        self,
        spec: EnvSpec,
        task_id: str | None = None,
        seed: int = 0,
        max_turns: int | None = None,
        max_episodes: int = 256,
    ) -> None:
        self.spec = spec
        probe = AgentWorldEnv(spec, split="all", max_turns=max_turns)
        _, info = probe.reset(seed=seed, options={"task_id": task_id} if task_id else None)
        self.task_id: str = info["task_id"]
        self.system_prompt: str = probe.messages[0]["content"]
        self.max_turns = max_turns
        self.max_episodes = max_episodes
        self._episodes: OrderedDict[str, Episode] = OrderedDict()

    @property
    def instruction(self) -> str:
        return self.spec.task(self.task_id).instruction

    def get(self, key: str) -> Episode:
        episode = self._episodes.get(key)
        if episode is None:
            env = AgentWorldEnv(self.spec, split="all", max_turns=self.max_turns)
            episode = self._episodes[key] = Episode(env)
            while len(self._episodes) > self.max_episodes:
                self._episodes.popitem(last=False)
        self._episodes.move_to_end(key)
        return episode

    def step(self, episode: Episode, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one call in ``episode`` (starting it if needed); a JSON-ready outcome."""
        if episode.done:
            episode.env.reset(options={"task_id": self.task_id})
            episode.done = False
            episode.episodes += 1
        obs, reward, terminated, truncated, info = episode.env.step(
            {"name": name, "arguments": arguments}
        )
        results = info.get("tool_results") or []
        outcome: dict[str, Any] = {"text": obs, "error": bool(results) and not results[0]["ok"]}
        if terminated or truncated:
            episode.done = True
            outcome["result"] = {
                "reward": float(reward),
                "ended_by": "submit" if terminated else "turn_budget",
                "task_id": self.task_id,
                "verification": info.get("verification", {}),
            }
        return outcome


def build_server(store: EpisodeStore) -> Any:
    """The low-level MCP ``Server`` of one environment and task."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    spec = store.spec
    tools = [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.parameters or {"type": "object", "properties": {}},
            annotations=types.ToolAnnotations(read_only_hint=t.kind == "read"),
        )
        for t in spec.tools
    ]
    submit = SUBMIT_SCHEMA["function"]
    tools.append(
        types.Tool(
            name=SUBMIT_TOOL,
            description=submit["description"],
            input_schema=submit["parameters"],
            annotations=types.ToolAnnotations(read_only_hint=False, idempotent_hint=False),
        )
    )

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        key = _episode_key(ctx, params)
        episode = store.get(key)
        async with episode.lock:
            outcome = await anyio.to_thread.run_sync(
                store.step, episode, params.name, dict(params.arguments or {})
            )
        content = [types.TextContent(type="text", text=outcome["text"])]
        structured = None
        if "result" in outcome:
            result = outcome["result"]
            structured = orjson.loads(orjson.dumps(result, default=str))
            if result["ended_by"] == "turn_budget":
                content.append(types.TextContent(type="text", text=_json(structured)))
            else:
                content = [types.TextContent(type="text", text=_json(structured))]
        return types.CallToolResult(
            content=content, structured_content=structured, is_error=outcome["error"]
        )

    async def list_prompts(ctx: Any, params: Any) -> Any:
        prompt = types.Prompt(name="task", description=f"The task of this {spec.name} episode")
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=store.instruction)
        )
        return types.GetPromptResult(description=f"Task {store.task_id}", messages=[message])

    return Server(
        f"agentworld-{spec.id}",
        version=str(spec.version),
        title=f"{spec.name} (AgentWorld)",
        description=spec.description,
        instructions=f"{store.system_prompt}\n\nTask ({store.task_id}): {store.instruction}",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _episode_key(ctx: Any, params: Any) -> str:
    meta = params.meta or {}
    explicit = meta.get(EPISODE_META_KEY) if isinstance(meta, dict) else None
    if explicit:
        return str(explicit)
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    return session or DEFAULT_EPISODE


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def serve(
    spec: EnvSpec,
    *,
    task_id: str | None = None,
    seed: int = 0,
    max_turns: int | None = None,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
) -> None:
    """Serve one environment and task until interrupted (stdio or streamable HTTP at ``/mcp``)."""
    store = EpisodeStore(spec, task_id=task_id, seed=seed, max_turns=max_turns)
    server = build_server(store)
    where = "stdio" if transport == "stdio" else f"http://{host}:{port}/mcp"
    print(f"serving {spec.gym_id} task {store.task_id} over {where}", file=sys.stderr, flush=True)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def run_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run_stdio)
    elif transport == "http":
        import uvicorn

        app = server.streamable_http_app(host=host)
        uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()
    else:
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")
