"""One SFT micro-batch step (forward + backward), each row run whole vs the shared prefix once.

    python benchmarks/sft_prefix.py                      # embedded SmolLM2-135M, 8 rows
    python benchmarks/sft_prefix.py --env AgentWorld/X   # real gold trajectories of one env
    python benchmarks/sft_prefix.py --model tiny --prefix 64 --suffix 24 --repeats 1  # smoke

The warm start batches one environment's gold trajectories together
(``warm_start.group_by_env``), so a micro-batch's rows start with the same ~1,000-token system
prompt (the tool schemas). ``plain`` runs every row whole; ``shared`` (``warm_start.
share_prefix``) runs that prefix once and the rows' suffixes over its expanded key/value
cache. Both compute :func:`algorithms.sft.micro_batch_loss` as ``run_sft`` does, with LoRA
on the top ``--lora-last-layers`` layers as ``conf/train.yaml`` sets it. Runs alternate
(plain, shared, shared, plain, ...) after one untimed warm-up of each, because this machine's
timings drift; the table gives medians and the plain/shared ratio, and the largest
difference between the two paths' losses and gradients (the sharing is exact: float noise).
Without ``--env`` the rows are random tokens shaped like the catalog's gold episodes: a
shared prefix, then per row a user turn, two calls with their tool results and an answer.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

import torch  # noqa: E402
from benchlib import Load, load_line, parser_for  # noqa: E402

from algorithms.models import ModelConfig, Policy, load_policy  # noqa: E402
from algorithms.sft import (  # noqa: E402
    Example,
    SFTConfig,
    call_start_tokens,
    encode_gold,
    micro_batch_loss,
    prefix_tokens_saved,
    sft_micro_batches,
)

TURNS = [("user", 60), ("call", 50), ("tool", 120), ("call", 50), ("tool", 80), ("answer", 40)]
"""A synthetic row's suffix: (role, tokens) as in a 2-call gold episode (~400 tokens)."""


def synthetic(policy: Policy, rows: int, prefix: int, suffix: int, seed: int) -> list[Example]:
    """``rows`` examples over one random ``prefix``; suffix turns scaled to ~``suffix``
    tokens (±10% per row), targets on the assistant turns."""
    rng = random.Random(seed)
    vocab = policy.model.get_input_embeddings().weight.shape[0]
    shared = [rng.randrange(vocab) for _ in range(prefix)]
    scale = suffix / sum(n for _, n in TURNS)
    out = []
    for r in range(rows):
        ids, mask = list(shared), [0] * prefix
        for role, n in TURNS:
            n = max(1, round(n * scale * rng.uniform(0.9, 1.1)))
            ids += [rng.randrange(vocab) for _ in range(n)]
            mask += [int(role in ("call", "answer"))] * n
        out.append(Example("synthetic", f"row{r}", ids, mask))
    return out


def gold(policy: Policy, env: str, rows: int, max_tokens: int) -> list[Example]:
    """The first ``rows`` gold trajectories of ``env``'s training tasks that replay to 1.0."""
    from algorithms.pool import EnvPoolConfig, TaskPool

    pool = TaskPool(EnvPoolConfig(envs=[env], train_split="train"))
    examples = encode_gold(policy.generator.chat_format, pool, "train", max_tokens)
    if not examples:
        sys.exit(f"{env}: no gold trajectory of its train split replays to 1.0")
    return examples[:rows]


def step(policy: Policy, batch: list[Example], share: bool) -> tuple[float, float, dict]:
    """``(wall s, process CPU s, {loss, grads})`` of one micro-batch forward + backward."""
    config = SFTConfig(share_prefix=share, turn_start_weight=5.0, micro_batch_size=len(batch))
    model = policy.model
    model.zero_grad(set_to_none=True)
    model.train()
    w0, c0 = time.perf_counter(), time.process_time()
    micro, weights = sft_micro_batches(batch, config, policy.generator.pad_token_id)
    n_tokens = float(sum(w.sum() for w in weights))
    calls = call_start_tokens(batch)  # probed at the output layer, as run_sft does
    loss_sum = 0.0
    for mb, weight in zip(micro, weights, strict=True):
        loss, _, _ = micro_batch_loss(model, mb, weight, n_tokens, calls)
        loss.backward()
        loss_sum += float(loss.detach())
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return wall, cpu, {"loss": loss_sum, "grads": grads, "micro": micro}


def max_diff(a: dict, b: dict) -> tuple[float, float]:
    """Largest |difference| of the losses, and of any gradient relative to its max |value|."""
    rel = max(
        float((a["grads"][n] - g).abs().max() / g.abs().max().clamp_min(1e-30))
        for n, g in b["grads"].items()
    )
    return abs(a["loss"] - b["loss"]), rel


def main() -> None:
    parser = parser_for(__doc__)
    parser.add_argument("--model", default="embedded", help="embedded | tiny | hub id")
    parser.add_argument("--dtype", default="auto", help="model.dtype (auto: bf16 only if native)")
    parser.add_argument("--lora-last-layers", type=int, default=12)
    parser.add_argument("--rows", type=int, default=8, help="rows of the micro-batch")
    parser.add_argument("--prefix", type=int, default=1000, help="shared prefix tokens")
    parser.add_argument("--suffix", type=int, default=400, help="tokens per row after it")
    parser.add_argument("--env", help="real gold trajectories of this environment instead")
    parser.add_argument(
        "--max-tokens", type=int, default=2048, help="--env: skip longer (warm_start.max_tokens)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each path")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    last = args.lora_last_layers if args.model != "tiny" else None
    policy = load_policy(
        ModelConfig(name=args.model, dtype=args.dtype, lora=True, lora_last_layers=last)
    )
    with torch.no_grad():  # peft starts LoRA B at zero: give the adapters a gradient path
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 1e-3)
    if args.env:
        batch = gold(policy, args.env, args.rows, args.max_tokens)
    else:
        batch = synthetic(policy, args.rows, args.prefix, args.suffix, args.seed)
    dtype = next(policy.model.parameters()).dtype
    lengths = [len(e.token_ids) for e in batch]
    print(
        f"SFT micro-batch step (forward + backward), {args.model} {dtype}, LoRA top {last} "
        f"layers, {len(batch)} rows of {min(lengths)}-{max(lengths)} tokens, "
        f"{sum(sum(e.mask) for e in batch)} targets, CPU {torch.backends.cpu.get_cpu_capability()}"
        f", torch threads {torch.get_num_threads()}",
        flush=True,
    )
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "shared": []}
    results: dict[str, dict] = {}
    for name in ("plain", "shared"):  # warm-up (untimed), and the results to compare
        results[name] = step(policy, batch, name == "shared")[2]
    saved = prefix_tokens_saved(results["shared"]["micro"])
    prefix = results["shared"]["micro"][0].prefix.numel()
    with Load() as load:
        for r in range(args.repeats):
            for name in ("plain", "shared") if r % 2 == 0 else ("shared", "plain"):
                wall, cpu, _ = step(policy, batch, name == "shared")
                times[name].append((wall, cpu))
                print(f"  round {r} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    print(load_line(load.as_dict()))
    forwarded = {"plain": sum(lengths), "shared": sum(lengths) - saved}
    med = {
        n: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
        for n, t in times.items()
    }
    print("\n| path | runs | tokens run | wall med (s) | CPU med (s) |\n|---|---|---|---|---|")
    for name in ("plain", "shared"):
        wall, cpu = med[name]
        print(f"| {name} | {len(times[name])} | {forwarded[name]} | {wall:.2f} | {cpu:.2f} |")
    print(
        f"| plain/shared | | {forwarded['plain'] / forwarded['shared']:.2f}x | "
        f"{med['plain'][0] / med['shared'][0]:.2f}x | {med['plain'][1] / med['shared'][1]:.2f}x |"
    )
    dloss, dgrad = max_diff(results["shared"], results["plain"])
    print(
        f"\nshared prefix {prefix} tokens (saves {saved} of {sum(lengths)}); |loss difference| "
        f"{dloss:.2e} (loss {results['plain']['loss']:.4f}); largest gradient difference "
        f"{dgrad:.2e} of the gradient's max |value|, over {len(results['plain']['grads'])} "
        "trainable tensors"
    )


if __name__ == "__main__":
    main()
