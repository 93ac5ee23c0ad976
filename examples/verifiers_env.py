"""AgentWorld in verifiers: ``load_environment`` and verifiers' evaluator, offline.

``load_environment(envs=[...])`` (``agentworld_gym.integrations.verifiers_env``) returns a
verifiers ``MultiTurnEnv`` whose rows are AgentWorld tasks, whose tools are each row's
environment tools and whose reward is the task's verifier. This script evaluates it with
verifiers' own ``evaluate`` against a local OpenAI-compatible stand-in server that plays the
gold solutions with native tool calls (every task should score 1.0), or against any server
you name::

    pip install -e ".[verifiers]" && pip install --no-deps verifiers==0.3.1
    python examples/verifiers_env.py --envs notion,docker-dvp -n 6
    python examples/verifiers_env.py --base-url http://localhost:8000/v1 --model Qwen/Qwen3-8B

The same environment runs under ``vf-eval`` (printed at the end) and under the trainers that
drive verifiers environments (prime-rl; GPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from itertools import zip_longest
from typing import Any

import verifiers as vf

from agentworld_gym.integrations.rollout import GoldPolicy
from agentworld_gym.integrations.scripted import openai_policy_server
from agentworld_gym.registry import load_spec

ENV_ID = "agentworld_gym.integrations.verifiers_env"


def gold_model(envs: list[str]) -> Any:
    """The gold policy of whichever task opens the chat."""
    policies = [GoldPolicy(load_spec(name)) for name in envs]
    routes = {i.strip(): (i, p) for p in policies for i in p.plays}

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        k = next(i for i, m in enumerate(messages) if m["role"] == "user")
        instruction, chosen = routes[messages[k]["content"].strip()]
        return chosen(
            [*messages[:k], {**messages[k], "content": instruction}, *messages[k + 1 :]], tools
        )

    return policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="notion")
    parser.add_argument("--split", default="test")
    parser.add_argument("-n", "--num-examples", type=int, default=6)
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server")
    parser.add_argument("--model", default="gold")
    parser.add_argument("--api-key-var", default="OPENAI_API_KEY")
    args = parser.parse_args()
    envs = args.envs.split(",")
    env = vf.load_environment(ENV_ID, envs=envs, eval_split=args.split)
    base_url, key_var = args.base_url, args.api_key_var
    if base_url is None:
        server = openai_policy_server(gold_model(envs))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        os.environ.setdefault(key_var, "unused")
    client = vf.ClientConfig(api_base_url=base_url, api_key_var=key_var)
    by_env: dict[str, list[int]] = {}
    for i, info in enumerate(env.eval_dataset["info"]):
        by_env.setdefault(info["env"], []).append(i)
    mixed = [i for group in zip_longest(*by_env.values()) for i in group if i is not None]
    env.eval_dataset = env.eval_dataset.select(mixed)  # every environment in the first rows
    result = env.evaluate_sync(client=client, model=args.model, num_examples=args.num_examples)
    for output in result["outputs"]:
        info, metrics = output["info"], output["metrics"]
        success, turns = bool(metrics["agentworld_success"]), int(metrics["agentworld_turns"])
        print(
            f"{info['env']:>16} {info['task_id']:>22}  reward {output['reward']:.3f}  "
            f"success {success}  turns {turns}"
        )
    meta = result["metadata"]
    success = meta["avg_metrics"]["agentworld_success"]
    print(f"avg reward {meta['avg_reward']:.3f}, success {success:.3f}")
    env_args = json.dumps({"envs": envs, "eval_split": args.split})
    print(
        "\nThe same with verifiers' CLI:\n"
        f"  vf-eval {ENV_ID} -a '{env_args}' -b {base_url} -k {key_var} -m {args.model} "
        f"-n {args.num_examples}"
    )


if __name__ == "__main__":
    main()
