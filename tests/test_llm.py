"""LLM backend, registry and judge, against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentworld_gym.errors import ConfigError
from agentworld_gym.llm import (
    LLMBackend,
    LLMConfig,
    OpenAICompatBackend,
    available_backends,
    make_backend,
    register_backend,
)
from agentworld_gym.llm import base as llm_base
from agentworld_gym.verifiers.judge import (
    JUDGE_SYSTEM_PROMPT,
    LLMJudge,
    Verdict,
    parse_verdicts,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_page",
            "description": "Fetch a page by id.",
            "parameters": {
                "type": "object",
                "properties": {"page_id": {"type": "string"}},
                "required": ["page_id"],
            },
        },
    }
]
PLAIN = {"role": "assistant", "content": "Hello there."}
TOOL_CALLS = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_page", "arguments": '{"page_id": "p1"}'},
        },
        # A sloppy server: no id, arguments as an object instead of a JSON string.
        {
            "type": "function",
            "function": {"name": "get_page", "arguments": {"page_id": "p2"}},
        },
    ],
}
HERMES = {
    "role": "assistant",
    "content": 'Sure.\n<tool_call>{"name": "get_page"}</tool_call>',
}
JUDGE_JSON = {
    "role": "assistant",
    "content": '[{"index": 0, "met": true, "reason": "page created"}, '
    '{"index": 1, "met": false, "reason": "title wrong"}]',
}
JUDGE_FENCED = {
    "role": "assistant",
    "content": "Here is my grading:\n```json\n"
    '[{"index": 0, "met": false, "reason": "no page"}, {"index": 1, "met": true, "reason": "ok"}]'
    "\n```\nHope this helps.",
}
GARBAGE = {
    "role": "assistant",
    "content": "I think the agent did a reasonable job overall.",
}


class FakeServer:
    """Answers ``POST /v1/chat/completions`` with queued assistant messages; records requests."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/chat/completions" or not server.replies:
                    self.send_error(404)
                    return
                server.requests.append(body)
                server.auth.append(self.headers.get("Authorization"))
                message = server.replies.pop(0)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                payload = json.dumps(
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": {
                            "prompt_tokens": 1,
                            "completion_tokens": 1,
                            "total_tokens": 2,
                        },
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture(scope="module")
def _server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture
def server(_server: FakeServer) -> FakeServer:
    _server.replies.clear()
    _server.requests.clear()
    _server.auth.clear()
    return _server


@pytest.fixture
def backend(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAICompatBackend]:
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    config = LLMConfig(model="fake-model", base_url=server.base_url, max_retries=0, timeout_s=10)
    made = make_backend(config)
    assert isinstance(made, OpenAICompatBackend)
    yield made
    made.close()


def test_round_trip_sends_model_messages_tools_and_sampling(server, backend):
    server.replies.append(PLAIN)
    messages = [{"role": "user", "content": "hi"}]

    reply = backend.chat(messages, TOOLS, temperature=0.5, top_k=20, stop=None)

    assert reply == PLAIN  # and so no "tool_calls" key
    (body,) = server.requests
    assert body["model"] == "fake-model"
    assert body["messages"] == messages
    assert body["tools"] == TOOLS
    assert body["temperature"] == 0.5  # per-call override of the config's 1.0
    assert body["max_tokens"] == 1024  # config default
    assert body["top_k"] == 20  # non-SDK argument travels in the body
    assert "seed" not in body and "stop" not in body  # None means "leave it out"
    assert server.auth == ["Bearer test-key"]  # read from OPENAI_API_KEY


def test_no_tools_key_without_tools(server, backend):
    server.replies.append(PLAIN)
    backend.chat([{"role": "user", "content": "hi"}], tools=[])
    assert "tools" not in server.requests[0]


def test_tool_calls_are_converted_and_mended(server, backend):
    server.replies.append(TOOL_CALLS)

    reply = backend.chat([{"role": "user", "content": "open p1 and p2"}], TOOLS)

    assert reply["role"] == "assistant"
    assert reply["content"] is None
    first, second = reply["tool_calls"]
    assert first == {
        "id": "call_a",
        "type": "function",
        "function": {"name": "get_page", "arguments": '{"page_id": "p1"}'},
    }
    assert second["id"] == "call_1"
    assert json.loads(second["function"]["arguments"]) == {"page_id": "p2"}


def test_hermes_tool_call_text_is_left_in_content(server, backend):
    server.replies.append(HERMES)
    reply = backend.chat([{"role": "user", "content": "hi"}], TOOLS)
    assert reply == HERMES


def test_unreachable_server_is_a_config_error():
    with socket.socket() as probe:  # a port that nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAICompatBackend("m", base_url=url, max_retries=0, timeout_s=5)
    with pytest.raises(ConfigError, match="server is running"):
        backend.chat([{"role": "user", "content": "hi"}])
    backend.close()


def test_unknown_model_path_is_a_config_error(server, backend):
    # The fake server answers 404 when it has nothing queued, as servers do for unknown models.
    with pytest.raises(ConfigError, match="fake-model"):
        backend.chat([{"role": "user", "content": "hi"}])


def test_make_backend_unknown_names_valid_choices():
    with pytest.raises(ConfigError, match=r"expected one of \[.*'openai'.*Did you mean 'openai'"):
        make_backend(LLMConfig(model="m", backend="opneai"))


def test_register_backend(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(llm_base, "_BACKENDS", dict(llm_base._BACKENDS))

    class Echo:
        def chat(self, messages, tools=None, **sampling):
            return {"role": "assistant", "content": messages[-1]["content"]}

    register_backend("echo", lambda config: Echo())
    with pytest.raises(ConfigError, match="already registered"):
        register_backend("echo", lambda config: Echo())

    made = make_backend(LLMConfig(model="m", backend="echo"))
    assert isinstance(made, LLMBackend)
    assert made.chat([{"role": "user", "content": "ping"}])["content"] == "ping"
    assert "echo" in available_backends()


@pytest.mark.parametrize("overrides", [{"timeout_s": 0}, {"max_retries": -1}, {"max_tokens": 0}])
def test_llm_config_rejects_bad_values(overrides):
    with pytest.raises(ConfigError):
        LLMConfig(model="m", **overrides)


def test_llm_config_api_key_resolution(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert LLMConfig(model="m").resolved_api_key() == "EMPTY"
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert LLMConfig(model="m").resolved_api_key() == "from-env"
    assert LLMConfig(model="m", api_key="explicit").resolved_api_key() == "explicit"
    assert "explicit" not in repr(LLMConfig(model="m", api_key="explicit"))


def test_missing_openai_sdk_says_what_to_install(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` raise ImportError
    with pytest.raises(ConfigError, match=r"pip install agentworld-gym\[llm\]"):
        make_backend(LLMConfig(model="m"))


def test_importing_llm_and_judge_does_not_import_openai():
    code = (
        "import sys, agentworld_gym.llm, agentworld_gym.verifiers.judge; "
        "sys.exit('openai' in sys.modules)"
    )
    repo_root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo_root)


# --- judge -----------------------------------------------------------------------------------

CRITERIA = ["A page titled 'Q3' exists.", "The page title is exactly 'Q3 plan'."]


def test_judge_json_verdicts(server, backend):
    server.replies.append(JUDGE_JSON)
    judge = LLMJudge(backend)

    verdicts = judge.judge("Create a Q3 plan page.", "Done.", CRITERIA, evidence="pages +1")

    assert verdicts == [Verdict(True, "page created"), Verdict(False, "title wrong")]
    (body,) = server.requests
    assert body["temperature"] == 0.0 and body["max_tokens"] == 512
    assert body["messages"][0] == {"role": "system", "content": JUDGE_SYSTEM_PROMPT}
    prompt = body["messages"][1]["content"]
    assert "0. A page titled 'Q3' exists." in prompt and "1. The page title" in prompt
    assert "pages +1" in prompt and "Create a Q3 plan page." in prompt
    assert "tools" not in body


def test_judge_fenced_json_in_prose(server, backend):
    server.replies.append(JUDGE_FENCED)
    verdicts = LLMJudge(backend).judge("task", "answer", CRITERIA)
    assert verdicts == [Verdict(False, "no page"), Verdict(True, "ok")]


def test_judge_garbage_is_unmet_with_reason(server, backend):
    server.replies.append(GARBAGE)
    verdicts = LLMJudge(backend).judge("task", "answer", CRITERIA)
    assert [v.met for v in verdicts] == [False, False]
    assert all(v.reason.startswith("judge output unparseable: ") for v in verdicts)
    assert "reasonable job" in verdicts[0].reason  # the reason shows what the judge said


def test_judge_without_criteria_does_not_call_the_model(server, backend):
    assert LLMJudge(backend).judge("task", "answer", []) == []
    assert server.requests == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # wrapped in an object
        (
            '{"verdicts": [{"index": 0, "met": "yes", "reason": "r0"}, '
            '{"index": 1, "met": false}]}',
            [(True, "r0"), (False, "")],
        ),
        # numbered from 1 by mistake
        (
            '[{"index": 1, "met": false, "reason": "a"}, {"index": 2, "met": true, "reason": "b"}]',
            [(False, "a"), (True, "b")],
        ),
        # no indices: taken in order
        (
            '[{"met": true, "reason": "a"}, {"met": false, "reason": "b"}]',
            [(True, "a"), (False, "b")],
        ),
        # cut off by max_tokens: the complete object still counts
        (
            '[{"index": 0, "met": true, "reason": "a"}, {"index": 1, "met": tr',
            [(True, "a"), (False, None)],
        ),
        # per-line fallback, numbered
        (
            "0: YES - page exists\n1. NO, wrong title",
            [(True, "page exists"), (False, "wrong title")],
        ),
        # per-line fallback, unnumbered
        ("YES: exists\nNO: wrong title", [(True, "exists"), (False, "wrong title")]),
        # an unrelated bracket before the real answer
        (
            'Criteria [0] and [1]:\n[{"index": 0, "met": true, "reason": "a"}, '
            '{"index": 1, "met": true, "reason": "b"}]',
            [(True, "a"), (True, "b")],
        ),
        # drafts inside <think> are not the answer
        (
            '<think>maybe [{"index": 0, "met": true}]</think>[{"index": 0, "met": false, '
            '"reason": "final"}]',
            [(False, "final")],
        ),
        # a stray "Yes" in prose settles nothing when it is not one line per criterion
        ("Yes, overall the agent tried hard.\nIt created a page.", [(False, None), (False, None)]),
        # a non-boolean "met" does not count as a verdict
        (
            '[{"index": 0, "met": "maybe"}, {"index": 1, "met": true, "reason": "b"}]',
            [(False, None), (True, "b")],
        ),
    ],
)
def test_parse_verdicts(text, expected):
    verdicts = parse_verdicts(text, len(expected))
    for verdict, (met, reason) in zip(verdicts, expected, strict=True):
        assert verdict.met is met
        if reason is None:
            assert verdict.reason.startswith("judge output unparseable: ")
        else:
            assert verdict.reason == reason
