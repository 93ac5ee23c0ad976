"""``agentworld import-release`` on the sample release: catalog, registration, replay, errors."""

from __future__ import annotations

import doctest
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import orjson
import pytest
from gymnasium.utils.env_checker import check_env

import agentworld_gym  # noqa: F401
from agentworld_gym import registry
from agentworld_gym.cli import main
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import ConfigError
from agentworld_gym.registry import DEFAULT_ROOT, load_spec, read_index
from agentworld_gym.release import ImportOptions, ReleaseFormatError, import_release
from agentworld_gym.release.importer import slugify
from agentworld_gym.replay import validate
from agentworld_gym.spec import EnvSpec
from agentworld_gym.verifiers.judge import Verdict

SAMPLE = Path("/work/shared/fixtures/agentworld_release_sample")
FAST = {"wall_s": 1.0, "cpu_s": 1.0, "memory_mb": 512}


@pytest.fixture
def own_registry(monkeypatch):
    """Let a test register the sample from another root without clashing with ``catalog``."""
    entries = {
        k: e for k, e in registry._ENTRIES.items() if e.id not in ("harbor-tasks", "trap-box")
    }
    monkeypatch.setattr(registry, "_ENTRIES", entries)
    monkeypatch.setattr(registry, "_SPECS", {})


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """The sample imported and registered for this module only."""
    entries, specs, known = dict(registry._ENTRIES), dict(registry._SPECS), set(gym.registry)
    out = tmp_path_factory.mktemp("release")
    report = import_release(SAMPLE, ImportOptions(out=out, limits=FAST))
    yield out, report
    registry._ENTRIES.clear()
    registry._ENTRIES.update(entries)
    registry._SPECS.clear()
    registry._SPECS.update(specs)
    for gym_id in set(gym.registry) - known:
        del gym.registry[gym_id]


def _call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def test_sample_imports_into_its_own_catalog_root(catalog):
    out, report = catalog
    assert not report.errors
    entries = {e.id: e for e in read_index(out)}
    assert set(entries) == {"harbor-tasks", "trap-box"}
    assert entries["harbor-tasks"].gym_id == "AgentWorld/harbor-tasks-v0"
    assert entries["harbor-tasks"].n_tools == 5 and entries["harbor-tasks"].n_tasks == 3
    spec = load_spec("AgentWorld/harbor-tasks-v0")
    assert spec.taxonomy["l1"] == "L1-20 Communication & General Utilities"
    assert spec.taxonomy["l3"] == "Team Task Tracking"
    assert spec.provenance["release_env_id"] == "9900001"
    checkpoint = orjson.loads(
        (SAMPLE / "environment_mix/9900001_step4_checkpoint.json").read_bytes()
    )
    schemas = {
        t["name"]: t["parameters"] for t in checkpoint["data"]["ToolDesignAgent"]["tool_schemas"]
    }
    assert {t.name: t.parameters for t in spec.tools} == schemas  # the JSON Schemas as-is
    tool = next(t for t in spec.tools if t.name == "update-task-status")
    assert tool.implementation["function"] == "update_task_status"
    assert "def update_task_status(" in tool.implementation["source"]
    assert (out / "harbor-tasks" / "db" / "usage_log.json").is_file()


def test_every_harbor_task_replays_to_full_reward(catalog):
    _, report = catalog
    harbor = next(e for e in report.envs if e.release_id == "9900001")
    assert harbor.tasks == {f"harbor-tasks-q00{i}": "ok" for i in range(3)}
    results = validate(load_spec("harbor-tasks"))
    assert [r.reward for r in results] == [1.0, 1.0, 1.0]
    assert all(r.ok for r in results), [r.errors for r in results]


def test_gym_make_plays_an_imported_task(catalog):
    env = gym.make("AgentWorld/harbor-tasks-v0")
    obs, info = env.reset(options={"task_id": "harbor-tasks-q001"})
    assert "Mina" in obs and any(t["function"]["name"] == "search-tasks" for t in info["tools"])
    obs, *_ = env.step(_call("search-tasks", project_id="p2", assignee_id="u1", status="todo"))
    best = max(json.loads(obs)["data"], key=lambda t: t["points"])
    env.step(_call("update-task-status", task_id=best["id"], status="in_progress"))
    _, reward, terminated, _, info = env.step(f"I started {best['title']}.")
    assert terminated and reward == 1.0
    assert info["verification"]["judge"] == "replay"
    env.close()


def test_partial_credit_when_the_answer_or_the_state_is_wrong(catalog):
    env = AgentWorldEnv(load_spec("harbor-tasks"))
    env.reset(options={"task_id": "harbor-tasks-q001"})
    env.step(_call("update-task-status", task_id="t4", status="in_progress"))
    _, reward, *_ = env.step("Done.")  # right state, answer lacks the title
    assert reward == 0.5
    env.reset(options={"task_id": "harbor-tasks-q000"})
    env.step(_call("create-task", project_id="p1", title="noise"))
    _, reward, _, _, info = env.step("Lighthouse and Anchor App")  # an unasked-for write
    assert reward == 0.5
    assert "tasks: +1 -0" in info["verification"]["breakdown"][0]["reason"]


def test_the_clock_is_pinned_and_episodes_are_reproducible(catalog):
    env = AgentWorldEnv(load_spec("harbor-tasks"))
    prints = []
    for _ in range(2):
        env.reset(options={"task_id": "harbor-tasks-q002"})
        obs, *_ = env.step(_call("create-task", project_id="p1", title="Rotate", points=3))
        assert json.loads(obs)["created_at"] == "2026-08-05T09:01:00+00:00"
        prints.append(env.db.fingerprint())
    assert prints[0] == prints[1]


def test_check_env_passes(catalog):
    check_env(AgentWorldEnv(load_spec("harbor-tasks")), skip_render_check=True)


def test_cli_validate_reports_reproducible_tasks(catalog, capsys):
    assert main(["validate", "harbor-tasks", "-v"]) == 0
    out = capsys.readouterr().out
    assert "3/3 gold solutions replay to reward 1.0" in out


def test_cli_import_release(tmp_path, capsys, own_registry):
    code = main(["import-release", str(SAMPLE), "--only", "9900001", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "AgentWorld/harbor-tasks-v0" in out and "3/3 task chains reproduce" in out
    again = main(
        [
            "import-release",
            str(SAMPLE / "environment_mix"),
            "--only",
            "9900001",
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
    assert again == 0 and json.loads(capsys.readouterr().out)["envs"][0]["n_tools"] == 5
    assert [e.id for e in read_index(tmp_path)] == ["harbor-tasks"]
    assert not list(tmp_path.glob(".staging-*")) and not list(tmp_path.glob(".old-*"))


def test_non_reproducible_chain_is_marked_unverified(tmp_path, own_registry):
    release = tmp_path / "rel"
    shutil.copytree(SAMPLE, release)
    release.chmod(0o755)
    for path in release.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    questions = release / "environment_mix/questions/9900001.json"
    data = json.loads(questions.read_text())
    data["tasks"][2]["grading_rubric"]["verified_tool_chain"][1]["args"]["task_id"] = "t99"
    questions.write_text(json.dumps(data))
    report = import_release(release, ImportOptions(out=tmp_path / "out", only=["9900001"]))
    why = report.envs[0].tasks["harbor-tasks-q002"]
    assert "differs from the reference" in why and "NOT_FOUND" in why
    spec = load_spec("harbor-tasks")
    assert spec.task("harbor-tasks-q002").split == "unverified"


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("missing", "is not an Agent-World release"),
        ("file", "is a file"),
        ("empty", "is not an Agent-World release: expected environment_mix/index.json"),
        ("truncated", "9900001_step4_checkpoint.json: not valid JSON (line"),
        ("no_tools", "9900001_step4_checkpoint.json: data.ToolDesignAgent.tool_schemas must"),
        ("bad_index", "index.json: expected a JSON list"),
        ("no_db", "database folder of environment 9900001 not found"),
        ("bad_question", "questions/9900001.json: tasks[0].grading_rubric must be a dict"),
    ],
)
def test_bad_release_paths_fail_with_the_file_and_the_problem(tmp_path, damage, expected):
    release = tmp_path / "rel"
    if damage == "missing":
        release = tmp_path / "nothing-here"
        expected = "no such file or directory"
    elif damage == "file":
        release.write_text("hello")
    elif damage == "empty":
        release.mkdir()
        (release / "notes.txt").write_text("x")
    else:
        shutil.copytree(SAMPLE, release, copy_function=shutil.copyfile)
        for path in release.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        mix = release / "environment_mix"
        checkpoint = mix / "9900001_step4_checkpoint.json"
        if damage == "truncated":
            checkpoint.write_bytes(checkpoint.read_bytes()[:500])
        elif damage == "no_tools":
            checkpoint.write_text(json.dumps({"metadata": {}, "data": {"ToolDesignAgent": {}}}))
        elif damage == "bad_index":
            (mix / "index.json").write_text("{}")
        elif damage == "no_db":
            shutil.rmtree(mix / "9900001")
        elif damage == "bad_question":
            (mix / "questions/9900001.json").write_text(json.dumps({"tasks": [{"task": "x"}]}))
    with pytest.raises(ReleaseFormatError) as info:
        import_release(release, ImportOptions(out=tmp_path / "out", only=["9900001"]))
    assert expected in str(info.value)


def test_cli_names_the_damaged_file(tmp_path, capsys):
    assert main(["import-release", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "is not an Agent-World release" in capsys.readouterr().err


def test_unknown_only_id_and_the_core_catalog_are_refused(tmp_path):
    with pytest.raises(ReleaseFormatError, match="no environment 9900003. Did you mean"):
        import_release(SAMPLE, ImportOptions(out=tmp_path, only=["9900003"]))
    with pytest.raises(ConfigError, match="own catalog root"):
        import_release(SAMPLE, ImportOptions(out=DEFAULT_ROOT))


def test_slugs_are_readable():
    assert slugify("Harbor Tasks") == "harbor-tasks"
    assert slugify("Café Orders & Invoices") == "cafe-orders-invoices"
    assert slugify("Service v3") == "service-3"  # never parsed as a Gymnasium version


def test_an_imported_env_saves_and_reloads_whole(catalog, tmp_path):
    copy = EnvSpec.load(load_spec("harbor-tasks").save(tmp_path / "copy"))
    assert [r.reward for r in validate(copy)] == [1.0, 1.0, 1.0]
    assert main(["show", "harbor-tasks"]) == 0


class _Judge:
    """A stand-in LLM judge: meets every criterion that mentions a word of the answer."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], str]] = []

    def judge(self, instruction, answer, criteria, evidence=""):
        self.calls.append((answer, criteria, evidence))
        words = set(answer.lower().split())
        return [Verdict(bool(words & set(c.lower().split())), "stub") for c in criteria]


def test_the_prose_rubric_goes_to_the_llm_judge_when_configured(catalog):
    judge = _Judge()
    env = AgentWorldEnv(load_spec("harbor-tasks"), judge=judge)
    env.reset(options={"task_id": "harbor-tasks-q000"})
    env.step(_call("list-projects", status="active"))
    _, reward, _, _, info = env.step("lighthouse")
    assert reward == 0.5  # "names Lighthouse ..." met, "does not name Old Pier" not
    rows = info["verification"]["breakdown"]
    assert [r["by"] for r in rows] == ["llm", "llm", "replay", "replay"]
    assert all(r["weight"] == 0.0 for r in rows if r["by"] == "replay")
    answer, criteria, evidence = judge.calls[0]
    assert criteria[0] == "The answer names Lighthouse and Anchor App."
    assert "list-projects" in evidence and "State changes: no changes" in evidence


def test_masking_and_answer_facts():
    from agentworld_gym.release import expect

    assert doctest.testmod(expect).failed == 0
    assert expect.mask({"created_at": 1785920460, "due": "2026-09-02", "n": 1785920460}) == {
        "created_at": "<ts>",
        "due": "2026-09-02",
        "n": 1785920460,
    }
    assert expect.mask("task_5f2c9a1e0d4b4c8e") == "<id>" and expect.mask("t25") == "t25"
    assert expect.answer_facts({"error": {"code": "NOT_FOUND"}}) == []
    assert expect.answer_facts({"data": [{"id": f"x{i}"} for i in range(20)]}) == []
    assert expect.is_volatile("usage_log") and not expect.is_volatile("catalog")
    before = [{"id": "a", "v": 1}, {"id": "b", "v": 2}]
    after = [{"id": "b", "v": 2}, {"id": "a", "v": 3, "at": "2026-08-05T09:01:00Z"}]
    assert expect.doc_delta(before, after) == {
        "added": [{"at": "<ts>", "id": "a", "v": 3}],
        "removed": [{"id": "a", "v": 1}],
    }
    assert expect.doc_delta(before, list(reversed(before))) is None


def test_another_process_finds_the_catalog_through_the_environment(catalog):
    out, _ = catalog
    script = (
        "import json, gymnasium as gym, agentworld_gym\n"
        "env = gym.make('AgentWorld/harbor-tasks-v0')\n"
        "env.reset(options={'task_id': 'harbor-tasks-q000'})\n"
        "env.step(json.dumps({'name': 'list-projects', 'arguments': {'status': 'active'}}))\n"
        "print(env.step('Lighthouse and Anchor App')[1])\n"
    )
    env = {**os.environ, "AGENTWORLD_CATALOGS": str(out)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "1.0"


def test_ids_stamped_from_the_clock_are_masked_and_new_logs_ignored():
    import datetime as dt

    from agentworld_gym.database import Database
    from agentworld_gym.release.expect import ID, Masker, state_delta

    clock = "2026-08-05T09:00:00Z"
    ms = int(dt.datetime(2026, 8, 5, 9, 1, tzinfo=dt.UTC).timestamp() * 1000)
    near = Masker.around(clock)
    assert near(f"evt-{ms}") == ID and near(f"evt_{ms // 1000}-a1") == ID
    assert near("evt-1234567890123") == "evt-1234567890123"  # 2009: not this episode's clock
    before = Database({}, documents={"events": []})
    after = Database({}, documents={"events": [], "request_log": [{"at": 1}]})
    assert state_delta(before, after, masker=near) == {}  # a log file a tool created
