"""Rubric checks and the sandboxed script verifier."""

from __future__ import annotations

import pytest

from agentworld_gym.database import Database
from agentworld_gym.errors import VerifierError
from agentworld_gym.verifiers import CallRecord, Episode, RubricVerifier, build_verifier
from agentworld_gym.verifiers.judge import Verdict


@pytest.fixture
def episode():
    db = Database(
        {
            "items": [
                {"id": "a", "status": "open", "tags": ["x"], "n": 2.5},
                {"id": "b", "status": "done", "tags": [], "n": 7},
            ]
        }
    )
    final = db.fork()
    final.put("items", {"id": "a", "status": "done", "tags": ["x", "y"], "n": 2.5})
    calls = [CallRecord("set", {"id": "a", "status": "done"}, True), CallRecord("get", {}, False)]
    return Episode(db, final, "Total: 1,234.5 points for **Alpha**", calls, "Do it")


@pytest.mark.parametrize(
    ("check", "met"),
    [
        ({"type": "answer_contains", "value": ["alpha", "points"]}, True),
        ({"type": "answer_contains", "value": "Alpha", "case_sensitive": True}, True),
        ({"type": "answer_contains", "value": "beta"}, False),
        ({"type": "answer_equals", "value": 1234.5}, True),
        ({"type": "answer_equals", "value": 1234, "tolerance": 0.4}, False),
        ({"type": "answer_equals", "value": 1234, "tolerance": 0.5}, True),
        (
            {
                "type": "record",
                "collection": "items",
                "key": "a",
                "path": "status",
                "equals": "done",
            },
            True,
        ),
        (
            {"type": "record", "collection": "items", "key": "a", "path": "tags", "contains": "y"},
            True,
        ),
        ({"type": "record", "collection": "items", "key": "zz", "exists": False}, True),
        (
            {"type": "record", "collection": "items", "key": "a", "path": "tags.5", "exists": True},
            False,
        ),
        ({"type": "count", "collection": "items", "where": {"status": "done"}, "equals": 2}, True),
        (
            {
                "type": "count",
                "collection": "items",
                "where": {"tags": {"$contains": "x"}, "n": {"$in": [2.5, 3]}},
                "equals": 1,
            },
            True,
        ),
        (
            {
                "type": "count",
                "collection": "items",
                "where": {"status": {"$ne": "open"}},
                "min": 3,
            },
            False,
        ),
        ({"type": "tool_called", "name": "set", "arguments": {"id": "a"}}, True),
        ({"type": "tool_called", "name": "get"}, False),  # failed calls do not count
    ],
)
def test_checks(episode, check, met):
    result = RubricVerifier([{"text": "c", "check": check}]).verify(episode)
    assert result.breakdown[0]["met"] is met
    assert result.reward == float(met)


def test_weighted_reward_and_unjudged_prose(episode):
    rubric = RubricVerifier(
        [
            {
                "text": "state",
                "weight": 3,
                "check": {
                    "type": "record",
                    "collection": "items",
                    "key": "a",
                    "path": "status",
                    "equals": "done",
                },
            },
            {"text": "answer", "weight": 1, "check": {"type": "answer_contains", "value": "zzz"}},
            {"text": "the tone is polite"},
        ]
    )
    result = rubric.verify(episode)
    assert result.reward == pytest.approx(0.75)
    assert result.breakdown[2]["by"] == "unjudged" and result.breakdown[2]["met"] is None


def test_llm_judge_decides_prose_criteria(episode):
    class FakeJudge:
        def judge(self, instruction, answer, criteria, evidence=""):
            assert instruction == "Do it" and "set(" in evidence
            return [Verdict(met="polite" in c, reason="fake") for c in criteria]

    rubric = RubricVerifier([{"text": "polite"}, {"text": "rude"}], judge=FakeJudge())
    result = rubric.verify(episode)
    assert result.reward == 0.5 and [b["by"] for b in result.breakdown] == ["llm", "llm"]


@pytest.mark.parametrize(
    "definition",
    [
        {"type": "rubric", "criteria": []},
        {"type": "rubric", "criteria": [{"text": "x", "check": {"type": "nope"}}]},
        {"type": "rubric", "criteria": [{"text": "x", "check": {"type": "record"}}]},
        {"type": "script", "source": "print('no verify')"},
        {"type": "magic"},
    ],
)
def test_bad_definitions_raise_clearly(definition):
    with pytest.raises(VerifierError):
        build_verifier(definition)


def _script(body: str, timeout_s: float = 2.0):
    source = "def verify(initial_state, final_state, answer):\n" + "\n".join(
        "    " + line for line in body.splitlines()
    )
    return build_verifier({"type": "script", "source": source, "timeout_s": timeout_s})


def test_script_sees_initial_final_state_and_answer(episode):
    v = _script(
        "a0 = [i for i in initial_state['items'] if i['id'] == 'a'][0]\n"
        "a1 = [i for i in final_state['items'] if i['id'] == 'a'][0]\n"
        "return a0['status'] == 'open' and a1['status'] == 'done' and 'Alpha' in answer"
    )
    result = v.verify(episode)
    assert result.reward == 1.0 and result.details["isolation"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("while True:\n    pass", "timed out"),
        ("x = bytearray(4 * 1024**3)\nreturn True", "memory"),
        (
            "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)\nreturn True",
            "network",
        ),
        ("open('/tmp/agentworld_pwned', 'w').write('x')\nreturn True", ""),
        ("import os\nos.system('touch /tmp/agentworld_pwned2')\nreturn True", ""),
        ("raise KeyError('missing')", "KeyError"),
        ("return 'yes'", "expected a bool or a number"),
        ("return 1.5", "expected a bool or a number"),
    ],
)
def test_misbehaving_scripts_give_zero_and_a_reason(episode, body, reason, tmp_path):
    import os

    result = _script(body, timeout_s=1.5).verify(episode)
    assert result.reward == 0.0
    assert reason in result.details["error"]
    assert not os.path.exists("/tmp/agentworld_pwned")
    assert not os.path.exists("/tmp/agentworld_pwned2")


def test_prose_criteria_reach_the_judge_or_say_they_need_one(toy_spec):
    from types import SimpleNamespace

    from agentworld_gym.env import AgentWorldEnv

    task = toy_spec.task("count-open")
    task.verifier["criteria"].append({"text": "Explains why politely", "weight": 1})
    env = AgentWorldEnv(toy_spec, split="all")
    _, info = env.reset(options={"task_id": "count-open"})
    assert info["needs_judge"] is True
    *_, info = env.step("2")
    assert info["verification"]["needs_judge"] and not info["verification"]["success"]

    class Judge:
        def judge(self, instruction, answer, criteria, evidence=""):
            return [SimpleNamespace(met=True, reason="polite") for _ in criteria]

    judged = AgentWorldEnv(toy_spec, split="all", judge=Judge())
    _, info = judged.reset(options={"task_id": "count-open"})
    assert "needs_judge" not in info
    *_, info = judged.step("2")
    assert info["verification"]["success"]
    assert [b["by"] for b in info["verification"]["breakdown"]][-1] == "llm"


def test_a_declared_answer_field_may_be_submitted_structured(toy_spec):
    import json

    from agentworld_gym.env import AgentWorldEnv

    task = toy_spec.task("count-open")
    task.verifier["criteria"][0]["check"] = {
        "type": "answer",
        "expect": [{"value": 2, "name": "open_items"}],
    }
    env = AgentWorldEnv(toy_spec, split="all")
    _, info = env.reset(options={"task_id": "count-open"})
    assert info["answer_fields"] == ["open_items"]

    def submit(answer: str, fields: dict | None = None) -> dict:
        env.reset(options={"task_id": "count-open"})
        args = {"answer": answer, **({"fields": fields} if fields is not None else {})}
        *_, info = env.step(json.dumps({"name": "submit", "arguments": args}))
        return info["verification"]

    assert submit("see fields", {"open_items": 2})["success"]
    assert submit("see fields", {"open_items": "two"})["success"]
    assert not submit("see fields", {"open_items": "0 1 2 3"})["success"]
    assert not submit("see fields", {"open_items": 3})["success"]
    assert submit("There are two open items.")["success"]  # free text still works
