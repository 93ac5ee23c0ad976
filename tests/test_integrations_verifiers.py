"""verifiers: AgentWorld tasks through verifiers' own entry points (``load_environment``,
``generate`` as trainers call it, ``evaluate``), against a local OpenAI-compatible stand-in
server whose model plays scripted policies with native tool calls."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest
from engine_cases import NOTION, PoolPolicy, catalog_case, gym_reward

vf = pytest.importorskip("verifiers")
if not hasattr(vf, "MultiTurnEnv"):
    pytest.skip("needs the classic verifiers API (verifiers 0.3)", allow_module_level=True)

from agentworld_gym.integrations import verifiers_env  # noqa: E402
from agentworld_gym.integrations.rollout import GoldPolicy, run_episode  # noqa: E402
from agentworld_gym.integrations.scripted import openai_policy_server  # noqa: E402
from agentworld_gym.registry import load_spec  # noqa: E402

ENV_ID = "agentworld_gym.integrations.verifiers_env"
KEY_VAR = "AGENTWORLD_STANDIN_KEY"


class Model:
    """The stand-in server's model: the current policy, and the tool names each request saw."""

    def __init__(self) -> None:
        self.policy: Any = None
        self.tools_seen: list[list[str]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        self.tools_seen.append([t["function"]["name"] for t in tools])
        return self.policy(messages, tools)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Model, Any]]:
    # verifiers' environments install process-wide SIGINT/SIGTERM teardown handlers; the
    # rest of the suite (which forks process pools) gets the handlers it had back
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    model = Model()
    server = openai_policy_server(model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_VAR, "unused")
        yield model, vf.ClientConfig(api_base_url=url, api_key_var=KEY_VAR)
    server.shutdown()
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("wrong", [False, True], ids=["gold", "wrong-answer"])
def test_notion_and_catalog_tasks_earn_the_reward_of_gym_make(served, wrong: bool):
    model, client = served
    cases = [NOTION, catalog_case()]
    envs = sorted({env for env, _ in cases})
    env = vf.load_environment(ENV_ID, envs=envs, eval_split="all")
    assert isinstance(env, vf.MultiTurnEnv)
    rows = env.eval_dataset.filter(lambda r: (r["info"]["env"], r["info"]["task_id"]) in cases)
    model.policy, model.tools_seen = PoolPolicy(envs, wrong=wrong), []
    out = env.generate_sync(rows, client=client, model="scripted")
    got = {(o["info"]["env"], o["info"]["task_id"]): o for o in out["outputs"]}
    assert sorted(got) == sorted(cases)
    for case in cases:
        assert got[case]["reward"] == pytest.approx(gym_reward(*case, wrong=wrong))
        assert got[case]["metrics"]["agentworld_success"] == float(not wrong)
        assert got[case]["error"] is None
    expected_tools = {[t.name for t in load_spec(e).tools][0] for e in envs}
    assert expected_tools <= {names[0] for names in model.tools_seen}
    assert all(names[-1] == "submit" for names in model.tools_seen)


def test_evaluate_runs_the_eval_split(served):
    model, client = served
    model.policy = PoolPolicy(["notion"])
    env = verifiers_env.load_environment("notion", split="train", eval_split="test")
    result = env.evaluate_sync(client=client, model="scripted", num_examples=3)
    assert [o["info"]["split"] for o in result["outputs"]] == ["test"] * 3
    assert result["metadata"]["avg_reward"] == 1.0
    assert result["metadata"]["avg_metrics"]["agentworld_success"] == 1.0


@pytest.mark.parametrize("max_turns", [1, 2])
def test_rollouts_verifiers_stops_earn_the_reward_of_the_same_turn_budget(served, max_turns):
    """verifiers' ``max_turns`` stops before ``env_response`` sees the last reply; the episode
    still plays it, as ``gym.make(..., max_turns=k)`` does (notion-r01's gold: a query, then
    the answer, so k=1 scores the query alone and k=2 is the full solution)."""
    model, client = served
    model.policy = PoolPolicy(["notion"])
    env = verifiers_env.load_environment(["notion"], eval_split="all", max_turns=max_turns)
    rows = env.eval_dataset.filter(lambda r: r["info"]["task_id"] == NOTION[1])
    (output,) = env.generate_sync(rows, client=client, model="scripted")["outputs"]
    assert output["stop_condition"] == "max_turns_reached"
    made = gym.make("AgentWorld/notion-v0", split="all", max_turns=max_turns)
    expected = run_episode(made, NOTION[1], GoldPolicy(load_spec("notion"))).reward
    assert output["reward"] == pytest.approx(expected)
    assert expected == (1.0 if max_turns == 2 else pytest.approx(1 / 7))


def test_dataset_rows_carry_the_task_and_its_opening():
    table = verifiers_env.dataset(["notion"], "test")
    assert len(table) == len(load_spec("notion").tasks_in("test"))
    row = table[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["info"]["env"] == "notion" and row["info"]["split"] == "test"
