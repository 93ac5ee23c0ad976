"""SkyRL: AgentWorld tasks through skyrl_gym's registry and text-env interface, played the way
SkyRL's generator plays them (make, init, step until done, get_metrics, close), with the
dataset read back from the parquet file SkyRL's trainer would load."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from engine_cases import NOTION, PoolPolicy, catalog_case, gym_reward

skyrl_gym = pytest.importorskip("skyrl_gym")
datasets = pytest.importorskip("datasets")

from agentworld_gym.integrations import skyrl_env  # noqa: E402
from agentworld_gym.integrations.scripted import action_text  # noqa: E402
from agentworld_gym.registry import load_spec  # noqa: E402


def skyrl_rollout(row: dict[str, Any], policy: Any, env_config: Any = None) -> dict[str, Any]:
    """``SkyRLGymGenerator.agent_loop`` in miniature: the extras are the row minus prompt and
    env class, the chat grows by the assistant text and the returned observations."""
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config=env_config or {}, extras=extras)
    chat, _ = env.init(copy.deepcopy(row["prompt"]))
    done, reward = False, 0.0
    while not done:
        text = action_text(policy(chat, []))
        out = env.step(text)
        chat += [{"role": "assistant", "content": text}, *out["observations"]]
        reward, done = out["reward"], out["done"]
    metrics = env.get_metrics()
    env.close()
    return {"reward": reward, "metrics": metrics, "chat": chat}


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    skyrl_env.register()
    catalog = catalog_case()
    path = tmp_path_factory.mktemp("skyrl") / "train.parquet"
    skyrl_env.write_dataset(["notion", catalog[0]], path, split="all")
    table = datasets.load_dataset("parquet", data_files=str(path), split="train")
    return {(r["env"], r["task_id"]): r for r in table}


def test_registered_under_skyrl_registry():
    assert skyrl_env.register() == "agentworld" and "agentworld" in skyrl_gym.registry
    assert skyrl_env.register() == "agentworld"  # idempotent


@pytest.mark.parametrize("wrong", [False, True], ids=["gold", "wrong-answer"])
def test_notion_and_catalog_tasks_earn_the_reward_of_gym_make(rows, wrong: bool):
    for env, task_id in (NOTION, catalog_case()):
        row = rows[(env, task_id)]
        assert row["env_class"] == "agentworld" and "<tools>" in row["prompt"][0]["content"]
        result = skyrl_rollout(row, PoolPolicy([env], wrong=wrong))
        assert result["reward"] == gym_reward(env, task_id, wrong=wrong)
        assert result["metrics"]["success"] == float(not wrong)
        assert result["metrics"]["turns"] == sum(m["role"] == "assistant" for m in result["chat"])


def test_tool_results_as_user_turns_for_templates_without_a_tool_role(rows):
    result = skyrl_rollout(rows[NOTION], PoolPolicy(["notion"]), {"observation_role": "user"})
    assert result["reward"] == 1.0
    observations = [m for m in result["chat"][2:] if m["role"] != "assistant"]
    assert observations and all(m["role"] == "user" for m in observations)
    assert all(m["content"].startswith("<tool_response>") for m in observations)


def test_rows_missing_the_task_are_refused():
    skyrl_env.register()
    with pytest.raises(ValueError, match="task_id"):
        skyrl_gym.make("agentworld", env_config={}, extras={"env": "notion"})


def test_dataset_is_one_row_per_task(tmp_path: Path):
    path = skyrl_env.write_dataset(["notion"], tmp_path / "test.parquet", split="test")
    table = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert sorted(table["task_id"]) == sorted(t.id for t in load_spec("notion").tasks_in("test"))
    assert set(table["split"]) == {"test"}
