"""Time per GRPO step and tokens/s: ours vs TRL's ``GRPOTrainer``, same model, same batch.

    python benchmarks/grpo_step.py                  # embedded SmolLM2-135M, CPU
    python benchmarks/grpo_step.py --model tiny --steps 3 --rounds 1   # quick smoke run

Both trainers do the same work per step: ``tasks × group`` single-turn completions of at most
``--max-new-tokens`` tokens for the same prompts (the demo environments' system prompt with
tool schemas + a task), full fine-tuning of the same bf16 model, DAPO token-level loss with
ε = 0.2/0.28, β = 0, one optimizer step per batch, no gradient checkpointing, no vLLM.
Ours rolls out through the environments (Gymnasium API); TRL gets the same chats as a dataset
with a constant reward (reward computation is not what is timed). Runs alternate
(ours, TRL, ours, TRL, ...) because this machine's timings drift; the first step of each run
is a warm-up and is left out. Printed: seconds per step and processed tokens per second
(prompt + completion tokens of the batch / step time), and ours/TRL ratios.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "experiments")]

import torch  # noqa: E402
from demo_envs import ENVS, ensure_demo_catalog  # noqa: E402

from algorithms.grpo.config import GRPOConfig  # noqa: E402
from algorithms.grpo.rollout import RolloutConfig  # noqa: E402
from algorithms.grpo.trainer import GRPOTrainer  # noqa: E402
from algorithms.models import ModelConfig, load_policy  # noqa: E402
from algorithms.pool import EnvPoolConfig, TaskPool  # noqa: E402


def make_pool() -> TaskPool:
    root = ensure_demo_catalog()
    ids = [f"AgentWorld/demo-{name}-v0" for name in ENVS]
    return TaskPool(EnvPoolConfig(catalogs=[str(root)], envs=ids))


def model_config(args) -> ModelConfig:
    dtype = "float32" if args.model == "tiny" else "bfloat16"
    return ModelConfig(name=args.model, dtype=dtype, lora=False, tool_format="hermes")


def run_ours(args) -> list[tuple[float, int]]:
    pool = make_pool()
    policy = load_policy(model_config(args))
    config = GRPOConfig(
        steps=args.steps,
        tasks_per_step=args.tasks,
        group_size=args.group,
        lr=1e-6,
        micro_batch_size=args.tasks * args.group,
        rollout=RolloutConfig(
            max_turns=1, max_new_tokens=args.max_new_tokens, max_episode_tokens=8192
        ),
        checkpoint_every=0,
    )
    trainer = GRPOTrainer(policy, pool, config)
    out = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        m = trainer.step()
        elapsed = time.perf_counter() - t0
        tokens = round(m["rollout/sequence_tokens"] * args.tasks * args.group)
        out.append((elapsed, tokens))
    return out[1:]


def run_trl(args) -> list[tuple[float, int]]:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer as TRLTrainer

    pool = make_pool()
    policy = load_policy(model_config(args))
    fmt = policy.generator.chat_format
    rng = random.Random(0)
    prompts = []
    for task in pool.sample(args.tasks * args.steps, rng):
        env = pool.acquire(task.env_id, "train")
        _, info = env.reset(options={"task_id": task.task_id})
        pool.release(env, task.env_id, "train")
        text = fmt.render(info["messages"], info["tools"], add_generation_prompt=True)
        prompts.append({"prompt": text})
    dataset = Dataset.from_list(prompts)
    times: list[float] = []
    tokens: list[int] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            times.append(time.perf_counter() - self.t0)

    def reward(completions, completion_ids=None, prompts=None, **kwargs):
        n_prompt = sum(len(fmt.encode(p)) for p in prompts)
        tokens.append(n_prompt + sum(len(c) for c in completion_ids))
        return [0.0 if i % 2 else 1.0 for i in range(len(completions))]

    with tempfile.TemporaryDirectory() as out:
        config = TRLConfig(
            output_dir=out,
            max_steps=args.steps,
            per_device_train_batch_size=args.tasks * args.group,
            gradient_accumulation_steps=1,
            num_generations=args.group,
            max_completion_length=args.max_new_tokens,
            learning_rate=1e-6,
            beta=0.0,
            loss_type="dapo",
            epsilon=0.2,
            epsilon_high=0.28,
            temperature=1.0,
            use_cpu=not torch.cuda.is_available(),
            bf16=False,
            gradient_checkpointing=False,
            disable_dropout=True,
            logging_steps=1000,
            save_strategy="no",
            report_to="none",
            shuffle_dataset=False,
        )
        trainer = TRLTrainer(
            model=policy.model,
            reward_funcs=reward,
            args=config,
            train_dataset=dataset,
            processing_class=policy.tokenizer,
            callbacks=[Clock()],
        )
        trainer.train()
    return list(zip(times, tokens, strict=False))[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="embedded | tiny | hub id")
    parser.add_argument("--tasks", type=int, default=4, help="groups per step")
    parser.add_argument("--group", type=int, default=4, help="completions per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3, help="steps per run (first is warm-up)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating ours/TRL rounds")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    results: dict[str, list[tuple[float, int]]] = {"ours": [], "trl": []}
    for round_ in range(args.rounds):
        for name, fn in (("ours", run_ours), ("trl", run_trl)):
            torch.manual_seed(round_)
            steps = fn(args)
            results[name] += steps
            print(
                f"round {round_} {name}: " + ", ".join(f"{t:.1f}s/{n} tok" for t, n in steps),
                flush=True,
            )
    print(
        f"\nGRPO step, {args.model}, {args.tasks} tasks x {args.group} completions, "
        f"<= {args.max_new_tokens} new tokens, CPU threads {torch.get_num_threads()}"
    )
    print(f"{'':8}{'s/step (median)':>18}{'tokens/s (median)':>20}{'steps':>8}")
    summary = {}
    for name, steps in results.items():
        secs = statistics.median(t for t, _ in steps)
        tps = statistics.median(n / t for t, n in steps)
        summary[name] = (secs, tps)
        print(f"{name:8}{secs:>18.2f}{tps:>20.0f}{len(steps):>8}")
    (o_s, o_t), (t_s, t_t) = summary["ours"], summary["trl"]
    print(f"ratio ours/TRL: time per step {o_s / t_s:.2f}x, tokens/s {o_t / t_t:.2f}x")


if __name__ == "__main__":
    main()
