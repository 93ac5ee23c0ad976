"""``agentworld synth env`` end to end against a fake OpenAI-compatible server (stdlib http).

The server answers by stage (it reads the system prompt): a *good* model returns a design,
tools (one that does not compile, one that fails most of its tests) and tests; a *garbage*
model returns prose; a *weak* one returns tools whose every test fails. No real model runs here.
"""

from __future__ import annotations

import json
import re
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from agentworld_gym import registry
from agentworld_gym.cli import main
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import ConfigError
from agentworld_gym.llm import LLMConfig, make_backend
from agentworld_gym.registry import load_spec
from agentworld_gym.synthesis.llm_env import LLMEnvConfig, synthesize_env
from agentworld_gym.synthesis.llm_env.parse import check_design, extract_json

FAST = {"wall_s": 1.0, "cpu_s": 1.0, "memory_mb": 512}

DESIGN = {
    "name": "Paws Clinic",
    "description": "A veterinary clinic's booking system. Staff look up pets and book visits.",
    "collections": [
        {
            "name": "owners",
            "description": "a pet owner",
            "fields": {"id": "o<n>"},
            "records": [{"id": "o1", "name": "Ana Ruiz"}, {"id": "o2", "name": "Ben Okafor"}],
        },
        {
            "name": "pets",
            "description": "a patient",
            "fields": {"owner_id": "owner"},
            "records": [
                {"id": "p1", "name": "Miso", "species": "cat", "owner_id": "o1"},
                {"id": "p2", "name": "Rex", "species": "dog", "owner_id": "o2"},
                {"id": "p3", "name": "Tofu", "species": "rabbit", "owner_id": "o1"},
            ],
        },
        {
            "name": "appointments",
            "description": "a visit",
            "fields": {"status": "state"},
            "records": [
                {"id": "a1", "pet_id": "p1", "at": "2026-08-06T09:00", "status": "done"},
                {"id": "a2", "pet_id": "p2", "at": "2026-08-07T11:00", "status": "scheduled"},
            ],
        },
        {"name": "usage_log", "description": "calls", "fields": {}, "records": []},
    ],
}


def _code(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


TOOLS = [
    {
        "name": "list-pets",
        "description": "List pets, optionally of one owner.",
        "parameters": {
            "type": "object",
            "properties": {"owner_id": {"type": "string"}},
            "additionalProperties": False,
        },
        "code": _code("""
        def list_pets(owner_id=None, **_extra):
            pets = [p for p in _load("pets") if not owner_id or p["owner_id"] == owner_id]
            return {"data": pets, "meta": {"total": len(pets)}}
     """),
    },
    {
        "name": "get-appointment",
        "description": "One appointment. Errors: NOT_FOUND.",
        "parameters": {
            "type": "object",
            "properties": {"appointment_id": {"type": "string"}},
            "required": ["appointment_id"],
            "additionalProperties": False,
        },
        "code": _code("""
        def get_appointment(appointment_id, **_extra):
            for a in _load("appointments"):
                if a["id"] == appointment_id:
                    return a
            return _err("NOT_FOUND", "no appointment " + appointment_id)
     """),
    },
    {
        "name": "book-appointment",
        "description": "Book a visit for a pet. Errors: NOT_FOUND.",
        "parameters": {
            "type": "object",
            "properties": {"pet_id": {"type": "string"}, "at": {"type": "string"}},
            "required": ["pet_id", "at"],
            "additionalProperties": False,
        },
        "code": _code("""
        def book_appointment(pet_id, at, **_extra):
            if pet_id not in {p["id"] for p in _load("pets")}:
                return _err("NOT_FOUND", "no pet " + pet_id)
            appointments = _load("appointments")
            new = {"id": _next_id(appointments, "a"), "pet_id": pet_id, "at": at,
                   "status": "scheduled", "title": "Visit of " + pet_id, "created_at": _now()}
            appointments.append(new)
            _save("appointments", appointments)
            return new
     """),
    },
    {
        "name": "count-owners",
        "description": "How many owners.",
        "parameters": {"type": "object", "properties": {}},
        "code": _code("""
        def count_owners(**_extra):
            return len(_load("owners")) + 1
     """),
    },
    {
        "name": "stall",
        "description": "Never finishes loading.",
        "parameters": {"type": "object", "properties": {}},
        "code": "while True:\n    pass\n\n\ndef stall(**_extra):\n    return 1\n",
    },
    {
        "name": "broken-tool",
        "description": "Does not compile.",
        "parameters": {"type": "object", "properties": {}},
        "code": "def broken_tool(**_extra)\n    return 1\n",
    },
]

TESTS = [
    ("list-pets", "test_lists_all", "r = list_pets()\nassert r['meta']['total'] == 3"),
    ("list-pets", "test_filters", "r = list_pets(owner_id='o1')\nassert len(r['data']) == 2"),
    ("get-appointment", "test_get", "assert get_appointment('a2')['status'] == 'scheduled'"),
    ("get-appointment", "test_missing", "assert 'error' in get_appointment('a9')"),
    (
        "book-appointment",
        "test_books",
        "r = book_appointment('p3', '2026-08-09T10:00')\n"
        "assert r['id'] == 'a3' and r['created_at'].startswith('2026-08-05T09:00')\n"
        "assert len(_load('appointments')) == 3",
    ),
    (
        "book-appointment",
        "test_db_restored",
        "assert len(_load('appointments')) == 2\n"
        "assert book_appointment('p9', 'x')['error']['code'] == 'NOT_FOUND'",
    ),
    ("count-owners", "test_count", "assert count_owners() == 2"),
    ("count-owners", "test_count_type", "assert isinstance(count_owners(), int)"),
    ("count-owners", "test_count_again", "assert count_owners() < 3"),
    ("broken-tool", "test_broken", "assert broken_tool() == 1"),
    ("stall", "test_stall", "assert stall() == 1"),
    ("list-pets", "test_nothing", "list_pets()"),  # no assert: refused
    ("ghost-tool", "test_ghost", "assert ghost_tool()"),  # unknown tool: refused
]

TASKS = [
    {
        "task": "Which pets does Ana (o1) have?",
        "success_criteria": ["Names Miso and Tofu."],
        "verified_tool_chain": [{"tool": "list-pets", "args": {"owner_id": "o1"}}],
    },
    {
        "task": "Book Rex (p2) for 2026-08-10T10:00 and confirm the booking.",
        "success_criteria": ["A scheduled appointment for p2 exists."],
        "verified_tool_chain": [
            {"tool": "book-appointment", "args": {"pet_id": "p2", "at": "2026-08-10T10:00"}},
            {"tool": "get-appointment", "args": {"appointment_id": "$0.id"}},
        ],
    },
    {
        "task": "Count the owners.",
        "success_criteria": ["Says 2."],
        "verified_tool_chain": [{"tool": "count-owners", "args": {}}],
    },
    {
        "task": "Look at appointment a9's pet.",
        "success_criteria": ["x"],
        "verified_tool_chain": [
            {"tool": "get-appointment", "args": {"appointment_id": "a9"}},
            {"tool": "list-pets", "args": {"owner_id": "$0.pet_id"}},
        ],
    },
]


def _tests_reply(failing: bool = False) -> dict[str, Any]:
    tests = []
    for tool, name, body in TESTS:
        body = (
            "assert False, 'weak'"
            if failing and tool in ("list-pets", "get-appointment", "book-appointment")
            else body
        )
        function = tool.replace("-", "_")
        body = body if function in body else f"{function}()\n{body}"
        code = f"def {name}():\n" + textwrap.indent(body, "    ") + "\n"
        tests.append({"tool": tool, "name": name, "code": code})
    return {"tests": tests, "tasks": TASKS}


def good(stage: str, attempt: int) -> str:
    if stage == "design":
        return "Here is the design:\n```json\n" + json.dumps(DESIGN) + "\n```"
    if stage == "tools":
        return json.dumps({"tools": TOOLS})
    return "<think>tests first</think>" + json.dumps(_tests_reply())


def garbage(stage: str, attempt: int) -> str:
    if attempt == 0:
        return "Sure! A clinic app would have owners, pets and appointments. Hope this helps!"
    return json.dumps({"collections": "owners, pets"})


def weak(stage: str, attempt: int) -> str:
    return json.dumps(_tests_reply(failing=True)) if stage == "tests" else good(stage, attempt)


class FakeLLM:
    """``POST /v1/chat/completions`` answered by ``script(stage, attempt)``."""

    def __init__(self) -> None:
        self.script = good
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                stage = re.search(r"Current stage: (\w+)", body["messages"][0]["content"])[1]
                attempt = sum(1 for m in body["messages"] if m["role"] == "assistant")
                content = fake.script(stage, attempt)
                payload = json.dumps(
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
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
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM()
    yield fake
    fake.close()


@pytest.fixture
def backend(llm):
    llm.requests.clear()
    return make_backend(LLMConfig(model="fake-coder", base_url=llm.base_url, max_retries=0))


@pytest.fixture
def own_registry(monkeypatch):
    """Environments a test registers are forgotten after it."""
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    monkeypatch.setattr(registry, "_SPECS", {})
    known = set(gym.registry)
    yield
    for gym_id in set(gym.registry) - known:
        del gym.registry[gym_id]


def test_a_good_model_yields_a_validated_environment(llm, backend, tmp_path, own_registry):
    spec_file = tmp_path / "clinic-openapi.json"
    spec_file.write_text(
        json.dumps(
            {
                "openapi": "3.0.0",
                "info": {"title": "Clinic API"},
                "paths": {"/pets": {"get": {"summary": "List pets"}}},
            }
        )
    )
    notes = tmp_path / "notes.md"
    notes.write_text("# Front desk\nAppointments are booked per pet.")
    config = LLMEnvConfig(
        "a veterinary clinic", sources=[spec_file, notes], out=tmp_path / "out", limits=FAST
    )
    result = synthesize_env(config, backend, model="fake-coder")
    assert result.accepted, result.summary()
    assert result.gym_id == "AgentWorld/paws-clinic-v0"
    design_prompt = llm.requests[0]["messages"][1]["content"]
    assert "GET /pets: List pets" in design_prompt and "booked per pet" in design_prompt
    verdicts = {t.name: t for t in result.tools}
    assert {n for n, v in verdicts.items() if v.kept} == {
        "list-pets",
        "get-appointment",
        "book-appointment",
    }
    assert "does not load: SyntaxError" in verdicts["broken-tool"].reason
    assert "loading it does not finish: timed out" in verdicts["stall"].reason
    assert verdicts["count-owners"].reason == "passes 1/3 tests, not more than 50%"
    tests_stage = next(s for s in result.stages if s.stage == "tests")
    assert any("checks nothing" in r for r in tests_stage.reasons)
    assert any("unknown tool 'ghost-tool'" in r for r in tests_stage.reasons)
    assert result.tasks["draft-2"].startswith("dropped: uses tools not kept")
    assert list(result.tasks.values()).count("ok") == 2
    assert "returned an error" in result.tasks["paws-clinic-q002"]

    spec = load_spec("paws-clinic")
    assert spec.provenance["source"] == "llm-synthesis"
    assert spec.provenance["theme"] == "a veterinary clinic"
    folder = Path(result.folder)
    assert json.loads((folder / "synthesis_report.json").read_text())["accepted"] is True
    env = AgentWorldEnv(spec)
    env.reset(options={"task_id": "paws-clinic-q001"})
    book = {"name": "book-appointment", "arguments": {"pet_id": "p2", "at": "2026-08-10T10:00"}}
    obs, *_ = env.step(json.dumps(book))
    assert json.loads(obs)["id"] == "a3"
    _, reward, terminated, _, _ = env.step("Booked: Visit of p2 (a3).")
    assert terminated and reward == 1.0
    env.reset(options={"task_id": "paws-clinic-q001"})
    book["arguments"]["at"] = "2026-08-11T10:00"  # a date the user asked for is still checked
    env.step(json.dumps(book))
    assert env.step("Booked: Visit of p2 (a3).")[1] == 0.5


def test_garbage_is_rejected_with_reasons(llm, backend, tmp_path):
    llm.script = garbage
    try:
        result = synthesize_env(LLMEnvConfig("a clinic", out=tmp_path), backend)
    finally:
        llm.script = good
    assert not result.accepted and not list(tmp_path.glob("*/env.json"))
    assert result.reasons == ["the design stage produced no usable database"]
    design = result.stages[0]
    assert design.attempts == 2 and not design.ok
    assert any("no JSON object found in the reply" in r for r in design.reasons)
    assert any("design.collections must be a non-empty list" in r for r in design.reasons)
    assert "Your reply could not be used" in llm.requests[1]["messages"][-1]["content"]
    assert "REJECTED" in result.summary()


def test_a_weak_model_whose_tests_fail_is_rejected(llm, backend, tmp_path):
    llm.script = weak
    try:
        result = synthesize_env(LLMEnvConfig("a clinic", out=tmp_path, limits=FAST), backend)
    finally:
        llm.script = good
    assert not result.accepted
    assert result.reasons == [
        "0 tool(s) kept and 0 passing test(s): an environment needs at least one of each"
    ]
    assert all(not t.kept for t in result.tools)


def test_cli_synth_env(llm, tmp_path, capsys, own_registry):
    code = main(
        [
            "synth",
            "env",
            "--theme",
            "a veterinary clinic",
            "--llm-base-url",
            llm.base_url,
            "--llm-model",
            "fake-coder",
            "--out",
            str(tmp_path),
            "--wall-s",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "ACCEPTED AgentWorld/paws-clinic-v0" in out and "[drop] broken-tool" in out
    llm.script = garbage
    try:
        code = main(
            [
                "synth",
                "env",
                "--theme",
                "x",
                "--llm-base-url",
                llm.base_url,
                "--llm-model",
                "fake-coder",
                "--out",
                str(tmp_path / "g"),
                "--json",
            ]
        )
    finally:
        llm.script = good
    assert code == 1 and json.loads(capsys.readouterr().out)["accepted"] is False


def test_missing_sources_and_bad_settings_are_config_errors(backend, tmp_path):
    with pytest.raises(ConfigError, match="does-not-exist.md does not exist"):
        synthesize_env(LLMEnvConfig("x", sources=[tmp_path / "does-not-exist.md"]), backend)
    with pytest.raises(ConfigError, match="threshold"):
        LLMEnvConfig("x", threshold=1.5)


def test_parsers_never_raise_on_junk():
    for junk in ["", "null", "[1, 2]", "{", '{"collections": 3}', "```json\n{oops}\n```"]:
        parsed = extract_json(junk, "collections")
        if parsed.value is not None:
            assert check_design(parsed.value).value is None
        else:
            assert parsed.reasons
