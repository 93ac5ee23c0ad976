"""LLM-written Python task programs: prompt, policy, sandboxed execution, derived verifier."""

from __future__ import annotations

import os
import time

import pytest
from test_synth_tasks import make_op_env

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.replay import replay_gold, score_answer
from agentworld_gym.synthesis.tasks.gate.accept import judge, verdict
from agentworld_gym.synthesis.tasks.model import build_model
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.llm.execute import ExecLimits, ProgramExecutor, Rejected
from agentworld_gym.synthesis.tasks.sample.llm.policy import check
from agentworld_gym.synthesis.tasks.sample.llm.writer import (
    Draft,
    ProgramWriter,
    guide,
    parse_reply,
    prompt,
)
from agentworld_gym.synthesis.tasks.sample.templates.shapes import Knobs

REQUEST = (
    "For every active project, hand each open task that is not assigned to the project's "
    "owner over to the owner. How many did you hand over, and how many points do they carry?"
)
GOOD = """def program(call):
    moved = 0
    points = 0
    for proj in call("listProjects"):
        if proj["status"] != "active":
            continue
        for t in call("listProjectTasks", projectId=proj["id"], status="open"):
            if t["assignee"] != proj["owner"]:
                call("updateTask", taskId=t["id"], assignee=proj["owner"])
                moved += 1
                points += t["points"]
    return {"handed_over": moved, "points": points}
"""
RAISES = 'def program(call):\n    for t in call("listTasks"):\n        x = 1 / 0\n    return x\n'
LOOPS = "def program(call):\n    n = 0\n    while True:\n        n += 1\n"
LOOPS_CALLING = 'def program(call):\n    while True:\n        call("listTasks")\n'
SOCKET = (
    "import socket\n"
    "def program(call):\n"
    "    s = socket.create_connection(('example.com', 80))\n"
    "    return [t['id'] for t in call('listTasks')]\n"
)
PASSWD = (
    "def program(call):\n"
    "    rows = [t for t in call('listTasks') if t['status'] == 'open']\n"
    "    return open('/etc/passwd').read()\n"
)
FLAT = 'def program(call):\n    return len(call("listTasks"))\n'
ESCAPE = """def program(call):
    w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "catch_warnings"][0]
    builtins = w.__init__.__globals__["sys"].modules["builtins"]
    return builtins.__import__("socket").create_connection(("1.1.1.1", 80), timeout=1)
"""
VOLATILE = (
    "def program(call):\n"
    "    made = [call('createTask', projectId=p['id'], title='Kickoff') for p in"
    " call('listProjects') if p['status'] == 'archived']\n"
    "    return made[0]['id']\n"
)


def reply(source: str, request: str = REQUEST) -> str:
    return f"Sure! Here is a task.\n\nREQUEST: {request}\n```python\n{source}```\nHope it helps."


class ScriptedModel:
    """Answers every prompt with the same text and records the prompts and sampling."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.prompts: list[str] = []
        self.sampling: list[dict] = []

    def chat(self, messages, tools=None, **sampling):
        self.prompts.append(messages[-1]["content"])
        self.sampling.append(sampling)
        return {"role": "assistant", "content": self.text}


@pytest.fixture(scope="module")
def tracker():
    spec = make_op_env()
    return spec, build_model(spec), Runner(spec)


def write(tracker, text: str, task_id: str = "tracker-cand-program-0", **kw):
    spec, model, runner = tracker
    writer = ProgramWriter(model, runner, ScriptedModel(text), seed=0, **kw)
    return writer, writer.candidate(task_id, Knobs(max_calls=19))


# -- (1) a good program -------------------------------------------------------------------------
def test_good_program_becomes_a_task_that_replays_to_one_and_is_not_trivial(tracker):
    spec, _, runner = tracker
    start = time.perf_counter()
    _, cand = write(tracker, reply(GOOD))
    assert not isinstance(cand, str), cand
    assert time.perf_counter() - start < 5
    task = cand.task
    # p2 (owner bob): t02 (cy) -> bob; p4 (owner dee): t08 (cy) -> dee; p1's open tasks are ada's
    assert task.reference_answer == "handed over: 2; points: 7"
    names = [c["name"] for c in task.gold["calls"]]
    assert names == ["listProjects"] + ["listProjectTasks", "listProjectTasks"] + [
        "updateTask",
        "listProjectTasks",
        "updateTask",
    ]
    assert task.gold["program"] == GOOD
    assert task.provenance["method"] == "llm-program"
    assert task.difficulty["writes"] == 2
    assert {"loop", "branch", "conditional write"} <= set(task.difficulty["control_flow"])
    judge([cand], runner.base)
    assert verdict(cand) is None, cand.rewards
    spec = make_op_env()
    spec.tasks = [task]
    env = AgentWorldEnv(spec, split="all")
    assert replay_gold(env, task).ok
    assert score_answer(env, task, "") < 0.5
    assert score_answer(env, task, task.reference_answer) < 0.5  # right words, no writes


def test_the_same_seed_gives_the_same_task(tracker):
    _, a = write(tracker, reply(GOOD))
    _, b = write(tracker, reply(GOOD))
    assert a.task == b.task


def test_prompt_shows_tools_state_and_guidelines_and_is_seeded(tracker):
    _, model, runner = tracker
    writer, _ = write(tracker, reply(GOOD))
    text, sampling = writer.backend.prompts[0], writer.backend.sampling[0]
    assert "updateTask [write]" in text and '"enum":["open","done","blocked"]' in text
    assert 'e.g. call("listProjects") -> [{"id":"p1"' in text
    assert "tasks (key id, 14 records); references: project_id -> projects" in text
    assert "def program(call):" in text and "REQUEST:" in text
    again, _ = write(tracker, reply(GOOD))
    assert again.backend.prompts[0] == text and again.backend.sampling[0] == sampling
    g = guide(model, Knobs(), 0, "tracker-cand-program-0")
    assert prompt(model, g) != prompt(model, guide(model, Knobs(), 1, "tracker-cand-program-0"))


# -- (2)-(6) bad programs are rejected with a reason, never a crash --------------------------------
@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (RAISES, "llm-program: raised ZeroDivisionError"),
        (LOOPS, "llm-program: timed out"),
        (LOOPS_CALLING, "llm-program: too many tool calls"),
        (SOCKET, "llm-program: unsafe program: imports 'socket'"),
        (PASSWD, "llm-program: unsafe program: uses 'open'"),
        (FLAT, "llm-program: no control flow (no loop, comprehension or branch)"),
        (VOLATILE, "llm-program: volatile: depends on generated ids or the clock"),
        (
            "def program(call):\n    return {t['id'] for t in call('listTasks')}\n",
            "llm-program: answer is not JSON-serialisable",
        ),
        (
            "def program(call):\n    return [call('closeTask', id=t) for t in 'ab']\n",
            "llm-program: tool call failed (ToolNotFound)",
        ),
    ],
)
def test_bad_programs_are_rejected_with_a_reason(tracker, source, reason):
    writer, cand = write(tracker, reply(source), limits=ExecLimits(step_s=0.5, total_s=5))
    assert isinstance(cand, str) and cand.startswith(reason), cand
    assert writer.rejected == {cand: 1}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I am sorry, I cannot help with that. {]][", "no def program(call) in the reply"),
        ("```python\ndef program(call):\n    return 1\n```", "no request in the reply"),
        (reply("def program(call)\n    return 1\n"), "program does not parse"),
        (reply(GOOD, "Use updateTask on every task of listProjects."), "request names a tool"),
    ],
)
def test_garbage_replies_are_rejected(tracker, text, reason):
    _, cand = write(tracker, text)
    assert isinstance(cand, str) and cand.startswith(f"llm-program: {reason}"), cand


def test_a_backend_that_fails_is_a_reason_too(tracker):
    class Down:
        def chat(self, *a, **k):
            raise ConnectionError("refused")

    _, model, runner = tracker
    out = ProgramWriter(model, runner, Down(), 0).candidate("t", Knobs())
    assert out == "llm-program: backend failed (ConnectionError)"


# -- the layers under the policy ----------------------------------------------------------------
def test_the_sandbox_holds_where_the_policy_is_bypassed(tracker):
    """Without the policy check a program still finds no open() nor imports in its builtins,
    and one that climbs out of them to the real ones still finds no network."""
    _, _, runner = tracker
    ex = ProgramExecutor(runner, ExecLimits(step_s=1.0, total_s=5))
    cases = {
        "def program(call):\n    return open('/etc/passwd').read()\n": "raised NameError",
        "import socket\ndef program(call):\n    return 1\n": "raised ImportError",
        "def program(call):\n    return __import__('os').listdir('/')\n": "raised ImportError",
        ESCAPE: "tried to use the network",
        "def program(call):\n    return 'x' * (1 << 30)\n": "exceeded the memory limit",
    }
    for source, reason in cases.items():
        out = ex.run(source, "t", 5)
        assert isinstance(out, Rejected) and out.reason == reason, (source, out)


def test_execution_records_the_trace_and_is_checked_for_determinism(tracker):
    _, _, runner = tracker
    out = ProgramExecutor(runner).run(GOOD, "t", 19)
    assert not isinstance(out, Rejected), out
    assert out.answer == {"handed_over": 2, "points": 7}
    assert out.calls[3] == {"name": "updateTask", "arguments": {"taskId": "t02", "assignee": "bob"}}
    assert out.final.get("tasks", "t08")["assignee"] == "dee"
    assert runner.base.get("tasks", "t08")["assignee"] == "cy"  # the base is untouched
    assert out.isolation.get("network") in ("namespace", None) or out.isolation


def test_policy_reports_control_flow():
    assert check(GOOD).control_flow == ["loop", "branch", "aggregate"]
    assert check(FLAT).ok is False
    assert check("def program(call):\n    return getattr(call, 'x')\n").reason == (
        "unsafe program: uses 'getattr'"
    )


def test_parse_reply_variants():
    plain = parse_reply(f"**Request:** {REQUEST}\n\ndef program(call):\n    return 1\n")
    assert plain == Draft(REQUEST, "def program(call):\n    return 1\n")
    const = parse_reply(f'```py\nREQUEST = "{REQUEST}"\ndef program(call):\n    return 1\n```')
    assert isinstance(const, Draft) and const.request == REQUEST


# -- the pipeline -------------------------------------------------------------------------------
def test_pipeline_keeps_llm_programs_and_reports_rejected_drafts(monkeypatch):
    from agentworld_gym.synthesis.tasks import synthesize_tasks
    from agentworld_gym.synthesis.tasks.pipeline import EnvSynthesizer, TaskSynthConfig
    from agentworld_gym.synthesis.tasks.request import render

    monkeypatch.setattr(render, "paraphrase", lambda b, text, *a: text)
    spec = make_op_env()
    spec.tasks = synthesize_tasks(spec, n=6, seed=3, llm=ScriptedModel(reply(GOOD)))
    written = [t for t in spec.tasks if t.provenance.get("method") == "llm-program"]
    assert len(written) == 1  # the same program twice is a duplicate
    env = AgentWorldEnv(spec, split="all")
    for task in spec.tasks:
        assert replay_gold(env, task).ok, task.id
        assert score_answer(env, task, "") < 0.5

    spec = make_op_env()
    cfg = TaskSynthConfig(n=6, seed=3)
    _, report = EnvSynthesizer(spec, cfg, ScriptedModel("no code today")).run()
    assert report.rejected["llm-program: no def program(call) in the reply"] >= 1


# -- the embedded model -------------------------------------------------------------------------
@pytest.mark.skipif(
    not os.environ.get("AGENTWORLD_EMBEDDED_TESTS"),
    reason="the embedded model needs minutes per reply on a small CPU; "
    "set AGENTWORLD_EMBEDDED_TESTS=1 to run",
)
def test_embedded_model_is_accepted_or_rejected_cleanly(tracker):
    from agentworld_gym.llm import LLMConfig, make_backend

    pytest.importorskip("transformers")
    backend = make_backend(LLMConfig(model="smollm2-135m-instruct", backend="embedded"))
    _, model, runner = tracker
    writer = ProgramWriter(model, runner, backend, seed=0, max_tokens=64)
    out = writer.candidate("tracker-cand-program-0", Knobs(max_calls=19))
    assert isinstance(out, str) and out.startswith("llm-program: ") or out.task.kind == "program"


# -- the derived verifier -----------------------------------------------------------------------
CREATE = """def program(call):
    made = 0
    for p in call("listProjects"):
        if p["status"] == "archived" or p["owner"] == "dee":
            call("createTask", projectId=p["id"], title="Wrap-up review", status="open")
            made += 1
    return made
"""
PICK = """def program(call):
    counts = {}
    for t in call("listTasks"):
        if t["status"] == "open":
            counts[t["project_id"]] = counts.get(t["project_id"], 0) + 1
    best = max(sorted(counts), key=lambda p: counts[p])
    return {"project": call("getProject", projectId=best)["name"], "open": counts[best]}
"""


def _kept(tracker, source: str, request: str):
    spec, _, runner = tracker
    _, cand = write(tracker, reply(source, request))
    assert not isinstance(cand, str), cand
    judge([cand], runner.base)
    assert verdict(cand) is None, cand.rewards
    fresh = make_op_env()
    cand.task.id = "tracker-p001"  # renamed as the pipeline does: other generated ids
    fresh.tasks = [cand.task]
    return cand.task, AgentWorldEnv(fresh, split="all")


def test_created_records_are_checked_without_their_generated_ids(tracker):
    request = (
        'Add an open "Wrap-up review" task to every archived project and to every project '
        "that dee owns. How many did you add?"
    )
    task, env = _kept(tracker, CREATE, request)
    assert "'vol':['id']" in task.verifier["source"]
    assert replay_gold(env, task).ok  # under another task id: other ids, same records
    assert task.difficulty["pattern"] == "create"


def test_any_change_outside_the_program_scores_zero(tracker):
    from agentworld_gym.verifiers import build_verifier
    from agentworld_gym.verifiers.base import Episode

    _, _, runner = tracker
    task, _ = _kept(tracker, GOOD, REQUEST)
    verifier = build_verifier(task.verifier)
    extra = {"name": "updateTask", "arguments": {"taskId": "t00", "title": "Renamed"}}
    for calls, want in ((task.gold["calls"], 1.0), ([*task.gold["calls"], extra], 0.0)):
        final = runner.run(calls, "x").db
        ep = Episode(runner.base, final, task.reference_answer, [], task.instruction)
        assert verifier.verify(ep).reward == want
    half = runner.run(task.gold["calls"][:4], "x").db  # one of the two hand-overs
    ep = Episode(runner.base, half, "I handed over 2 tasks worth 7 points", [], "")
    # half the hand-overs done: their share, and no credit for reporting work not done
    assert verifier.verify(ep).reward == pytest.approx(0.7 * 1 / 2)


def test_a_string_answer_must_be_chosen_not_dumped(tracker):
    request = "Which project has the most open tasks, and how many open tasks does it have?"
    task, env = _kept(tracker, PICK, request)
    assert task.reference_answer == "project: Project Apollo; open: 3"
    assert task.difficulty["answer_type"] == "mixed"
    assert score_answer(env, task, "Project Apollo leads with 3 open tasks.") == 1.0
    assert score_answer(env, task, "Project Apollo has 2.") == 0.5
    dump = "Project Apollo: 3, Project Borealis: 2, Project Draco: 1"
    assert score_answer(env, task, dump) == 0.0


def test_a_request_that_gives_away_the_answer_is_rejected(tracker):
    request = "Project Apollo has 3 open tasks: is that the project with the most, and how many?"
    _, cand = write(tracker, reply(PICK, request))
    assert cand == "llm-program: request gives away the answer"
