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
is a warm-up and is left out.

Each step is printed as it ends (a run cut short still shows what it did), then a summary:
seconds per step and processed tokens per second under two accountings of the same batch,
for both trainers: "shared prefix" counts each group's prompt once (what our update computes:
a group's completions share the prompt's forward pass) and "per completion" counts the prompt
once per completion (what TRL computes, and its own tokens/s). ``--trainers ours-noshare``
adds our trainer with prefix sharing switched off.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "experiments")]

import torch  # noqa: E402
from benchlib import parser_for  # noqa: E402
from demo_envs import ENVS, ensure_demo_catalog  # noqa: E402

import algorithms.grpo.trainer as grpo_trainer  # noqa: E402
from algorithms.grpo.config import GRPOConfig  # noqa: E402
from algorithms.grpo.rollout import RolloutConfig  # noqa: E402
from algorithms.grpo.trainer import GRPOTrainer  # noqa: E402
from algorithms.models import ModelConfig, load_policy  # noqa: E402
from algorithms.pool import EnvPoolConfig, TaskPool  # noqa: E402

Step = tuple[float, int, int]
"""(seconds, tokens with each group's prompt once, tokens with it once per completion)."""


def accountings(prompts: list[int], completions: list[int], group: int) -> tuple[int, int]:
    """Processed tokens of a batch laid out as consecutive groups of ``group`` completions:
    (prompt shared by its group, prompt recomputed per completion)."""
    per_completion = sum(prompts) + sum(completions)
    shared = sum(prompts[g] for g in range(0, len(prompts), group)) + sum(completions)
    return shared, per_completion


def report(name: str, k: int, step: Step) -> None:
    """One step's numbers, printed at once."""
    secs, shared, per = step
    print(
        f"{name} step {k}{' (warm-up)' if k == 0 else ''}: {secs:.1f} s, "
        f"{shared} tokens shared-prefix ({shared / secs:.0f}/s), "
        f"{per} per-completion ({per / secs:.0f}/s)",
        flush=True,
    )


def make_pool() -> TaskPool:
    root = ensure_demo_catalog()
    ids = [f"AgentWorld/demo-{name}-v0" for name in ENVS]
    return TaskPool(EnvPoolConfig(catalogs=[str(root)], envs=ids))


def model_config(args) -> ModelConfig:
    dtype = "float32" if args.model == "tiny" else "bfloat16"
    return ModelConfig(name=args.model, dtype=dtype, lora=False, tool_format="hermes")


def run_ours(args, share_prefix: bool = True, name: str = "ours") -> list[Step]:
    pool = make_pool()
    policy = load_policy(model_config(args))
    config = GRPOConfig(
        steps=args.steps,
        tasks_per_step=args.tasks,
        group_size=args.group,
        lr=1e-6,
        micro_batch_size=args.tasks * args.group,
        share_prefix=share_prefix,
        rollout=RolloutConfig(
            max_turns=1, max_new_tokens=args.max_new_tokens, max_episode_tokens=8192
        ),
        checkpoint_every=0,
    )
    trainer = GRPOTrainer(policy, pool, config)
    seen: list = []
    run_episodes = grpo_trainer.run_episodes

    def recording(*a, **k):  # the step's trajectories, for the token accountings
        seen[:] = run_episodes(*a, **k)
        return seen

    grpo_trainer.run_episodes = recording
    out = []
    try:
        for k in range(args.steps):
            t0 = time.perf_counter()
            trainer.step()
            elapsed = time.perf_counter() - t0
            prompts = [t.mask.index(1) if 1 in t.mask else len(t.mask) for t in seen]
            completions = [len(t.token_ids) - p for t, p in zip(seen, prompts, strict=True)]
            out.append((elapsed, *accountings(prompts, completions, args.group)))
            report(name, k, out[-1])
    finally:
        grpo_trainer.run_episodes = run_episodes
    return out[1:]


def run_trl(args) -> list[Step]:
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
    steps: list[Step] = []
    tokens: list[tuple[int, int]] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            shared, per = tokens[-1] if tokens else (0, 0)
            steps.append((time.perf_counter() - self.t0, shared, per))
            report("trl", len(steps) - 1, steps[-1])

    def reward(completions, completion_ids=None, prompts=None, **kwargs):
        lengths = [len(fmt.encode(p)) for p in prompts]  # prompts repeat per completion
        tokens.append(accountings(lengths, [len(c) for c in completion_ids], args.group))
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
    return steps[1:]


def main() -> None:
    parser = parser_for(__doc__)
    parser.add_argument("--model", default="embedded", help="embedded | tiny | hub id")
    parser.add_argument("--tasks", type=int, default=4, help="groups per step")
    parser.add_argument("--group", type=int, default=4, help="completions per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3, help="steps per run (first is warm-up)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating ours/TRL rounds")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--trainers", default="ours,trl", help="comma list of ours, ours-noshare, trl"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    runners = {
        "ours": run_ours,
        "ours-noshare": lambda a: run_ours(a, share_prefix=False, name="ours-noshare"),
        "trl": run_trl,
    }
    names = [n for n in args.trainers.split(",") if n]
    results: dict[str, list[Step]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        for name in names:
            torch.manual_seed(round_)
            print(f"round {round_} {name}:", flush=True)
            results[name] += runners[name](args)
            summarise(results, args)  # so far: a run cut short still leaves a summary
    print("\nfinal:")
    summarise(results, args)


def summarise(results: dict[str, list[Step]], args) -> None:
    """Medians per trainer under both accountings, and ratios to TRL where it ran."""
    print(
        f"GRPO step, {args.model}, {args.tasks} tasks x {args.group} completions, "
        f"<= {args.max_new_tokens} new tokens, CPU threads {torch.get_num_threads()}"
    )
    print(
        f"{'':14}{'s/step':>9}{'tok/s shared prefix':>21}{'tok/s per completion':>22}{'steps':>7}"
    )
    summary = {}
    for name, steps in results.items():
        if not steps:
            continue
        secs = statistics.median(t for t, _, _ in steps)
        shared = statistics.median(s / t for t, s, _ in steps)
        per = statistics.median(p / t for t, _, p in steps)
        summary[name] = (secs, shared, per)
        print(f"{name:14}{secs:>9.2f}{shared:>21.0f}{per:>22.0f}{len(steps):>7}")
    if "trl" in summary:
        t_s, t_sh, t_pc = summary["trl"]
        for name, (s, sh, pc) in summary.items():
            if name != "trl":
                print(
                    f"ratio {name}/TRL: time per step {s / t_s:.2f}x, tokens/s shared prefix "
                    f"{sh / t_sh:.2f}x, per completion {pc / t_pc:.2f}x"
                )
    print(flush=True)


if __name__ == "__main__":
    main()
