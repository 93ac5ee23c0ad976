"""The sample's Trap Box: every misbehaving tool is contained and the episode carries on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.release import ImportOptions, import_release, runtime_for
from agentworld_gym.spec import EnvSpec, TaskSpec

SAMPLE = Path("/work/shared/fixtures/agentworld_release_sample")
FAST = {"wall_s": 2.0, "cpu_s": 2.0, "memory_mb": 512}
"""Tight limits, so the spinning tool's timeout comes quickly."""
ROOMY = {"wall_s": 60.0, "cpu_s": 60.0, "memory_mb": 512}
"""Time enough to fill 512 MB on a loaded machine (a CI run took over 2 s and reported a
timeout instead of the memory limit); an unloaded one hits the limit in well under a second."""


def _trap_spec(out: Path, limits: dict) -> EnvSpec:
    options = ImportOptions(out=out, only=["9900002"], limits=limits, register=False, gate=False)
    import_release(SAMPLE, options)  # containment is the point here, not the tasks
    spec = EnvSpec.load(out / "trap-box")
    spec.tasks.append(
        TaskSpec("probe", "Poke every tool.", {"type": "release_rubric", "criteria": ["ok"]})
    )
    return spec


@pytest.fixture(scope="module")
def trap_spec(tmp_path_factory):
    spec = _trap_spec(tmp_path_factory.mktemp("trap"), FAST)
    yield spec
    runtime_for(spec).close()


@pytest.fixture(scope="module")
def roomy_spec(tmp_path_factory):
    spec = _trap_spec(tmp_path_factory.mktemp("roomy"), ROOMY)
    yield spec
    runtime_for(spec).close()


def _env(spec: EnvSpec) -> AgentWorldEnv:
    env = AgentWorldEnv(spec, split="all")
    env.reset()
    return env


@pytest.fixture
def env(trap_spec):
    return _env(trap_spec)


def _step(env: AgentWorldEnv, name: str) -> tuple[dict, dict]:
    obs, reward, terminated, truncated, info = env.step(json.dumps({"name": name, "arguments": {}}))
    assert reward == 0.0 and not terminated and not truncated
    return json.loads(obs), info["tool_results"][0]


def _contained(env: AgentWorldEnv, name: str, reason: str, message: str) -> dict:
    """The call is an error observation; the state is untouched; the next call works."""
    before = env.db.fingerprint()
    obs, result = _step(env, name)
    assert result == {"name": name, "ok": False, "error": "tool_execution_error"}
    assert obs["error"]["reason"] == reason, obs
    assert message in obs["error"]["message"]
    state = env.db.snapshot()
    assert state["items"] == [{"id": "i1", "v": 1}]
    assert env.db.fingerprint() == before
    after, ok = _step(env, "ok-read")
    assert ok["ok"] and after == [{"id": "i1", "v": 1}]
    return obs


def test_spin_times_out(env):
    _contained(env, "spin", "timeout", "timed out after 2 s")


def test_hog_hits_the_memory_limit(roomy_spec):
    _contained(_env(roomy_spec), "hog", "memory", "exceeded the 512 MB memory limit")


def test_peek_cannot_read_outside_the_database(env):
    obs = _contained(env, "peek", "forbidden", "reading '/etc/passwd' is not allowed")
    assert "root:" not in json.dumps(obs)


def test_scribble_cannot_write_outside_the_database(env):
    slot_root = runtime_for(env.spec_data)._tmp  # the folder above the database copy
    _contained(env, "scribble", "forbidden", "may only write inside its working folder")
    assert not (slot_root / "escaped.txt").exists()


def test_dial_has_no_network(env):
    _contained(env, "dial", "network", "network access is disabled")


def test_boom_is_an_error_observation(env):
    _contained(env, "boom", "exception", "RuntimeError: boom (line 30)")


def test_half_write_is_rolled_back_in_the_database_and_the_worker(env):
    _contained(env, "half-write", "exception", "ValueError: failed after writing")
    slot, _ = next(v for k, v in env._ctx.__dict__.items() if k.startswith("_tool_runtime_slot"))
    assert json.loads((slot.folder / "items.json").read_text()) == [{"id": "i1", "v": 1}]


def test_bad_syntax_reports_the_compile_error(env):
    _contained(env, "bad-syntax", "compile", "SyntaxError: expected ':' (line 29)")


def test_huge_output_is_capped(env):
    _contained(env, "huge-output", "output_too_large", "exceeds the 1048576-byte output cap")


def test_the_episode_still_ends_with_a_reward(env):
    _step(env, "spin")
    _, reward, terminated, _, info = env.step("ok")
    assert terminated and reward == 0.0
    assert info["verification"]["verifier"] == "release_rubric"


def test_isolation_is_reported(env):
    _step(env, "ok-read")
    isolation = runtime_for(env.spec_data).isolation
    assert isolation["audit_hook"] is True and isolation["socket_refusal"] is True
    assert isolation["network"] in ("namespace", "socket_refusal")
