"""Stable-Baselines3 PPO on an AgentWorld environment, through the numeric wrappers.

SB3 takes ``Box``/``Discrete`` spaces, not text. :func:`agentworld_gym.wrappers.make_sb3_env`
gives any catalog environment a ``Discrete`` action space over its admissible tool calls and a
hashed bag-of-words ``Box`` observation, and it passes SB3's ``check_env``.

The default environment is a tiny issue tracker defined below (three tasks: count the open
items, count the done items, close the docs item and report its points). It is small enough for
an MLP policy to learn in about 20 seconds on one CPU, and it needs the policy to read the task
(the first call differs between tasks) and to chain calls (list, act, answer). A real catalog
environment works the same way (``--env AgentWorld/notion-v0``), but a from-scratch MLP will not
solve Notion tasks: that is what the LLM policies and GRPO are for.

Run::

    pip install agentworld-gym[sb3]
    python examples/sb3_ppo.py                     # tracker: PPO vs a random policy
    python examples/sb3_ppo.py --env AgentWorld/notion-v0 --timesteps 5000
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from agentworld_gym.database import copy_record
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import ToolExecutionError
from agentworld_gym.spec import EnvSpec, RuntimeSpec, TaskSpec, ToolSpec
from agentworld_gym.tools import ToolContext
from agentworld_gym.wrappers import make_sb3_env

# -- a tiny tracker environment (tools are plain Python functions of this module) -------------
ITEMS = [
    {"id": "i1", "title": "Write docs", "status": "open", "points": 3},
    {"id": "i2", "title": "Fix login bug", "status": "open", "points": 5},
    {"id": "i3", "title": "Ship release", "status": "done", "points": 8},
]


def list_items(ctx: ToolContext, status: str | None = None) -> dict[str, Any]:
    rows = [r for r in ctx.db.scan("items") if status in (None, r["status"])]
    return {"count": len(rows), "items": rows}


def get_item(ctx: ToolContext, item_id: str) -> dict[str, Any]:
    record = ctx.db.get("items", item_id)
    if record is None:
        raise ToolExecutionError(f"item {item_id} not found")
    return record


def set_status(ctx: ToolContext, item_id: str, status: str) -> dict[str, Any]:
    record = copy_record(get_item(ctx, item_id))
    record["status"] = status
    return ctx.db.put("items", record)


def _tool(name: str, doc: str, params: dict[str, Any], required: list[str], kind: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=doc,
        parameters={"type": "object", "properties": params, "required": required},
        implementation={"type": "python", "entrypoint": f"{__name__}:{name}"},
        kind=kind,
    )


def _count_task(status: str, count: int) -> TaskSpec:
    return TaskSpec(
        id=f"count-{status}",
        instruction=f"How many items are {status}?",
        verifier={
            "type": "rubric",
            "criteria": [
                {"text": f"answer is {count}", "check": {"type": "answer_equals", "value": count}},
                {
                    "text": "nothing changed",
                    "check": {
                        "type": "count",
                        "collection": "items",
                        "where": {"status": status},
                        "equals": count,
                    },
                },
            ],
        },
    )


def make_tracker_spec() -> EnvSpec:
    """Three items, three tools, three tasks that need different first calls."""
    status = {"type": "string", "enum": ["open", "done"]}
    item_id = {"type": "string"}
    tools = [
        _tool("list_items", "List items, optionally by status.", {"status": status}, [], "read"),
        _tool("get_item", "Get one item by id.", {"item_id": item_id}, ["item_id"], "read"),
        _tool(
            "set_status",
            "Set an item's status.",
            {"item_id": item_id, "status": status},
            ["item_id", "status"],
            "write",
        ),
    ]
    close_docs = TaskSpec(
        id="close-docs",
        instruction="Mark the documentation item as done and tell me its points.",
        verifier={
            "type": "rubric",
            "criteria": [
                {
                    "text": "i1 is done",
                    "weight": 2,
                    "check": {
                        "type": "record",
                        "collection": "items",
                        "key": "i1",
                        "path": "status",
                        "equals": "done",
                    },
                },
                {"text": "answer gives 3", "check": {"type": "answer_equals", "value": 3}},
            ],
        },
    )
    return EnvSpec(
        id="tracker",
        name="Tiny Tracker",
        description="Three items with a status.",
        tools=tools,
        tasks=[_count_task("open", 2), _count_task("done", 1), close_docs],
        records={"items": ITEMS},
        runtime=RuntimeSpec(max_turns=5),
    )


# -- training and evaluation -------------------------------------------------------------------
@dataclass
class Score:
    """How a policy did over some episodes."""

    mean_reward: float
    success_rate: float
    """Fraction of episodes with reward 1.0 (every criterion met)."""


def make_env(env_id: str | None = None) -> gym.Env:
    """The tracker (default) or a catalog environment, as SB3 spaces."""
    base = gym.make(env_id) if env_id else AgentWorldEnv(make_tracker_spec(), split="all")
    return make_sb3_env(base)


def evaluate(env: gym.Env, policy: Callable[[np.ndarray], int], episodes: int, seed: int) -> Score:
    """Run ``policy`` for ``episodes`` episodes (tasks drawn by the seeded env)."""
    rewards = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += float(reward)
            done = terminated or truncated
        rewards.append(total)
        obs, _ = env.reset()
    rewards_arr = np.array(rewards)
    return Score(float(rewards_arr.mean()), float((rewards_arr >= 1.0 - 1e-9).mean()))


def train(env_id: str | None = None, timesteps: int = 24_000, seed: int = 0):
    """PPO with a small MLP, 8 environments, short rollouts (many updates: episodes are short)."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    torch.set_num_threads(1)
    vec = make_vec_env(lambda: make_env(env_id), n_envs=8, seed=seed)
    model = PPO(
        "MlpPolicy",
        vec,
        n_steps=32,
        batch_size=64,
        n_epochs=4,
        learning_rate=1e-3,
        ent_coef=0.01,
        gamma=0.95,
        policy_kwargs={"net_arch": [64, 64]},
        seed=seed,
        device="cpu",
    )
    model.set_logger(Logger(folder=None, output_formats=[]))  # no SB3-<date> folder in /tmp
    return model.learn(timesteps)


def compare(
    env_id: str | None = None, timesteps: int = 24_000, seed: int = 0, episodes: int = 200
) -> dict[str, Score]:
    """Train PPO, then score it and a uniformly random policy on the same seeded episodes."""
    model = train(env_id, timesteps, seed)
    env = make_env(env_id)
    env.action_space.seed(seed)
    random_score = evaluate(env, lambda obs: env.action_space.sample(), episodes, seed + 1)
    ppo_score = evaluate(
        env, lambda obs: int(model.predict(obs, deterministic=True)[0]), episodes, seed + 1
    )
    return {"random": random_score, "ppo": ppo_score}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", help="catalog id (default: the built-in tracker)")
    parser.add_argument("--timesteps", type=int, default=24_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episodes", type=int, default=200, help="evaluation episodes")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    from stable_baselines3.common.env_checker import check_env

    check_env(make_env(args.env))
    start = time.perf_counter()
    scores = compare(args.env, args.timesteps, args.seed, args.episodes)
    print(f"trained {args.timesteps} steps and evaluated in {time.perf_counter() - start:.1f}s")
    print(f"{'policy':<8} {'success':>8} {'mean reward':>12}")
    for name, score in scores.items():
        print(f"{name:<8} {score.success_rate:>8.1%} {score.mean_reward:>12.3f}")


if __name__ == "__main__":
    main()
