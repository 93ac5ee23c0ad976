"""The sandbox: every misbehaviour is a clean error result and the parent survives."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from agentworld_gym.errors import ConfigError, SandboxError
from agentworld_gym.sandbox import (
    SandboxErrorType,
    SandboxLimits,
    SandboxResult,
    SandboxWorker,
    run_function,
)

FAST = SandboxLimits(wall_s=1.0, cpu_s=1.0, memory_mb=256)


def run(body: str, *args: object, limits: SandboxLimits = FAST, **kwargs) -> SandboxResult:
    """Run ``def f(*args):`` + ``body`` (indented) in a one-shot sandbox."""
    source = "import os, socket, subprocess\n\ndef f(*args):\n" + "".join(
        f"    {line}\n" for line in body.splitlines()
    )
    return run_function(source, "f", list(args), limits=limits, **kwargs)


@pytest.fixture
def workdir():
    """A folder under /tmp: the sandbox user can reach it (pytest's tmp_path is root-only)."""
    path = Path(tempfile.mkdtemp(prefix="test-sandbox-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def outside_file():
    path = Path(tempfile.gettempdir()) / f"sandbox-escape-{uuid.uuid4().hex}"
    yield path
    path.unlink(missing_ok=True)


# --- one-shot: normal behaviour ----------------------------------------------------------------


def test_returns_the_json_value_and_reports_isolation():
    source = "def verify(initial, final, answer):\n    return {'ok': final['n'] == 2, 'a': answer}"
    result = run_function(source, "verify", [{"n": 1}, {"n": 2}, "done"])
    assert result.ok and result.error is None
    assert result.value == {"ok": True, "a": "done"}
    assert result.isolation["audit_hook"] is True
    assert result.isolation["network"] in ("namespace", "socket_refusal")
    assert "AS" in result.isolation["rlimits"] and "CPU" in result.isolation["rlimits"]
    if os.geteuid() == 0:  # kernel confinement: a uid of its own, nothing else of the host
        assert result.isolation["user"].startswith("uid ")
        assert result.isolation["mount"] == "namespace"
        assert result.isolation["capabilities"] == "none" and result.isolation["seccomp"]


def test_prints_are_captured_and_cannot_break_the_protocol():
    result = run(
        "for i in range(100_000):\n    print('spam', i)\n"
        "os.write(1, b'raw bytes on fd 1')\nos.write(2, b'and fd 2')\nreturn 42"
    )
    assert result.ok and result.value == 42
    assert result.stdout.startswith("spam 0\nspam 1\n")
    assert "more characters dropped" in result.stdout and len(result.stdout) < 70_000


def test_environment_is_clean_and_env_is_passed(monkeypatch):
    monkeypatch.setenv("TRAINER_SECRET", "s3cret")
    result = run("return dict(os.environ)", env={"MCP_DB_DIR": "/data"})
    assert result.ok
    assert result.value["MCP_DB_DIR"] == "/data"
    assert "TRAINER_SECRET" not in result.value


def test_may_write_inside_its_working_folder():
    result = run(
        "open('notes.txt', 'w').write('hello')\nos.mkdir('sub')\n"
        "return open('notes.txt').read(), os.listdir('.')"
    )
    assert result.ok, result.error
    assert result.value[0] == "hello" and sorted(result.value[1]) == ["notes.txt", "sub"]


def test_concurrent_calls_from_threads():
    results: list[SandboxResult] = []

    def one(i: int) -> None:
        results.append(run_function("def f(x):\n    return x * 2", "f", [i]))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.value for r in results) == [2 * i for i in range(8)]


# --- one-shot: misbehaviour --------------------------------------------------------------------


def test_exception_reports_type_text_and_line():
    result = run("x = 1\nreturn x / 0")
    assert not result.ok and result.error_type == SandboxErrorType.EXCEPTION
    assert result.error == "ZeroDivisionError: division by zero (line 5)"
    assert "ZeroDivisionError" in result.traceback
    assert "agentworld_gym/sandbox" not in result.traceback  # the runtime's frames are hidden


def test_syntax_error_is_a_compile_error():
    result = run_function("def verify(a):\n    return a +\n", "verify", [1])
    assert result.error_type == SandboxErrorType.COMPILE
    assert "SyntaxError" in result.error and "line 2" in result.error


def test_missing_function_suggests_the_closest_name():
    result = run_function("def verify(a):\n    return a", "verfy", [1])
    assert result.error_type == SandboxErrorType.EXCEPTION
    assert "'verfy'" in result.error and "did you mean 'verify'" in result.error


def test_infinite_loop_times_out_on_the_wall_clock():
    start = time.monotonic()
    result = run("while True:\n    pass", limits=SandboxLimits(wall_s=1.0, cpu_s=10))
    assert result.error_type == SandboxErrorType.TIMEOUT
    assert result.error == "timed out after 1 s wall-clock"
    assert time.monotonic() - start < 3


def test_sleeping_code_times_out():
    result = run("import time\ntime.sleep(60)", limits=SandboxLimits(wall_s=0.5))
    assert result.error_type == SandboxErrorType.TIMEOUT and "wall-clock" in result.error


def test_cpu_burn_hits_the_cpu_limit():
    result = run("while True:\n    pass", limits=SandboxLimits(wall_s=10, cpu_s=1))
    assert result.error_type == SandboxErrorType.TIMEOUT
    assert "exceeded the 1 s CPU-time limit" in result.error


def test_allocating_2_gb_hits_the_memory_limit():
    result = run("blob = bytearray(2 * 1024**3)\nreturn len(blob)")
    assert result.error_type == SandboxErrorType.MEMORY
    assert result.error.startswith("exceeded the 256 MB memory limit")


@pytest.mark.parametrize("folder", ["/tmp", "/etc"])
def test_writing_outside_the_working_folder_is_forbidden(folder, outside_file):
    target = Path(folder) / outside_file.name
    result = run(f"open({str(target)!r}, 'w').write('pwned')")
    assert result.error_type == SandboxErrorType.FORBIDDEN
    assert "only write inside its working folder" in result.error
    assert not target.exists()


def test_escaping_by_rename_symlink_or_sqlite_is_forbidden(outside_file):
    for body in (
        f"open('a', 'w').close()\nos.rename('a', {str(outside_file)!r})",
        f"os.symlink({str(outside_file)!r}, 'link')\nopen('link', 'w').write('x')",
        f"import sqlite3\nsqlite3.connect({str(outside_file)!r}).execute('create table t(x)')",
    ):
        result = run(body)
        assert result.error_type == SandboxErrorType.FORBIDDEN, (body, result.error)
        assert not outside_file.exists()


def test_only_the_interpreter_is_visible():
    # The stdlib reads fine; the host's files are not there at all (and secrets are named).
    assert run("return open(os.__file__).read(10) is not None").ok
    result = run("return open('/etc/hostname').read()")
    assert not result.ok and "No such file" in result.error
    result = run("return open('/etc/shadow').read()")
    assert result.error_type == SandboxErrorType.FORBIDDEN and "/etc/shadow" in result.error


def test_network_is_disabled():
    result = run("socket.create_connection(('1.1.1.1', 80), timeout=1)")
    assert result.error_type == SandboxErrorType.NETWORK
    assert result.error.startswith("network access is disabled in the sandbox")


def test_network_error_survives_library_wrapping():
    result = run("import urllib.request\nurllib.request.urlopen('http://1.1.1.1', timeout=1)")
    assert result.error_type == SandboxErrorType.NETWORK


@pytest.mark.parametrize(
    "body",
    [
        "os.system('touch {path}')",
        "subprocess.run(['touch', '{path}'])",
        "os.execv('/usr/bin/touch', ['touch', '{path}'])",
        "import _posixsubprocess\n_posixsubprocess.fork_exec()",
    ],
)
def test_starting_processes_is_forbidden(body, outside_file):
    result = run(body.format(path=outside_file))
    assert result.error_type == SandboxErrorType.FORBIDDEN, result.error
    assert "not allowed in the sandbox" in result.error
    assert not outside_file.exists()


def test_ctypes_is_forbidden():
    result = run("import ctypes\nreturn ctypes.CDLL(None).getpid()")
    assert result.error_type == SandboxErrorType.FORBIDDEN


def test_huge_result_is_refused_quickly():
    start = time.monotonic()
    result = run("return 'x' * (64 * 1024 * 1024)", limits=SandboxLimits(wall_s=5))
    assert result.error_type == SandboxErrorType.OUTPUT_TOO_LARGE
    assert result.error == "result of at least 67108866 bytes exceeds the 8388608-byte output cap"
    assert time.monotonic() - start < 1
    result = run("return ['x' * 1024] * 10_000", limits=SandboxLimits(wall_s=5, output_bytes=10**6))
    assert result.error == "result of 10270001 bytes exceeds the 1000000-byte output cap"


def test_big_integers_survive_the_round_trip():
    assert run_function("def f(x):\n    return x * 2", "f", [2**70]).value == 2**71


def test_unserialisable_result_is_an_exception():
    result = run("return {1, 2}")
    assert result.error_type == SandboxErrorType.EXCEPTION and "JSON" in result.error


def test_file_size_limit():
    limits = SandboxLimits(wall_s=2, file_bytes=1024 * 1024)
    result = run("open('big', 'wb').write(b'x' * 4 * 1024 * 1024)", limits=limits)
    assert result.error_type == SandboxErrorType.FORBIDDEN
    assert "file size limit" in result.error


def test_async_functions_are_awaited():
    source = "import asyncio\n\nasync def verify(x):\n    await asyncio.sleep(0)\n    return x + 1"
    assert run_function(source, "verify", [1]).value == 2


def test_network_can_be_allowed():
    result = run("socket.socket().close()\nreturn 1", limits=SandboxLimits(network=True))
    assert result.ok and result.isolation["network"] == "allowed"


def test_without_kernel_confinement_untrusted_code_is_refused(monkeypatch, outside_file):
    monkeypatch.setenv("AGENTWORLD_SANDBOX_CONFINE", "0")  # as where namespaces are unavailable
    result = run(f"open({str(outside_file)!r}, 'w')")
    assert result.error_type == SandboxErrorType.FORBIDDEN
    assert "kernel confinement is unavailable" in result.error
    assert "AGENTWORLD_SANDBOX_UNCONFINED=1" in result.error
    assert result.isolation["mount"] == "none" and "refused" in result.isolation
    assert not outside_file.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops privileges")
def test_unconfined_override_keeps_the_audit_hook_as_a_guard(monkeypatch, outside_file):
    monkeypatch.setenv("AGENTWORLD_SANDBOX_CONFINE", "0")
    monkeypatch.setenv("AGENTWORLD_SANDBOX_UNCONFINED", "1")
    monkeypatch.setenv("AGENTWORLD_SANDBOX_USER", "same")
    assert run("return 1").value == 1
    result = run(f"open({str(outside_file)!r}, 'w')")
    assert result.isolation["user"] == "same" and result.isolation["mount"] == "none"
    assert result.error_type == SandboxErrorType.FORBIDDEN and not outside_file.exists()


def test_bad_arguments_raise():
    with pytest.raises(SandboxError, match="JSON-serialisable"):
        run_function("def f(x):\n    return x", "f", [object()])
    with pytest.raises(SandboxError, match="env"):
        run_function("def f():\n    return 1", "f", [], env={"A": 1})


def test_hard_exit_is_a_crash():
    result = run("os._exit(3)")
    assert result.error_type == SandboxErrorType.CRASH and "status 3" in result.error


def test_subprocess_fallback_without_zygote(monkeypatch):
    monkeypatch.setenv("AGENTWORLD_SANDBOX_ZYGOTE", "0")
    result = run("return 7")
    assert result.ok and result.value == 7
    assert result.isolation["process"] == "subprocess"
    assert run("while True:\n    pass").error_type == SandboxErrorType.TIMEOUT


def test_a_forked_trainer_gets_its_own_zygote():
    assert run("return 1").ok  # the parent's zygote exists
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.write(write_end, b"ok" if run("return 2").value == 2 else b"bad")
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    assert os.read(read_end, 10) == b"ok"
    os.close(read_end)
    assert run("return 3").value == 3  # and the parent's zygote still serves the parent


def test_limits_are_validated():
    with pytest.raises(ConfigError, match="wall_s"):
        SandboxLimits(wall_s=0)
    with pytest.raises(ConfigError, match="memory_mb"):
        SandboxLimits(memory_mb=8)


# --- worker ------------------------------------------------------------------------------------

TOOLS = """
import json, os

DB_DIR = os.environ["MCP_DB_DIR"]  # read at module level: env must be set before exec
calls = 0

def count():
    global calls
    calls += 1
    return calls

def db_dir():
    return DB_DIR

def add_note(text):
    path = os.path.join(DB_DIR, "notes.json")
    notes = json.load(open(path)) if os.path.exists(path) else []
    notes.append(text)
    json.dump(notes, open(path, "w"))
    return len(notes)

def spin():
    while True:
        pass

def hog():
    return len(bytearray(2 * 1024**3))
"""


@pytest.fixture
def worker(workdir):
    with SandboxWorker(workdir, TOOLS, env={"MCP_DB_DIR": str(workdir)}, limits=FAST) as w:
        yield w


def test_worker_keeps_module_state(worker):
    assert [worker.call("count").value for _ in range(3)] == [1, 2, 3]


def test_worker_sets_env_before_module_code(worker, workdir):
    assert worker.call("db_dir").value == str(workdir)


def test_worker_files_persist_in_the_working_folder(worker, workdir):
    assert worker.call("add_note", {"text": "a"}).value == 1
    assert worker.call("add_note", {"text": "b"}).value == 2
    assert (workdir / "notes.json").read_text() == '["a", "b"]'


def test_worker_restarts_after_a_timeout(worker):
    assert worker.call("count").value == 1
    first_pid = worker.pid
    result = worker.call("spin")
    assert result.error_type == SandboxErrorType.TIMEOUT and "wall-clock" in result.error
    assert worker.call("count").value == 1  # a fresh process: module state starts over
    assert worker.pid != first_pid


def test_worker_cpu_limit_per_call(workdir):
    limits = SandboxLimits(wall_s=10, cpu_s=0.5)
    with SandboxWorker(workdir, TOOLS, env={"MCP_DB_DIR": str(workdir)}, limits=limits) as w:
        result = w.call("spin")
        assert result.error_type == SandboxErrorType.TIMEOUT and "CPU-time" in result.error
        assert result.wall_s < 5
        assert w.call("count").ok


def test_worker_survives_a_memory_blowup(worker):
    result = worker.call("hog")
    assert result.error_type == SandboxErrorType.MEMORY
    assert worker.call("count").value == 1


def test_worker_broken_source_only_breaks_its_functions(workdir):
    sources = {"good": "def ping():\n    return 'pong'", "bad": "def broken(:\n    pass"}
    with SandboxWorker(workdir, sources, limits=FAST) as w:
        assert w.call("ping").value == "pong"
        result = w.call("broken")
        assert result.error_type == SandboxErrorType.COMPILE
        assert "source 'bad' failed to load: SyntaxError" in result.error
        assert "bad" in w.load_errors


def test_worker_exceptions_keep_the_process(worker):
    assert worker.call("count").value == 1
    assert worker.call("add_note", {"wrong": 1}).error_type == SandboxErrorType.EXCEPTION
    assert worker.call("count").value == 2


def test_worker_sources_import_each_other_and_qualified_names(workdir):
    sources = {
        "helpers": "def double(x):\n    return 2 * x\n\ndef name():\n    return 'helpers'",
        "tools": "from helpers import double\n\ndef quad(x):\n    return double(double(x))"
        "\n\ndef name():\n    return 'tools'",
    }
    with SandboxWorker(workdir, sources, limits=FAST) as w:
        assert w.call("quad", {"x": 3}).value == 12
        assert "several sources" in w.call("name").error
        assert w.call("tools:name").value == "tools"


def test_worker_hanging_module_code_times_out(workdir):
    with SandboxWorker(workdir, "while True:\n    pass", limits=SandboxLimits(wall_s=0.5)) as w:
        result = w.call("f")
        assert result.error_type == SandboxErrorType.TIMEOUT
        assert result.error.endswith("(while loading the sources)")


def test_worker_module_level_failure_is_reported(workdir):
    with SandboxWorker(workdir, {"t": "x = 1 / 0\ndef f():\n    return 1"}, limits=FAST) as w:
        result = w.call("f")
        assert (
            result.error_type == SandboxErrorType.EXCEPTION and "ZeroDivisionError" in result.error
        )


def test_worker_restart_switches_working_folder(worker, workdir):
    other = Path(tempfile.mkdtemp(prefix="test-sandbox-"))
    try:
        assert worker.call("add_note", {"text": "a"}).value == 1
        worker.restart(workdir=other, env={"MCP_DB_DIR": str(other)})
        assert worker.call("count").value == 1
        assert worker.call("add_note", {"text": "b"}).value == 1
        assert (other / "notes.json").read_text() == '["b"]'
        assert worker.isolation["audit_hook"] is True
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_worker_cannot_write_outside(worker, outside_file):
    with SandboxWorker(worker._workdir, f"def f():\n    open({str(outside_file)!r}, 'w')") as w:
        assert w.call("f").error_type == SandboxErrorType.FORBIDDEN
    assert not outside_file.exists()


def test_closed_worker_refuses_calls(workdir):
    w = SandboxWorker(workdir, "def f():\n    return 1")
    assert w.call("f").value == 1
    pid = w.pid
    w.close()
    with pytest.raises(SandboxError, match="closed"):
        w.call("f")
    deadline = time.monotonic() + 2
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped


def test_a_source_too_deep_to_compile_is_a_compile_error_not_a_crash():
    # compiling runs in the parent first (once per source): absurd nesting must not raise there
    for body in ("(" * 200_000 + "1" + ")" * 200_000, "-" * 500_000 + "1"):
        result = run_function(f"def verify(a):\n    return {body}", "verify", [1])
        assert not result.ok and result.error_type == SandboxErrorType.COMPILE, result.error
