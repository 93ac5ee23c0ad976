"""τ²-bench domains through Tau2Env, on a tiny domain in tau2's layout.

``tests/fixtures/tau2_tiny`` is a tau2-bench checkout in miniature: tau2's own core modules
(environment, toolkit, task and message models, the DB/action/communicate evaluators) copied
verbatim, and a three-tool shop domain written in tau2's layout. So these tests run tau2's real
evaluators and call path with no checkout and no network. Set ``TAU2_CHECKOUT`` to a real
checkout to also replay retail's gold actions (in a subprocess: one tau2 per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

pytest.importorskip("loguru", reason="the tau2 extra is not installed")
pytest.importorskip("docstring_parser", reason="the tau2 extra is not installed")

from agentworld_gym.tau2 import Tau2ScriptedUser, gym_id, register  # noqa: E402
from agentworld_gym.tau2.env import Tau2Env  # noqa: E402
from agentworld_gym.tau2.evaluation import evaluate  # noqa: E402
from agentworld_gym.tau2.prompts import GREETING  # noqa: E402
from agentworld_gym.tau2.replay import replay_gold  # noqa: E402
from agentworld_gym.tau2.users import Tau2LLMUser  # noqa: E402
from agentworld_gym.users import LLMUser  # noqa: E402

TINY = str(Path(__file__).parent / "fixtures" / "tau2_tiny")
TASKS = ["cancel_pending", "status_delivered", "refuse_delivered"]


def chatty(lines: int = 40) -> Tau2ScriptedUser:
    return Tau2ScriptedUser({t: ["Hi, I need help with an order."] * lines for t in TASKS})


def make(user=None, **kwargs) -> Tau2Env:
    return Tau2Env(TINY, "tiny", split="all", user=user or chatty(), **kwargs)


def db_hash(env: Tau2Env) -> str:
    return env.environment.get_db_hash()


def finish(env: Tau2Env, text: str = "Goodbye."):
    """Talk until the user stops."""
    while True:
        obs, reward, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            return reward, info


# -- the Gymnasium contract -----------------------------------------------------------------
def test_check_env_passes():
    check_env(make(max_turns=8), skip_render_check=True)


def test_reset_shows_policy_tools_and_the_users_first_message():
    env = make()
    obs, info = env.reset(options={"task_id": "cancel_pending"})
    assert obs == "Hi, I need help with an order."
    assert sorted(t["function"]["name"] for t in info["tools"]) == [
        "cancel_order",
        "find_user_id_by_email",
        "get_order_details",
    ]
    system, greeting, first = info["messages"]
    assert "<policy>" in system["content"] and "Only pending orders" in system["content"]
    assert greeting == {"role": "assistant", "content": GREETING}
    assert first == {"role": "user", "content": obs}
    assert info["user_turn"] == 1 and "needs_judge" not in info


def test_seeded_resets_are_identical():
    a, b = make(), make()
    runs = []
    for env in (a, b):
        obs, info = env.reset(seed=7)
        step = env.step({"name": "get_order_details", "arguments": {"order_id": "#O1"}})
        runs.append((obs, info["task_id"], step[0]))
    assert runs[0] == runs[1]
    seen = {make().reset(seed=s)[1]["task_id"] for s in range(12)}
    assert len(seen) > 1


def test_missing_user_is_a_config_error():
    from agentworld_gym.errors import ConfigError

    env = Tau2Env(TINY, "tiny")
    with pytest.raises(ConfigError, match="simulated user"):
        env.reset(seed=0)


@pytest.mark.parametrize(
    ("action", "code", "fragment"),
    [
        ('<tool_call>{"name": "get_order_details", "arguments": </tool_call>', "malformed", ""),
        ({"name": "cancel_ordr", "arguments": {"order_id": "#O1"}}, "unknown_tool", "cancel_order"),
        ({"name": "get_order_details", "arguments": {"order_id": 5}}, "invalid_arguments", "str"),
        (
            {"name": "get_order_details", "arguments": {"order": "#O1"}},
            "invalid_arguments",
            "order_id",
        ),
        ({"name": "get_order_details", "arguments": {}}, "invalid_arguments", "order_id"),
        ({"name": "get_order_details", "arguments": ["#O1"]}, "invalid_arguments", "JSON object"),
        (
            {
                "name": "cancel_order",
                "arguments": {"order_id": "#O3", "reason": "no longer needed"},
            },
            "tool_execution_error",
            "Non-pending order cannot be cancelled",
        ),
    ],
)
def test_bad_calls_answer_with_a_precise_error_and_change_nothing(action, code, fragment):
    env = make()
    env.reset(options={"task_id": "cancel_pending"})
    before, length = db_hash(env), len(env.trajectory)
    obs, reward, terminated, truncated, info = env.step(action)
    error = json.loads(obs)["error"]
    assert error["type"].startswith(code) and fragment in error["message"]
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["tool_results"][0]["ok"] is False
    assert db_hash(env) == before
    if code != "tool_execution_error":  # refused: nothing ran, nothing for tau2 to replay
        assert len(env.trajectory) == length


def test_a_tool_that_writes_then_raises_leaves_no_partial_write(monkeypatch):
    from tau2.domains.tiny.tools import TinyTools

    original = TinyTools.cancel_order

    def half_cancel(self, order_id: str, reason: str):
        self.db.orders[order_id].status = "cancelled"
        raise ValueError("payment service down")

    for attr in ("__tool__", "__tool_type__", "__mutates_state__"):
        setattr(half_cancel, attr, getattr(original, attr))
    half_cancel.__doc__ = original.__doc__
    env = make()
    env.reset(options={"task_id": "cancel_pending"})
    env.step({"name": "find_user_id_by_email", "arguments": {"email": "ada@example.com"}})
    before = db_hash(env)
    monkeypatch.setattr(TinyTools, "cancel_order", half_cancel)
    obs, *_ = env.step(
        {"name": "cancel_order", "arguments": {"order_id": "#O1", "reason": "no longer needed"}}
    )
    assert "payment service down" in obs
    assert env.environment.tools.db.orders["#O1"].status == "pending"
    assert db_hash(env) == before


def test_several_calls_in_one_action_and_the_messages_log():
    env = make()
    env.reset(options={"task_id": "status_delivered"})
    obs, _, _, _, info = env.step(
        '<tool_call>{"name": "find_user_id_by_email", "arguments": {"email": "alan@example.com"}}'
        '</tool_call><tool_call>{"name": "get_order_details", "arguments": {"order_id": "#O2"}}'
        "</tool_call>"
    )
    assert obs.count("<tool_response>") == 2 and "alan_2" in obs and "delivered" in obs
    assert [m["role"] for m in info["messages"]][-3:] == ["assistant", "tool", "tool"]
    tool_calls = env.trajectory[-3].tool_calls
    assert [c.name for c in tool_calls] == ["find_user_id_by_email", "get_order_details"]


# -- rewards: tau2's evaluators ---------------------------------------------------------------
@pytest.mark.parametrize("task_id", TASKS)
def test_gold_actions_score_one(task_id):
    env = make()
    info = replay_gold(env, env.domain.tasks_in("all")[TASKS.index(task_id)])
    verification = info["verification"]
    assert verification["reward"] == 1.0 and verification["success"] is True
    assert verification["termination"] == "user_stop"
    assert set(verification["breakdown"]) == set(verification["reward_basis"])


@pytest.mark.parametrize("task_id", TASKS)
def test_a_lazy_policy_scores_zero(task_id):
    env = make(user=Tau2ScriptedUser({task_id: ["Please help.", "###STOP###"]}))
    env.reset(options={"task_id": task_id})
    reward, info = finish(env, "Sure, it is all taken care of.")
    assert reward == 0.0 and info["verification"]["success"] is False


@pytest.mark.parametrize("task_id", TASKS)
def test_a_destructive_policy_scores_zero(task_id):
    """Cancel every order the tools allow, after the gold calls."""
    env = make(user=Tau2ScriptedUser({task_id: ["Please help.", "###STOP###"]}))
    env.reset(options={"task_id": task_id})
    for action in env.task.evaluation_criteria.actions:
        env.step({"name": action.name, "arguments": action.arguments})
    for order in ("#O1", "#O2", "#O3", "#O4"):
        env.step(
            {
                "name": "cancel_order",
                "arguments": {"order_id": order, "reason": "ordered by mistake"},
            }
        )
    reward, info = finish(env, "Your order is delivered; I cancelled what I could.")
    assert reward == 0.0 and info["verification"]["db_match"] is False


def test_communicate_and_action_checks_are_taus():
    env = make(user=Tau2ScriptedUser({"status_delivered": ["Has #O2 arrived?", "###STOP###"]}))
    env.reset(options={"task_id": "status_delivered"})
    env.step({"name": "get_order_details", "arguments": {"order_id": "#O2"}})
    reward, info = finish(env, "Yes, it arrived.")  # never says 'delivered'
    assert reward == 0.0
    assert info["verification"]["communicate_checks"] == [{"info": "delivered", "met": False}]
    env.reset(options={"task_id": "status_delivered"})
    reward, info = finish(env, "Your order was DELIVERED.")  # case-insensitive, as in tau2
    assert reward == 1.0


def test_agent_stop_and_turn_budget():
    env = make()
    env.reset(options={"task_id": "status_delivered"})
    _, reward, terminated, _, info = env.step("Your order was delivered. ###STOP###")
    assert terminated and info["verification"]["termination"] == "agent_stop" and reward == 1.0
    env = make(max_turns=2)
    env.reset(options={"task_id": "status_delivered"})
    env.step("Let me check.")
    _, reward, terminated, truncated, info = env.step("Your order was delivered.")
    assert truncated and not terminated and reward == 0.0  # tau2: max_steps scores 0
    assert info["verification"]["termination"] == "max_steps"


class AllMet:
    """A judge backend that finds every expected outcome met (and keeps what it was asked)."""

    def __init__(self) -> None:
        self.asked: list[list[dict]] = []

    def chat(self, messages, tools=None, **sampling):
        import ast

        self.asked.append(messages)
        items = ast.literal_eval(messages[-1]["content"].split("expectedOutcomes:")[1].strip())
        results = [{"expectedOutcome": a, "metExpectation": True, "reasoning": "."} for a in items]
        return {"role": "assistant", "content": json.dumps({"results": results})}


def test_nl_assertions_are_judged_with_taus_prompt_or_left_unjudged():
    from tau2.data_model.tasks import RewardType

    env = make()
    task = env.domain.tasks_in("all")[1]
    criteria = task.evaluation_criteria.model_copy(
        update={
            "nl_assertions": ["The agent says the order was delivered."],
            "reward_basis": [RewardType.DB, RewardType.NL_ASSERTION],
        }
    )
    nl_task = task.model_copy(update={"evaluation_criteria": criteria})
    replay_gold(env, task)
    trajectory = env.trajectory
    unjudged = evaluate(env.domain, nl_task, trajectory, "user_stop")
    assert unjudged.needs_judge and not unjudged.success
    assert unjudged.breakdown == {"DB": 1.0, "NL_ASSERTION": None}
    judge = AllMet()
    prompt = env.checkout.nl_assertion_prompt()
    judged = evaluate(env.domain, nl_task, trajectory, "user_stop", judge=judge, nl_prompt=prompt)
    assert judged.success and judged.breakdown == {"DB": 1.0, "NL_ASSERTION": 1.0}
    assert judge.asked[0][0]["content"] == prompt and "metExpectation" in prompt


# -- users --------------------------------------------------------------------------------
class Parrot:
    """A user backend: says its line, then stops; records what it was shown."""

    def __init__(self) -> None:
        self.seen: list[list[dict]] = []

    def chat(self, messages, tools=None, **sampling):
        self.seen.append(messages)
        users = sum(1 for m in messages if m["role"] == "assistant")
        return {"role": "assistant", "content": "Where is #O2?" if users == 0 else "###STOP###"}


@pytest.mark.parametrize("user_class", [LLMUser, Tau2LLMUser])
def test_llm_users_play_taus_scenario(user_class):
    backend = Parrot()
    env = make(user=user_class(backend))
    obs, _ = env.reset(options={"task_id": "status_delivered"})
    assert obs == "Where is #O2?"
    system = backend.seen[0][0]["content"]
    assert "<scenario>" in system and "Alan Turing" in system
    assert backend.seen[0][1] == {"role": "user", "content": GREETING}  # roles flipped
    _, reward, terminated, _, info = env.step("It was delivered.")
    assert terminated and info["verification"]["termination"] == "user_stop" and reward == 1.0


def test_a_failing_user_ends_the_conversation_not_the_run():
    class Broken:
        def reply(self, scenario, dialogue):
            if len(dialogue) > 1:
                raise TimeoutError("user model timed out")
            return "Hello."

    env = make(user=Broken())
    env.reset(options={"task_id": "status_delivered"})
    _, _, terminated, _, info = env.step("Hi!")
    assert terminated and "TimeoutError" in info["user_error"]


# -- registration and the command line -----------------------------------------------------
def test_register_and_gym_make():
    from agentworld_gym.registry import load_spec

    ids = register(TINY, domains=("tiny",))
    assert ids == [gym_id("tiny")] == ["AgentWorld/tau2-tiny-v0"]
    env = gym.make("AgentWorld/tau2-tiny-v0", user=chatty(), split="train")
    obs, info = env.reset(seed=0)
    assert info["task_id"] in {"cancel_pending", "status_delivered"}
    env.close()
    spec = load_spec("AgentWorld/tau2-tiny-v0")  # what eval and the registry read
    assert [t.id for t in spec.tasks] == TASKS
    assert [t.split for t in spec.tasks] == ["train", "train", "test"]
    assert {t.name: t.kind for t in spec.tools}["cancel_order"] == "write"


def test_suites_are_registered_with_what_they_need():
    from agentworld_gym.suites import get_suite

    suite = get_suite("tau2-retail")
    assert suite.envs == {"AgentWorld/tau2-retail-v0": "retail"}
    if not os.environ.get("AGENTWORLD_TAU2"):
        assert "AGENTWORLD_TAU2" in suite.requires


def test_eval_runs_tau2_episodes_through_the_suite_path(monkeypatch):
    """``agentworld eval``'s runner: tasks from the registry, envs from the entry point, the
    user from the environment variables (here a scripted one), success = tau2's reward 1."""
    import agentworld_gym.tau2.env as tau2_env
    from agentworld_gym.integrations.openai_eval import evaluate as run_eval
    from agentworld_gym.integrations.openai_eval import select_tasks

    register(TINY, domains=("tiny",))
    monkeypatch.setattr(tau2_env, "default_user", lambda: chatty(2))
    refs = select_tasks(["AgentWorld/tau2-tiny-v0"], "all", None)
    assert [r.task_id for r in refs] == TASKS

    def policy(messages, tools):  # looks #O2 up, then says what it found
        if messages[-1]["role"] == "tool":
            return "Your order #O2 was delivered."
        return {"name": "get_order_details", "arguments": {"order_id": "#O2"}}

    report = run_eval(refs, lambda env_id: policy, concurrency=1, jsonl=None)
    success = {t.task_id: t.success for t in report.trajectories}
    assert success == {"cancel_pending": False, "status_delivered": True, "refuse_delivered": False}
    assert all(t.error is None for t in report.trajectories)


def test_import_tau2_command_replays_the_gold_actions(capsys):
    from agentworld_gym.cli import main

    assert main(["import-tau2", TINY, "--domains", "tiny", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["domains"][0]
    assert report["tasks"] == 3 and report["tools"] == 3
    assert report["replay"]["reward_1"] == 3 and report["replay"]["failures"] == []


@pytest.mark.skipif(not os.environ.get("TAU2_CHECKOUT"), reason="set TAU2_CHECKOUT to a checkout")
def test_real_checkout_retail_gold_replays():
    run = subprocess.run(
        [sys.executable, "-m", "agentworld_gym.cli", "import-tau2", os.environ["TAU2_CHECKOUT"]]
        + ["--domains", "retail", "--limit", "10", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    replay = json.loads(run.stdout)["domains"][0]["replay"]
    assert replay["reward_1"] == replay["replayed"] == 10
