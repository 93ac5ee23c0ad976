"""TRL GRPO on an AgentWorld environment with ``environment_factory`` (multi-turn tool use).

:func:`~agentworld_gym.integrations.trl_env.environment_class` turns an environment into the
class TRL wants: one instance per rollout, ``reset(**row)``, one method per tool (schema in its
signature and docstring), and ``get_reward()`` from the task's verifier. Answers are scored
when the model calls the ``submit`` tool (TRL does not hand the closing text to the
environment), and the dataset's system prompt says so.

Run (a GPU and a tool-calling chat model)::

    pip install agentworld-gym[trl]
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --env notion --steps 50

or on a CPU with the embedded SmolLM2-135M (its ChatML template gets our Hermes tool calling,
:func:`~agentworld_gym.integrations.trl_env.tool_calling_tokenizer`)::

    python examples/trl_grpo.py --model embedded --env docker-dvp --steps 2 --group 2

Several environments in one run: ``--env notion,other-env`` (rows then carry an
``environment`` column and TRL picks each row's factory).
"""

from __future__ import annotations

import argparse

from agentworld_gym.integrations.trl_env import (
    embedded_model,
    environment_class,
    environment_factories,
    make_dataset,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B")
    parser.add_argument("--env", default="notion", help="one environment or a comma list")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--group", type=int, default=8, help="completions per task")
    parser.add_argument("--max-turns", type=int, default=12)
    parser.add_argument("--output-dir", default="runs/trl-grpo")
    args = parser.parse_args()

    from trl import GRPOConfig, GRPOTrainer

    envs = args.env.split(",")
    if len(envs) == 1:
        factory = environment_class(envs[0], max_turns=args.max_turns)
    else:
        factory = environment_factories(envs, max_turns=args.max_turns)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        num_generations=args.group,
        per_device_train_batch_size=args.group,
        max_completion_length=256 if args.model == "embedded" else 4096,
        max_tool_calling_iterations=args.max_turns,
        learning_rate=1e-6,
        logging_steps=1,
        chat_template_kwargs={"enable_thinking": False},
        **({"use_cpu": True, "bf16": False} if args.model == "embedded" else {}),
    )
    model, tokenizer = embedded_model("float32") if args.model == "embedded" else (args.model, None)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=make_dataset(envs, split="train"),
        environment_factory=factory,
    )
    trainer.train()


if __name__ == "__main__":
    main()
