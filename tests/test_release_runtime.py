"""The ``"release"`` tool runtime: pooled workers, the database mirror, rollback, the clock."""

from __future__ import annotations

import json

import pytest

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import ConfigError, ToolExecutionError
from agentworld_gym.release import RuntimeOptions, runtime_for
from agentworld_gym.release.runtime import function_name
from agentworld_gym.sandbox import SandboxLimits
from agentworld_gym.spec import EnvSpec, TaskSpec, ToolSpec
from agentworld_gym.tools import Toolbox, ToolContext

SOURCE = """
import datetime, json, os, random, time, uuid
_DB = os.environ["MCP_DB_DIR"]
_CALLS = []

def _load(name):
    with open(os.path.join(_DB, name)) as f:
        return json.load(f)

def _save(name, data):
    with open(os.path.join(_DB, name), "w") as f:
        json.dump(data, f)

def add_note(text, **_extra):
    notes = _load("notes.json")
    note = {"text": text, "at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "t": time.time(), "ref": str(uuid.uuid4()), "r": random.random()}
    notes.append(note)
    _save("notes.json", notes)
    return note

def get_note(index, **_extra):
    notes = _load("notes.json")
    if index >= len(notes):
        return {"error": {"code": "NOT_FOUND", "message": f"no note {index}"}}
    return notes[index]

def add_then_fail(text, **_extra):
    add_note(text)
    raise RuntimeError("failed after writing")

def remember(**_extra):
    _CALLS.append(1)
    return len(_CALLS)

def new_file(**_extra):
    _save("extra.json", {"made": True})
    return "ok"

def write_then_spin(**_extra):
    add_note("lost")
    while True:
        pass


def write_then_huge(**_extra):
    add_note("lost")
    return "x" * 2_000_000


def today(**_extra):
    return [datetime.date.today().isoformat(), time.strftime("%Y-%m-%d %H:%M")]
"""


def _tool(name: str, params: dict | None = None, kind: str = "write") -> ToolSpec:
    schema = {"type": "object", "properties": params or {}, "additionalProperties": False}
    impl = {"type": "release", "source": SOURCE, "function": function_name(name)}
    return ToolSpec(name, name, schema, impl, kind)


def make_spec() -> EnvSpec:
    tools = [
        _tool("add-note", {"text": {"type": "string"}}),
        _tool("get-note", {"index": {"type": "integer"}}, "read"),
        _tool("add-then-fail", {"text": {"type": "string"}}),
        _tool("remember", {}, "read"),
        _tool("new-file", {}),
        _tool("today", {}, "read"),
        _tool("write-then-spin", {}),
        _tool("write-then-huge", {}),
    ]
    records = {"notes": [{"text": "first", "at": "2026-01-01T00:00:00Z"}], "config": {"x": 1}}
    task = TaskSpec("t0", "Take a note.", {"type": "release_rubric", "criteria": ["noted"]})
    spec = EnvSpec("notes", "Notes", "", tools, records=records, tasks=[task])
    limits = SandboxLimits(wall_s=1.0, cpu_s=1.0, memory_mb=512, output_bytes=1 << 20)
    runtime_for(spec, RuntimeOptions(limits=limits))
    return spec


@pytest.fixture
def spec():
    spec = make_spec()
    yield spec
    runtime_for(spec).close()


def _slot(ctx: ToolContext):
    return next(v for k, v in ctx.__dict__.items() if k.startswith("_tool_runtime_slot"))[0]


def test_the_database_mirrors_the_worker_folder(spec):
    box = Toolbox(spec)
    ctx = ToolContext(spec.database.fork(), "notes", "t0")
    note = box.call(ctx, "add-note", {"text": "hello"})
    assert note["text"] == "hello"
    assert ctx.db.document("notes")[-1] == note
    assert spec.database.document("notes") == [{"text": "first", "at": "2026-01-01T00:00:00Z"}]
    on_disk = json.loads((_slot(ctx).folder / "notes.json").read_text())
    assert on_disk == ctx.db.document("notes")


def test_clock_and_randomness_are_pinned_per_call(spec):
    box = Toolbox(spec)
    runs = []
    for _ in range(2):
        ctx = ToolContext(spec.database.fork(), "notes", "t0")
        runs.append([box.call(ctx, "add-note", {"text": "a"}) for _ in range(2)])
        runs[-1].append(box.call(ctx, "today", {}))
    assert runs[0] == runs[1]
    first, second, today = runs[0]
    assert first["at"] == "2026-08-05T09:01:00+00:00" and second["at"].startswith(
        "2026-08-05T09:02"
    )
    assert first["t"] == 1785920460.0 and first["ref"] != second["ref"]
    assert today == ["2026-08-05", "2026-08-05 09:03"]


def test_in_band_errors_are_observations_not_exceptions(spec):
    env = AgentWorldEnv(spec)
    env.reset()
    obs, _, _, _, info = env.step(json.dumps({"name": "get-note", "arguments": {"index": 9}}))
    assert json.loads(obs) == {"error": {"code": "NOT_FOUND", "message": "no note 9"}}
    assert info["tool_results"][0]["ok"] is True


def test_a_write_then_raise_is_undone_everywhere(spec):
    box = Toolbox(spec)
    ctx = ToolContext(spec.database.fork(), "notes", "t0")
    with pytest.raises(ToolExecutionError, match="failed after writing"):
        box.call(ctx, "add-then-fail", {"text": "x"})
    assert not ctx.db.dirty
    assert len(json.loads((_slot(ctx).folder / "notes.json").read_text())) == 1


@pytest.mark.parametrize(
    ("tool", "reason"), [("write-then-spin", "timeout"), ("write-then-huge", "output_too_large")]
)
def test_a_write_the_parent_refuses_is_undone_from_the_database(spec, tool, reason):
    box = Toolbox(spec)
    ctx = ToolContext(spec.database.fork(), "notes", "t0")
    with pytest.raises(ToolExecutionError) as info:
        box.call(ctx, tool, {})
    assert info.value.payload()["error"]["reason"] == reason
    assert not ctx.db.dirty
    assert box.call(ctx, "get-note", {"index": 1})["error"]["code"] == "NOT_FOUND"


def test_a_rolled_back_transaction_resyncs_the_folder(spec):
    box = Toolbox(spec)
    ctx = ToolContext(spec.database.fork(), "notes", "t0")
    with pytest.raises(KeyError), ctx.db.transaction():
        box.call(ctx, "add-note", {"text": "doomed"})
        box.call(ctx, "new-file", {})
        raise KeyError("the caller's own failure")
    assert ctx.db.document("notes") == spec.database.document("notes")
    assert box.call(ctx, "get-note", {"index": 1}) == {
        "error": {"code": "NOT_FOUND", "message": "no note 1"}
    }
    assert not (_slot(ctx).folder / "extra.json").exists()


def test_workers_are_reused_within_an_episode_and_never_serve_another():
    spec = make_spec()
    try:
        env = AgentWorldEnv(spec)
        remember = json.dumps({"name": "remember", "arguments": {}})
        env.reset()
        assert [env.step(remember)[0] for _ in range(3)] == ["1", "2", "3"]
        slot = _slot(env._ctx)
        pid = slot.worker.pid
        env.step(json.dumps({"name": "add-note", "arguments": {"text": "x"}}))
        env.reset()  # the old context is collected: its slot goes back to the pool
        assert env.step(remember)[0] == "1"  # no module state survives the episode
        assert _slot(env._ctx) is slot
        assert slot.worker.pid != pid  # a process that ran an episode's code is gone
        assert len(json.loads((slot.folder / "notes.json").read_text())) == 1  # files reset
        assert env.db.document("notes") == spec.database.document("notes")
    finally:
        runtime_for(spec).close()


def test_concurrent_episodes_get_their_own_folders(spec):
    box = Toolbox(spec)
    a = ToolContext(spec.database.fork(), "notes", "a")
    b = ToolContext(spec.database.fork(), "notes", "b")
    box.call(a, "add-note", {"text": "for a"})
    assert box.call(b, "get-note", {"index": 1})["error"]["code"] == "NOT_FOUND"
    assert _slot(a).folder != _slot(b).folder


def test_disabled_tools_and_bad_definitions():
    tool = _tool("today")
    tool.implementation["disabled"] = "hangs when loaded"
    spec = EnvSpec("d", "D", "", [tool], records={"notes": []})
    with pytest.raises(ToolExecutionError, match="the tool is disabled: hangs when loaded"):
        Toolbox(spec).call(ToolContext(spec.database.fork()), "today", {})
    bad = ToolSpec("x", "", {"type": "object"}, {"type": "release"})
    with pytest.raises(ConfigError, match="needs 'file' or 'source'"):
        Toolbox(EnvSpec("e", "E", "", [bad], records={}))


def test_function_names_follow_the_release_convention():
    assert function_name("update-task-status") == "update_task_status"
    assert function_name("2fa.verify") == "_2fa_verify"


def test_a_closed_runtime_gives_live_episodes_a_new_slot(spec):
    box = Toolbox(spec)
    ctx = ToolContext(spec.database.fork(), "notes", "t0")
    box.call(ctx, "add-note", {"text": "before"})
    runtime_for(spec).close()
    assert box.call(ctx, "get-note", {"index": 1})["text"] == "before"  # folder rebuilt from db
