"""Tasks with several user turns: each answer brings the next user message; one episode."""

from __future__ import annotations

import json

from gymnasium.utils.env_checker import check_env
from toy_env import make_spec

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.spec import TaskSpec


def _spec():
    spec = make_spec()
    spec.tasks.append(
        TaskSpec(
            id="two-turns",
            instruction="How many points does the documentation item have?",
            turns=[{"content": "Thanks. Now mark it as done, and tell me its title."}],
            verifier={
                "type": "rubric",
                "criteria": [
                    {
                        "text": "turn 0 gives 3 points",
                        "check": {"type": "answer_equals", "value": 3, "turn": 0},
                    },
                    {
                        "text": "i1 is done",
                        "check": {
                            "type": "record",
                            "collection": "items",
                            "key": "i1",
                            "path": "status",
                            "equals": "done",
                        },
                    },
                    {
                        "text": "turn 1 gives the title",
                        "check": {"type": "answer_contains", "value": "Write docs", "turn": 1},
                    },
                ],
            },
        )
    )
    return spec


def _call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def test_each_answer_brings_the_next_user_turn_and_the_last_ends_the_episode() -> None:
    env = AgentWorldEnv(_spec(), split="all")
    obs, info = env.reset(options={"task_id": "two-turns"})
    assert obs.startswith("How many points") and info["user_turns"] == 2
    env.step(_call("get_item", item_id="i1"))
    obs, reward, terminated, truncated, info = env.step("It has 3 points.")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs.startswith("Thanks. Now mark it as done") and info["user_turn"] == 1
    assert info["turn_answer"] == "It has 3 points."
    roles = [m["role"] for m in info["messages"]]
    assert roles[-2:] == ["assistant", "user"]  # the answer, then the follow-up
    env.step(_call("set_status", item_id="i1", status="done"))
    obs, reward, terminated, truncated, info = env.step("Done: Write docs.")
    assert terminated and reward == 1.0 and info["verification"]["success"]


def test_each_turn_is_checked_on_its_own_answer() -> None:
    env = AgentWorldEnv(_spec(), split="all")
    env.reset(options={"task_id": "two-turns"})
    env.step("It has 5 points.")  # wrong at turn 0
    env.step(_call("set_status", item_id="i1", status="done"))
    *_, info = env.step("Done: Write docs. It has 3 points.")  # turn 1 cannot repair turn 0
    met = {c["criterion"]: c["score"] for c in info["verification"]["breakdown"]}
    assert met["turn 0 gives 3 points"] == 0 and met["turn 1 gives the title"] == 1
    assert not info["verification"]["success"]


def test_running_out_of_turns_mid_conversation_verifies_what_was_said() -> None:
    env = AgentWorldEnv(_spec(), split="all", max_turns=2)
    env.reset(options={"task_id": "two-turns"})
    env.step("3")
    obs, reward, terminated, truncated, info = env.step(_call("get_item", item_id="i1"))
    assert truncated and not terminated
    met = {c["criterion"]: c["score"] for c in info["verification"]["breakdown"]}
    assert met["turn 0 gives 3 points"] == 1 and met["turn 1 gives the title"] == 0


def test_multi_turn_episodes_pass_check_env_and_repeat_by_seed() -> None:
    spec = _spec()
    spec.tasks = [t for t in spec.tasks if t.id == "two-turns"]
    env = AgentWorldEnv(spec)
    check_env(env, skip_render_check=True)

    def run() -> list[str]:
        env.reset(seed=3)
        return [env.step("3")[0], env.step("Write docs")[0]]

    assert run() == run()


# -- simulated users -------------------------------------------------------------------------
def _simulated(scenario: dict) -> object:
    spec = make_spec()
    spec.tasks.append(
        TaskSpec(
            id="simulated",
            instruction="Hi, I need help with one of my items.",
            user=scenario,
            verifier={
                "type": "rubric",
                "criteria": [
                    {
                        "text": "i1 is done",
                        "check": {
                            "type": "record",
                            "collection": "items",
                            "key": "i1",
                            "path": "status",
                            "equals": "done",
                        },
                    }
                ],
            },
        )
    )
    return spec


class FakeModel:
    """A chat model that says its lines in order and records what it was shown."""

    def __init__(self, lines: list[str]) -> None:
        self.lines, self.seen = list(lines), []

    def chat(self, messages, tools=None, **sampling):
        self.seen.append((messages, sampling))
        return {"role": "assistant", "content": self.lines.pop(0)}


def test_a_scripted_user_replies_in_order_then_the_episode_ends() -> None:
    script = {"script": ["The one called Write docs.", "Please mark it done."]}
    env = AgentWorldEnv(_simulated(script), split="all")
    env.reset(options={"task_id": "simulated"})
    obs, *_ = env.step("Which item?")
    assert obs == "The one called Write docs."
    obs, *_ = env.step("What should I do with it?")
    assert obs == "Please mark it done."
    env.step(_call("set_status", item_id="i1", status="done"))
    *_, terminated, _, info = env.step("Done.")
    assert terminated and info["verification"]["success"]


def test_a_model_plays_the_user_from_its_side_and_stops() -> None:
    from agentworld_gym.users import STOP, LLMUser

    model = FakeModel(["It is Write docs; please close it.", f"Thanks! {STOP}"])
    scenario = {"instructions": "You are Ada; item i1 (Write docs) should be done."}
    env = AgentWorldEnv(_simulated(scenario), split="all", user=LLMUser(model, seed=7))
    env.reset(options={"task_id": "simulated"})
    obs, *_ = env.step("Which item?")
    assert obs == "It is Write docs; please close it."
    shown, sampling = model.seen[0]
    assert shown[0]["role"] == "system" and "You are Ada" in shown[0]["content"]
    assert [m["role"] for m in shown[1:]] == ["assistant", "user"]  # flipped: the user's side
    assert sampling["seed"] == 7 and sampling["temperature"] == 0.0
    env.step(_call("set_status", item_id="i1", status="done"))
    *_, terminated, _, info = env.step("Closed it.")
    assert terminated and info["verification"]["success"]  # the model said STOP


def test_a_failing_user_model_ends_the_episode_without_raising() -> None:
    from agentworld_gym.users import LLMUser

    class Broken:
        def chat(self, *args, **kwargs):
            raise TimeoutError("model server timed out")

    env = AgentWorldEnv(_simulated({"instructions": "..."}), split="all", user=LLMUser(Broken()))
    env.reset(options={"task_id": "simulated"})
    *_, terminated, _, info = env.step("Which item?")
    assert terminated and "timed out" in info["user_error"]
    assert info["verification"]["reward"] == 0.0


def test_a_simulated_user_task_without_a_simulator_is_a_config_error() -> None:
    import pytest

    from agentworld_gym.errors import ConfigError

    env = AgentWorldEnv(_simulated({"instructions": "You are Ada."}), split="all")
    with pytest.raises(ConfigError, match="simulated user"):
        env.reset(options={"task_id": "simulated"})
