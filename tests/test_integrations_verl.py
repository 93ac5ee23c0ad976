"""verl: AgentWorld rows written as verl's parquet task files, loaded by verl's RLHFDataset and
played by verl's own AgentLoopWorker.generate_sequences through the registered agent loop, with a
scripted stand-in for the rollout server (no GPU, no Ray)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from engine_cases import NOTION, PoolPolicy, catalog_case, gym_reward

pytest.importorskip("verl.experimental.agent_loop")
transformers = pytest.importorskip("transformers")

from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # noqa: E402

from agentworld_gym.integrations import verl_agent_loop as adapter  # noqa: E402
from agentworld_gym.integrations.rollout import GoldPolicy, run_episode  # noqa: E402
from agentworld_gym.integrations.trl_env import chatml_hermes_template  # noqa: E402
from agentworld_gym.llm.embedded import embedded_model_path  # noqa: E402
from agentworld_gym.registry import load_spec  # noqa: E402


@pytest.fixture(scope="module")
def verl_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``run(cases, wrong)``: verl's worker generates the rows of ``cases`` -> DataProto."""
    try:
        model = str(embedded_model_path())
    except Exception as exc:  # the embedded model's package is part of `make setup`
        pytest.skip(f"embedded model unavailable: {exc}")
    catalog = catalog_case()
    root = tmp_path_factory.mktemp("verl")
    data = adapter.write_dataset(["notion", catalog[0]], root / "train.parquet", split="all")
    loops = adapter.write_agent_loop_config(root / "agentworld_agent_loop.yaml")
    config = adapter.local_worker_config(  # a notion query result is ~16k tokens
        model, data, loops, chat_template=chatml_hermes_template(), max_response_length=32768
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    server = adapter.ScriptedServer(tokenizer, None)
    worker = AgentLoopWorker(config, llm_client=server)
    dataset = RLHFDataset(
        data_files=str(data), tokenizer=worker.tokenizer, config=config.data, processor=None
    )
    index = {(r["extra_info"]["env"], r["extra_info"]["task_id"]): i for i, r in enumerate(dataset)}

    def run(cases: list[tuple[str, str]], wrong: bool) -> DataProto:
        server.policy = PoolPolicy(sorted({env for env, _ in cases}), wrong=wrong)
        batch = DataProto.from_single_dict(collate_fn([dataset[index[c]] for c in cases]))
        return asyncio.run(worker.generate_sequences(batch))

    run.tokenizer = tokenizer  # type: ignore[attr-defined]
    run.config = worker.config  # type: ignore[attr-defined]
    return run


@pytest.mark.parametrize("wrong", [False, True], ids=["gold", "wrong-answer"])
def test_notion_and_catalog_tasks_earn_the_reward_of_gym_make(verl_run, wrong: bool):
    cases = [NOTION, catalog_case()]
    out = verl_run(cases, wrong)
    rewards = out.batch["rm_scores"].sum(-1).tolist()
    assert rewards == [pytest.approx(gym_reward(*case, wrong=wrong)) for case in cases]
    assert out.non_tensor_batch["success"].tolist() == [not wrong] * 2
    assert "success" in out.meta_info["reward_extra_keys"]
    assert [a["task_id"] for a in out.non_tensor_batch["agentworld"]] == [t for _, t in cases]


def test_response_mask_marks_the_model_tokens_only(verl_run):
    out = verl_run([NOTION], wrong=False)
    tokenizer = verl_run.tokenizer
    responses, mask = out.batch["responses"][0], out.batch["response_mask"][0]
    attention = out.batch["attention_mask"][0, -responses.shape[0] :]
    model_text = tokenizer.decode(responses[mask.bool()])
    env_text = tokenizer.decode(responses[(attention.bool()) & ~mask.bool()])
    assert "<tool_call>" in model_text and "<tool_response>" not in model_text
    assert "<tool_response>" in env_text and "<tool_call>" not in env_text


def test_dataset_rows_follow_verls_format(tmp_path: Path):
    rows = adapter.dataset_rows(["notion"], "test")
    row = rows[0]
    assert row["agent_name"] == adapter.AGENT_NAME
    assert set(row) >= {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
    text = adapter.write_agent_loop_config(tmp_path / "loops.yaml").read_text()
    assert "AgentWorldAgentLoop" in text and adapter.AGENT_NAME in text


def test_an_episode_verl_cuts_short_is_scored_as_the_turn_budget_scores_it(verl_run):
    """``multi_turn.max_assistant_turns`` ends the rollout after the first tool call: the
    reward is the state reached with no answer, as ``gym.make(..., max_turns=1)`` gives it."""
    multi_turn = verl_run.config.actor_rollout_ref.rollout.multi_turn
    multi_turn.max_assistant_turns = 1
    try:
        out = verl_run([NOTION], wrong=False)
    finally:
        multi_turn.max_assistant_turns = None
    made = gym.make("AgentWorld/notion-v0", split="all", max_turns=1)
    expected = run_episode(made, NOTION[1], GoldPolicy(load_spec("notion")))
    assert expected.truncated and expected.reward < 1.0
    assert out.batch["rm_scores"].sum().item() == pytest.approx(expected.reward)
    assert out.non_tensor_batch["truncated"].tolist() == [1.0]
    assert out.non_tensor_batch["success"].tolist() == [False]
