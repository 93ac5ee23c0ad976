"""AgentWorld in SkyRL: the registered text environment, its dataset, and rollouts played the
way SkyRL's generator plays them (``skyrl_gym.make`` → ``init`` → ``step`` until done).

``--model gold`` plays the gold solutions (every task should score 1.0 and match
``gym.make``); ``--model embedded`` generates with the embedded SmolLM2-135M through
transformers (real text, tiny model)::

    pip install -e ".[skyrl]"
    python examples/skyrl_env.py --envs notion,docker-dvp --rows 4

SkyRL's trainer (``skyrl`` package, Ray + GPUs) reads the parquet file this script writes;
``agentworld_gym.integrations.skyrl_env.register()`` must run in the process that runs its
generator (the command is printed at the end).
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import gymnasium as gym
import skyrl_gym

from agentworld_gym.integrations import skyrl_env
from agentworld_gym.integrations.rollout import GoldPolicy, run_episode
from agentworld_gym.integrations.scripted import action_text
from agentworld_gym.registry import load_spec


def gold_text(envs: list[str]) -> Any:
    """``generate(chat) -> text`` playing the gold solution of the task that opens the chat."""
    policies = [GoldPolicy(load_spec(name)) for name in envs]
    routes = {i.strip(): (i, p) for p in policies for i in p.plays}

    def generate(chat: list[dict[str, Any]]) -> str:
        k = next(i for i, m in enumerate(chat) if m["role"] == "user")
        instruction, policy = routes[chat[k]["content"].strip()]
        exact = [*chat[:k], {**chat[k], "content": instruction}, *chat[k + 1 :]]
        return action_text(policy(exact, []))

    return generate


def embedded_text(max_new_tokens: int) -> Any:
    """``generate(chat) -> text`` with the embedded model and its chat template."""
    import torch

    from agentworld_gym.integrations.trl_env import embedded_model

    model, tokenizer = embedded_model()

    def generate(chat: list[dict[str, Any]]) -> str:
        ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt")
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False)
        return tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)

    return generate


def rollout(row: dict[str, Any], generate: Any, max_turns: int) -> dict[str, Any]:
    """One episode as ``SkyRLGymGenerator.agent_loop`` runs it."""
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    extras["max_turns"] = max_turns  # what the generator sets from generator.max_turns
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
    chat, _ = env.init(copy.deepcopy(row["prompt"]))
    done, reward = False, 0.0
    while not done:
        text = generate(chat)
        out = env.step(text)
        chat += [{"role": "assistant", "content": text}, *out["observations"]]
        reward, done = out["reward"], out["done"]
    metrics = env.get_metrics()
    env.close()
    return {"reward": reward, **metrics}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="notion")
    parser.add_argument("--out", default="outputs/skyrl")
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--model", choices=["gold", "embedded"], default="gold")
    parser.add_argument("--max-turns", type=int, default=40, help="SkyRL's generator.max_turns")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    envs = args.envs.split(",")
    skyrl_env.register()
    train = skyrl_env.write_dataset(envs, Path(args.out) / "train.parquet", split="train")
    test = skyrl_env.write_dataset(envs, Path(args.out) / "test.parquet", split="test")
    print(f"wrote {train}, {test}; skyrl_gym ids: {sorted(skyrl_gym.registry)}")
    rows = skyrl_env.dataset_rows(envs, "test")
    last = len(rows) - 1
    picks = sorted({round(i * last / max(args.rows - 1, 1)) for i in range(args.rows)})
    generate = gold_text(envs) if args.model == "gold" else embedded_text(args.max_new_tokens)
    for row in (rows[i] for i in picks):
        result = rollout(row, generate, args.max_turns)
        line = f"{row['env']:>16} {row['task_id']:>22}  reward {result['reward']:.3f}"
        line += f"  success {bool(result['success'])}  turns {int(result['turns'])}"
        if args.model == "gold":
            made = gym.make(load_spec(row["env"]).gym_id, split="all", max_turns=args.max_turns)
            expected = run_episode(made, row["task_id"], GoldPolicy(load_spec(row["env"])))
            line += f"  (gym.make: {expected.reward:.3f})"
        print(line)
    print(
        "\nTrain with SkyRL (Ray + GPUs), registering the environment in its entrypoint process "
        "(call skyrl_env.register() before BasePPOExp(cfg).run()):\n"
        f"  data.train_data=['{train}'] data.val_data=['{test}'] "
        f"environment.env_class={skyrl_env.ENV_CLASS} generator.max_turns={args.max_turns}"
    )


if __name__ == "__main__":
    main()
