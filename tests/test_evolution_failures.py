"""Failure classification on constructed trajectories (one per class), diagnosis and report."""

from __future__ import annotations

import dataclasses

import orjson
import pytest
from toy_env import make_spec

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.evolution.diagnosis import diagnose
from agentworld_gym.evolution.episodes import EpisodeRecord, run_episode
from agentworld_gym.evolution.failures import FailureClass, classify_failure
from agentworld_gym.evolution.llm_diagnosis import LLMDiagnoser
from agentworld_gym.evolution.report import write_diagnosis_report

GID = "AgentWorld/toy-v0"
WRITES = frozenset({"set_status", "create_item", "crash_after_write"})


def ok(name):
    return {"name": name, "ok": True, "error": None}


def err(name, code):
    return {"name": name, "ok": False, "error": code}


def rubric(state: bool, answer: bool, called: bool):
    """The breakdown of toy task close-i1: record check, answer check, tool_called check."""
    rows = [
        ("i1 is done", state),
        ("answer gives 3 points", answer),
        ("set_status was used", called),
    ]
    return {
        "reward": 0.0,
        "verifier": "rubric",
        "breakdown": [{"criterion": t, "met": m, "by": "rule"} for t, m in rows],
    }


def record(steps, verification=None, truncated=False, reward=0.0, task_id="close-i1"):
    return EpisodeRecord(
        env_id=GID,
        task_id=task_id,
        l1="L1-07",
        reward=reward,
        success=reward >= 1.0,
        tool_results=steps,
        final_answer=None if truncated else "answer",
        truncated=truncated,
        verification=verification if verification is not None else rubric(False, False, False),
        turns=len(steps),
    )


@pytest.fixture
def tasks():
    spec = make_spec()
    prose = dataclasses.replace(
        spec.task("close-i1"),
        id="prose",
        verifier={"type": "rubric", "criteria": [{"text": "the answer is polite"}]},
    )
    return {t.id: t for t in [*spec.tasks, prose]}


CASES = {
    FailureClass.NO_TOOL_USE: dict(steps=[[]]),
    FailureClass.MALFORMED_CALL: dict(steps=[[err("", "malformed_action")], []]),
    FailureClass.UNKNOWN_TOOL: dict(steps=[[err("get_itme", "unknown_tool")], []]),
    FailureClass.INVALID_ARGUMENTS: dict(
        steps=[[ok("get_item")], [err("set_status", "invalid_arguments")], []]
    ),
    FailureClass.TOOL_ERROR_UNRECOVERED: dict(
        steps=[[err("get_item", "tool_execution_error")], [ok("set_status")], []]
    ),
    FailureClass.BUDGET_EXHAUSTED: dict(steps=[[ok("get_item")]] * 5, truncated=True),
    FailureClass.MISSING_STEP: dict(
        steps=[[ok("get_item")], []], verification=rubric(False, True, False)
    ),
    FailureClass.WRONG_VALUE: dict(
        steps=[[ok("set_status")], [ok("get_item")], []], verification=rubric(False, True, True)
    ),
    FailureClass.WRONG_ANSWER: dict(
        steps=[[ok("set_status")], [ok("get_item")], []], verification=rubric(True, False, True)
    ),
    FailureClass.JUDGED_UNMET: dict(
        steps=[[ok("set_status")], [ok("get_item")], []],
        task_id="prose",
        verification={"reward": 0.0, "breakdown": [{"criterion": "x", "met": False, "by": "llm"}]},
    ),
    FailureClass.SCRIPT_FAILED: dict(
        steps=[[ok("create_item")], []],
        task_id="script-new",
        verification={"reward": 0.0, "breakdown": [], "verifier": "script"},
    ),
    FailureClass.VERIFIER_ERROR: dict(
        steps=[[ok("create_item")], []],
        task_id="script-new",
        verification={"reward": 0.0, "verifier": "script", "error": "script timed out"},
    ),
    FailureClass.OTHER: dict(
        steps=[[ok("set_status")], [ok("get_item")], []],
        reward=0.5,
        verification=rubric(True, True, True),
    ),
}


@pytest.mark.parametrize("expected", list(CASES), ids=[c.value for c in CASES])
def test_each_failure_class_is_recognised(expected, tasks):
    case = dict(CASES[expected])
    rec = record(**case)
    diag = classify_failure(rec, tasks[rec.task_id], WRITES)
    assert diag is not None and diag.primary is expected, diag
    assert diag.labels[0] is expected


def test_every_class_has_a_case():
    assert set(CASES) == set(FailureClass)


def test_recovered_errors_do_not_count_and_successes_are_not_failures(tasks):
    steps = [[err("set_status", "invalid_arguments")], [ok("set_status")], [ok("get_item")], []]
    rec = record(steps, verification=rubric(True, False, True))
    diag = classify_failure(rec, tasks["close-i1"], WRITES)
    assert diag.primary is FailureClass.WRONG_ANSWER
    assert FailureClass.INVALID_ARGUMENTS not in diag.labels
    assert diag.tools == ["get_item"]  # the read tool behind the wrong answer
    won = dataclasses.replace(rec, reward=1.0, success=True)
    assert classify_failure(won, tasks["close-i1"], WRITES) is None


def test_missing_step_names_the_tools_never_called(tasks):
    rec = record(**CASES[FailureClass.MISSING_STEP])
    diag = classify_failure(rec, tasks["close-i1"], WRITES)
    assert diag.tools[0] == "set_status"
    assert diag.labels == [FailureClass.MISSING_STEP, FailureClass.WRONG_VALUE]


class _Scripted:
    """A policy that plays a fixed list of assistant messages."""

    def __init__(self, messages):
        self.messages = list(messages)

    def chat(self, messages, tools=None, **sampling):
        return self.messages.pop(0)


def test_run_episode_keeps_the_trajectory_and_classifies_from_the_real_env():
    env = AgentWorldEnv(make_spec(), split="all")
    call = {"id": "c1", "type": "function", "function": {"name": "set_status", "arguments": "{}"}}
    policy = _Scripted(
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "assistant",
                "content": '<tool_call>{"name": "get_item", "arguments": '
                '{"item_id": "i1"}}</tool_call>',
            },
            {"role": "assistant", "content": "It has 4 points."},
        ]
    )
    rec = run_episode(env, policy, "close-i1")
    assert rec.turns == 3 and rec.final_answer == "It has 4 points." and not rec.truncated
    assert rec.tool_results[0] == [
        {"name": "set_status", "ok": False, "error": "invalid_arguments"}
    ]
    assert rec.messages[-1] == {"role": "assistant", "content": "It has 4 points."}
    assert len(rec.verification["breakdown"]) == 3 and rec.reward == 0.0
    diag = classify_failure(rec, env.spec_data.task("close-i1"), WRITES)
    assert diag.primary is FailureClass.INVALID_ARGUMENTS
    assert set(diag.labels) >= {FailureClass.WRONG_VALUE, FailureClass.WRONG_ANSWER}
    again = EpisodeRecord.from_dict(orjson.loads(orjson.dumps(rec.to_dict())))
    assert again == rec


def _specs():
    spec = make_spec()
    other = dataclasses.replace(spec, id="toy2")
    return {GID: spec, "AgentWorld/toy2-v0": other}


def test_weakness_score_follows_the_documented_formula():
    fail = record(**CASES[FailureClass.WRONG_ANSWER])
    win = dataclasses.replace(fail, reward=1.0, success=True)
    other = [dataclasses.replace(win, env_id="AgentWorld/toy2-v0", l1="L1-04")] * 4
    records = [fail, fail, fail, win, *other]
    diag = diagnose(records, _specs(), weak_env_count=1, prior_strength=2.0, evidence_scale=2.0)
    p0 = 3 / 8
    rate = (3 + 2 * p0) / (4 + 2)
    toy = next(e for e in diag.envs if e.env_id == GID)
    assert toy.score == pytest.approx(rate * 4 / 6)
    assert diag.weak_envs == [GID]  # toy2 never failed: never weak
    assert diag.global_failure_rate == pytest.approx(p0)
    g = diag.guidelines[GID]
    assert g.env_id == "toy" and "get_item" in g.focus_tools
    assert g.distractors >= 1 and g.program_share > 0.2
    assert g.walk_length == 3  # median failed chain 2, +1 because the env is partly solved


def test_few_episodes_rank_below_consistent_evidence():
    one = record(**CASES[FailureClass.WRONG_ANSWER])
    many = [dataclasses.replace(one, env_id="AgentWorld/toy2-v0")] * 3
    win = dataclasses.replace(many[0], reward=1.0, success=True)
    diag = diagnose([one, *many, win], _specs(), weak_env_count=2)
    assert diag.weak_envs == ["AgentWorld/toy2-v0", GID]


def test_report_json_markdown_and_plots(tmp_path):
    records = [record(**CASES[c]) for c in CASES if c is not FailureClass.JUDGED_UNMET]
    diag = diagnose(records, _specs())
    md = write_diagnosis_report(diag, tmp_path, plots=True)
    text = md.read_text()
    assert "# Diagnosis" in text and "weak_envs.png" in text and "wrong_answer" in text
    for name in ("success_by_category", "failure_classes", "weak_envs"):
        assert (tmp_path / "plots" / f"{name}.png").stat().st_size > 1000
    data = orjson.loads((tmp_path / "diagnosis.json").read_bytes())
    assert data["weak_envs"] == [GID] and len(data["failures"]) == len(records)
    assert data["guidelines"][GID]["focus_tools"]


class _Diagnostician:
    def __init__(self, reply):
        self.reply = reply
        self.prompts = []

    def chat(self, messages, tools=None, **sampling):
        self.prompts.append(messages[-1]["content"])
        return {"role": "assistant", "content": self.reply}


def test_llm_diagnosis_refines_and_survives_nonsense():
    rec = record(**CASES[FailureClass.WRONG_ANSWER])
    diag = diagnose([rec], _specs())
    rules = diag.guidelines[GID]
    reply = (
        'Sure: ```json\n{"focus_tools": ["get_item", "no_such_tool"], "patterns": ["count"], '
        '"walk_length": 9, "writes": 1, "distractors": 2, "program_share": 0.5, '
        '"text": "Ask for counts over near-identical items."}\n```'
    )
    llm = _Diagnostician(reply)
    spec = _specs()[GID]
    stats = diag.envs[0]
    better = LLMDiagnoser(llm).refine(rules, stats, diag.tools, [rec], spec)
    assert better.focus_tools == ["get_item"] and better.patterns == ["count"]
    assert better.walk_length == 6 and better.distractors == 2 and better.program_share == 0.5
    assert "near-identical" in better.text and "close-i1" in llm.prompts[0]
    same = LLMDiagnoser(_Diagnostician("no idea")).refine(rules, stats, diag.tools, [rec], spec)
    assert same.focus_tools == rules.focus_tools and "unusable" in same.notes[-1]
