"""``agentworld llm serve``'s HTTP contract, on a scripted stand-in for the model (no torch).

The real model behind real HTTP is exercised in ``test_synth_env_e2e.py``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agentworld_gym.errors import ConfigError
from agentworld_gym.llm.server_protocol import (
    RequestError,
    apply_stop,
    parse_chat_request,
    parse_completion_request,
)
from agentworld_gym.llm.transformers_backend import Generation, Sampling

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from agentworld_gym.llm.server import Engine, ServeConfig, build_app  # noqa: E402

NAME = "tiny"
USER = [{"role": "user", "content": "hi"}]


class _Format:
    """Characters as tokens; the chat is rendered as ``role: content`` lines."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict] | None) -> list[int]:
        lines = [f"{m['role']}: {m.get('content') or ''}" for m in messages]
        if tools:
            lines.insert(0, "tools: " + json.dumps([t["function"]["name"] for t in tools]))
        return self.encode("\n".join(lines) + "\nassistant:")


class ScriptedGenerator:
    """Answers every prompt with ``reply`` (cut at the length cap); records each batch."""

    def __init__(self, reply: str = "Hello there. Bye.") -> None:
        self.chat_format = _Format()
        self.reply = reply
        self.batches: list[tuple[int, Sampling]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail = False

    def generate(self, prompts: list[list[int]], sampling: Sampling) -> list[Generation]:
        self.gate.wait(timeout=10)
        self.batches.append((len(prompts), sampling))
        if self.fail:
            raise RuntimeError("the accelerator caught fire")
        tokens = [ord(c) for c in self.reply][: sampling.max_new_tokens]
        reason = "length" if len(tokens) < len(self.reply) else "stop"
        text = "".join(map(chr, tokens))
        return [Generation(tokens, text, reason) for _ in prompts]

    def sync_weights(self, model: Any) -> None:
        pass


@pytest.fixture
def generator() -> ScriptedGenerator:
    return ScriptedGenerator()


@pytest.fixture
def engine(generator: ScriptedGenerator) -> Iterator[Engine]:
    engine = Engine(generator, max_model_len=200, max_batch=4)
    yield engine
    generator.gate.set()
    engine.close()


@pytest.fixture
def client(engine: Engine) -> TestClient:
    return TestClient(build_app(engine, NAME), raise_server_exceptions=False)


def _chat(client: TestClient, **body: Any) -> Any:
    return client.post("/v1/chat/completions", json={"model": NAME, "messages": USER, **body})


def test_chat_completion_has_the_openai_shape(client):
    response = _chat(client, max_tokens=5)
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "chat.completion" and data["model"] == NAME
    assert data["id"].startswith("chatcmpl-")
    [choice] = data["choices"]
    assert choice == {
        "index": 0,
        "message": {"role": "assistant", "content": "Hello"},
        "logprobs": None,
        "finish_reason": "length",
    }
    prompt = len("user: hi\nassistant:")
    assert data["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": 5,
        "total_tokens": prompt + 5,
    }


def test_models_health_and_json_errors_for_unknown_routes(client):
    models = client.get("/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == NAME
    assert models["data"][0]["max_model_len"] == 200
    assert client.get("/health").json() == {"status": "ok"}
    missing = client.get("/v1/nope")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    wrong = client.get("/v1/chat/completions")
    assert wrong.status_code == 405 and "Method Not Allowed" in wrong.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status", "param", "needle"),
    [
        ({"model": "gpt-4"}, 404, "model", "serves 'tiny'"),
        ({"messages": []}, 400, "messages", "non-empty list"),
        ({"messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0].role", "one of"),
        ({"messages": [{"role": "user"}]}, 400, "messages[0].content", "needs a content"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            400,
            "messages[0].content",
            "only text parts",
        ),
        ({"temperature": 3}, 400, "temperature", "[0.0, 2.0]"),
        ({"max_tokens": 0}, 400, "max_tokens", ">= 1"),
        ({"n": 99}, 400, "n", "at most 16"),
        ({"stop": [""]}, 400, "stop", "non-empty string"),
        ({"logprobs": True}, 400, "logprobs", "not supported"),
        ({"tool_choice": "required"}, 400, "tool_choice", "'auto' or 'none'"),
        ({"tools": [{"type": "function"}]}, 400, "tools[0]", "'function'"),
        ({"response_format": {"type": "json_object"}}, 400, "response_format", "not supported"),
        ({"max_tokens": 190}, 400, "max_tokens", "maximum context length is 200"),
        ({"messages": [{"role": "user", "content": "x" * 300}]}, 400, "messages", "use 3"),
    ],
)
def test_bad_requests_are_4xx_json_naming_the_field(client, body, status, param, needle):
    response = client.post("/v1/chat/completions", json={"model": NAME, "messages": USER, **body})
    assert response.status_code == status
    error = response.json()["error"]
    assert error["param"] == param and needle in error["message"], error
    assert error["type"] == "invalid_request_error"


def test_malformed_json_and_missing_api_key(engine):
    client = TestClient(build_app(engine, NAME, api_key="s3cret"))
    bad = client.post("/v1/chat/completions", content=b"{nope", headers={"authorization": "x"})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_api_key"
    auth = {"authorization": "Bearer s3cret"}
    bad = client.post("/v1/chat/completions", content=b"{nope", headers=auth)
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
    ok = client.post("/v1/chat/completions", json={"messages": USER}, headers=auth)
    assert ok.status_code == 200  # model defaults to the served one


def test_stop_strings_n_and_extensions(client, generator):
    data = _chat(client, stop=[". "], n=3, top_k=20, chat_template_kwargs={}).json()
    assert [c["message"]["content"] for c in data["choices"]] == ["Hello there"] * 3
    assert {c["finish_reason"] for c in data["choices"]} == {"stop"}
    assert data["usage"]["completion_tokens"] == 3 * len(generator.reply)
    assert generator.batches[-1][0] == 3
    assert generator.batches[-1][1].max_new_tokens == 200 - data["usage"]["prompt_tokens"]


def test_tool_calls_are_parsed_when_tools_are_given(client, generator):
    generator.reply = 'Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
    generator.reply += "</tool_call>"
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    [choice] = _chat(client, tools=tools).json()["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Sure."
    [call] = choice["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    [plain] = _chat(client, tools=tools, tool_choice="none").json()["choices"]
    assert plain["finish_reason"] == "stop" and "tool_calls" not in plain["message"]


class ToolRecorder(ScriptedGenerator):
    """Takes ``tools=`` like the transformers backend and records what each row got."""

    def __init__(self) -> None:
        super().__init__()
        self.tools: list[list[Any] | None] = []

    def generate(  # type: ignore[override]
        self, prompts: list[list[int]], sampling: Sampling, tools: list[Any] | None = None
    ) -> list[Generation]:
        self.tools.append(tools)
        return super().generate(prompts, sampling)


@pytest.mark.parametrize("constrain", [True, False])
def test_a_chat_requests_calls_are_held_to_its_own_tools(constrain):
    generator = ToolRecorder()
    engine = Engine(generator, max_model_len=200, max_batch=4, constrain_calls=constrain)
    client = TestClient(build_app(engine, NAME), raise_server_exceptions=False)
    weather = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    try:
        assert _chat(client, tools=weather, n=2).status_code == 200
        assert _chat(client).status_code == 200  # no tools: a free row
        assert _chat(client, tools=weather, tool_choice="none").status_code == 200
        body = {"model": NAME, "prompt": "a", "max_tokens": 2}
        assert client.post("/v1/completions", json=body).status_code == 200
    finally:
        engine.close()
    if constrain:  # each of the request's rows gets its tools; the others call without tools=
        assert generator.tools == [[weather, weather], None, None, None]
    else:
        assert generator.tools == [None] * 4


def test_streaming_sends_chunks_then_usage_then_done(client):
    response = _chat(client, stream=True, stream_options={"include_usage": True}, max_tokens=5)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line[6:] for line in response.text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert "".join(d.get("content", "") for d in deltas) == "Hello"
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5


def test_text_completions(client):
    body = {"model": NAME, "prompt": ["a", "bc"], "max_tokens": 3, "n": 2}
    data = client.post("/v1/completions", json=body).json()
    assert data["object"] == "text_completion"
    assert [c["text"] for c in data["choices"]] == ["Hel"] * 4
    assert data["usage"] == {"prompt_tokens": 3, "completion_tokens": 12, "total_tokens": 15}
    bad = client.post("/v1/completions", json={"prompt": 5})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "prompt"


def test_waiting_requests_are_batched_and_seeded_ones_run_alone(engine, generator):
    from agentworld_gym.llm.server_protocol import GenerationRequest

    def request(**kw: Any) -> GenerationRequest:
        return GenerationRequest(model=NAME, messages=USER, max_tokens=4, **kw)

    generator.gate.clear()  # the first request holds the worker; the rest queue up
    first = engine.submit(request())
    while not engine._queue.empty():
        threading.Event().wait(0.01)
    rest = [engine.submit(request()), engine.submit(request(n=2)), engine.submit(request(seed=1))]
    rest.append(engine.submit(request(temperature=0.0)))
    gone = engine.submit(request(n=5))
    assert gone.cancel()  # its client hung up while it waited: it is never generated
    generator.gate.set()
    for future in [first, *rest]:
        assert future.result(timeout=10).choices[0].text == "Hell"
    sizes = sorted(size for size, _ in generator.batches)
    assert sizes == [1, 1, 1, 3]  # first; seeded; greedy; the two alike (1 + 2 rows)
    assert gone.cancelled()


def test_a_generation_crash_is_a_500_for_its_requests_only(client, generator):
    generator.fail = True
    response = _chat(client)
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"
    assert "caught fire" in response.json()["error"]["message"]
    generator.fail = False
    assert _chat(client).status_code == 200


def test_protocol_helpers():
    assert apply_stop("abc", "length", []) == ("abc", "length")
    assert apply_stop("a. b", "length", [". "]) == ("a", "stop")
    request = parse_chat_request(
        {"messages": [{"role": "developer", "content": [{"type": "text", "text": "x"}]}]}, NAME
    )
    assert request.messages == [{"role": "system", "content": "x"}]
    assert parse_completion_request({"prompt": "p", "seed": 3}, NAME).seed == 3
    with pytest.raises(RequestError, match="must be a JSON object"):
        parse_chat_request([], NAME)


def test_serve_config_checks_and_names():
    assert ServeConfig().served_name() == "smollm2-135m-instruct"
    assert ServeConfig(model="Qwen/Qwen3-0.6B").served_name() == "Qwen/Qwen3-0.6B"
    assert ServeConfig(model="x", served_model_name="y").served_name() == "y"
    with pytest.raises(ConfigError, match="backends: \\['transformers', 'vllm'\\]"):
        ServeConfig(backend="tgi")
    with pytest.raises(ConfigError, match="max_batch"):
        ServeConfig(max_batch=0)


def test_cli_registers_llm_serve():
    from agentworld_gym.cli import build_parser

    args = build_parser().parse_args(["llm", "serve", "--port", "9001", "--dtype", "float32"])
    assert args.port == 9001 and args.model == "embedded" and args.func.__name__ == "cmd_llm_serve"
    assert args.constrain_calls
    assert not build_parser().parse_args(["llm", "serve", "--no-constrain-calls"]).constrain_calls
