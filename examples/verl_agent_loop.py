"""AgentWorld in verl: task files, the agent loop, and a local rollout through verl's own worker.

Writes verl's parquet task files for an environment pool and the agent-loop YAML, then plays
a few rows through ``verl.experimental.agent_loop.AgentLoopWorker.generate_sequences`` in this
process (no Ray, no GPU) with a stand-in for the rollout server: ``--model gold`` plays the
gold solutions (every task should score 1.0), ``--model embedded`` generates with the embedded
SmolLM2-135M through transformers (real tokens, tiny model: expect little reward)::

    pip install -e ".[verl]" && pip install --no-deps verl==0.9.1 tensordict==0.10.0 pyvers==0.1.0
    python examples/verl_agent_loop.py --envs notion,docker-dvp --rows 4

Training itself is verl's Ray trainer on GPUs, fed the files this script writes (the command
is printed at the end).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from agentworld_gym.integrations import verl_agent_loop as adapter
from agentworld_gym.integrations.rollout import GoldPolicy
from agentworld_gym.integrations.trl_env import chatml_hermes_template
from agentworld_gym.llm.embedded import embedded_model_path
from agentworld_gym.registry import load_spec


class GoldPool:
    """The gold policy of whichever task opens the chat."""

    def __init__(self, envs: list[str]) -> None:
        policies = [GoldPolicy(load_spec(name)) for name in envs]
        self.by_instruction = {i.strip(): (i, p) for p in policies for i in p.plays}

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        k = next(i for i, m in enumerate(messages) if m["role"] == "user")
        instruction, policy = self.by_instruction[messages[k]["content"].strip()]
        return policy(
            [*messages[:k], {**messages[k], "content": instruction}, *messages[k + 1 :]], tools
        )


class TransformersServer:
    """verl's rollout-server interface over an in-process transformers model (CPU)."""

    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int) -> None:
        self.model, self.tokenizer, self.max_new_tokens = model, tokenizer, max_new_tokens

    async def generate(self, request_id: str, *, prompt_ids: list[int], **_: Any) -> Any:
        import torch
        from verl.workers.rollout.replica import TokenOutput

        with torch.no_grad():
            out = self.model.generate(
                torch.tensor([prompt_ids]),
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                eos_token_id=self.tokenizer.convert_tokens_to_ids("<|im_end|>"),
            )
        return TokenOutput(token_ids=out[0, len(prompt_ids) :].tolist(), stop_reason="completed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="notion")
    parser.add_argument("--out", default="outputs/verl")
    parser.add_argument("--rows", type=int, default=4, help="test rows played locally")
    parser.add_argument("--model", choices=["gold", "embedded"], default="gold")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-turns", type=int, default=None, help="verl's assistant-turn cap")
    args = parser.parse_args()
    envs = args.envs.split(",")
    out = Path(args.out)
    train = adapter.write_dataset(envs, out / "train.parquet", split="train")
    test = adapter.write_dataset(envs, out / "test.parquet", split="test")
    loops = adapter.write_agent_loop_config(out / "agentworld_agent_loop.yaml")
    print(f"wrote {train}, {test}, {loops}")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    torch.set_num_threads(1)
    model_path = str(embedded_model_path())  # its tokenizer renders the chat either way
    config = adapter.local_worker_config(
        model_path, test, loops, chat_template=chatml_hermes_template(), max_response_length=32768
    )
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    if args.model == "gold":
        server: Any = adapter.ScriptedServer(tokenizer, GoldPool(envs))
    else:
        model = AutoModelForCausalLM.from_pretrained(model_path)
        server = TransformersServer(model, tokenizer, args.max_new_tokens)
    config.actor_rollout_ref.rollout.multi_turn.max_assistant_turns = args.max_turns
    worker = AgentLoopWorker(config, llm_client=server)
    dataset = RLHFDataset(
        data_files=str(test), tokenizer=worker.tokenizer, config=config.data, processor=None
    )
    last = len(dataset) - 1  # rows spread over the file, so every environment shows up
    picks = sorted({round(i * last / max(args.rows - 1, 1)) for i in range(args.rows)})
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in picks]))
    result = asyncio.run(worker.generate_sequences(batch))
    rewards = result.batch["rm_scores"].sum(-1).tolist()
    extra = result.non_tensor_batch
    for i, info in enumerate(extra["agentworld"]):
        cut = " (ended by a turn or token budget)" if extra["truncated"][i] else ""
        print(
            f"{info['env']:>16} {info['task_id']:>22}  reward {rewards[i]:.3f}  "
            f"success {bool(extra['success'][i])}  turns {int(extra['turns'][i])}{cut}"
        )
    print(f"mean reward {sum(rewards) / len(rewards):.3f} over {len(rewards)} rows")
    print(
        "\nTrain with verl's Ray trainer (GPUs):\n  python -m verl.trainer.main_ppo "
        f"data.train_files={train} data.val_files={test} "
        "data.max_prompt_length=8192 data.max_response_length=32768 "
        "actor_rollout_ref.model.path=Qwen/Qwen3-4B actor_rollout_ref.rollout.name=vllm "
        "actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.multi_turn.enable=true "
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops} "
        "algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=8"
    )


if __name__ == "__main__":
    main()
