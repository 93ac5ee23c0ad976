"""Log-probabilities of the policy's own tokens, computing shared prefixes once.

The trajectories of a GRPO group start with the same prompt (system prompt, tool schemas,
task), and every task of an environment shares its system prompt and tools. Run naively, a
batch pays for that prefix once per trajectory in the forward *and* the backward pass. Here a
micro-batch's longest common prefix is run once (batch 1, with gradients), its key/value cache
is broadcast to the rows, and only the rows' suffixes run batched: the same loss and the same
gradient (autograd sums the prefix's contributions), a fraction of the compute.

Only positions that predict a policy token go through the output layer (``lm_head``): prompt
and tool-result positions never pay for the vocabulary projection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class MicroBatch:
    """Rows sharing ``prefix_len`` leading tokens, right-padded after it."""

    rows: list[int]
    """Indices of the trajectories in the caller's list."""
    prefix: torch.Tensor
    """``(P,)`` the shared leading tokens (possibly empty)."""
    suffix: torch.Tensor
    """``(B, S)`` each row's tokens after the prefix, right-padded."""
    attention: torch.Tensor
    """``(B, S)`` 1 on real suffix tokens."""
    targets: torch.Tensor
    """``(B, S)`` the token each suffix position predicts (the next one; 0 where none)."""
    target_mask: torch.Tensor
    """``(B, S)`` 1 where that next token is a policy token."""
    sample_logprobs: torch.Tensor
    """``(B, S)`` the sampler's log-probability of that token (0 where unknown)."""

    @property
    def policy_tokens(self) -> int:
        return int(self.target_mask.sum())


def make_micro_batches(
    token_ids: list[list[int]],
    masks: list[list[int]],
    micro_batch_size: int,
    share_prefix: bool = True,
    pad_id: int = 0,
    sample_logprobs: list[list[float]] | None = None,
) -> list[MicroBatch]:
    """Split trajectories into micro-batches, rows with long common prefixes together.

    Rows are sorted by their tokens so that a group's (and an environment's) trajectories sit
    side by side, and a micro-batch closes early when the next row shares less than half of
    its first row's prompt (another environment): rows that share little are not worth
    batching on a CPU, and sharing is what saves compute. Each micro-batch's prefix stops at
    least one token before its first policy token (that position's hidden state predicts it).
    """
    order = sorted(range(len(token_ids)), key=lambda i: token_ids[i])
    chunks: list[list[int]] = []
    for i in order:
        if chunks and len(chunks[-1]) < micro_batch_size:
            head = chunks[-1][0]
            prompt = masks[head].index(1) if 1 in masks[head] else len(masks[head])
            if not share_prefix or _common_prefix([token_ids[head], token_ids[i]]) >= prompt // 2:
                chunks[-1].append(i)
                continue
        chunks.append([i])
    batches = []
    for rows in chunks:
        prefix_len = 0
        if share_prefix:
            first_policy = min(masks[i].index(1) if 1 in masks[i] else len(masks[i]) for i in rows)
            common = _common_prefix([token_ids[i] for i in rows])
            prefix_len = max(0, min(common, first_policy - 1))
        width = max(len(token_ids[i]) for i in rows) - prefix_len
        suffix = torch.full((len(rows), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        targets = torch.zeros((len(rows), width), dtype=torch.long)
        target_mask = torch.zeros((len(rows), width), dtype=torch.long)
        sampled = torch.zeros((len(rows), width), dtype=torch.float32)
        for r, i in enumerate(rows):
            ids, mask = token_ids[i], masks[i]
            n = len(ids) - prefix_len
            suffix[r, :n] = torch.tensor(ids[prefix_len:])
            attention[r, :n] = 1
            targets[r, : n - 1] = torch.tensor(ids[prefix_len + 1 :])
            target_mask[r, : n - 1] = torch.tensor(mask[prefix_len + 1 :])
            if sample_logprobs is not None and n > 1:
                sampled[r, : n - 1] = torch.tensor(sample_logprobs[i][prefix_len + 1 :])
        prefix = torch.tensor(token_ids[rows[0]][:prefix_len], dtype=torch.long)
        batches.append(MicroBatch(rows, prefix, suffix, attention, targets, target_mask, sampled))
    return batches


def _common_prefix(seqs: list[list[int]]) -> int:
    first, n = seqs[0], min(len(s) for s in seqs)
    for j in range(n):
        token = first[j]
        if any(s[j] != token for s in seqs):
            return j
    return n


def _parts(model: Any) -> tuple[Any, Any, str]:
    """``(decoder, output layer, cache keyword)`` of a causal LM, peft-wrapped or not."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = base.get_decoder()
    params = inspect.signature(decoder.forward).parameters
    return (
        decoder,
        base.get_output_embeddings(),
        "cache" if "cache" in params else "past_key_values",
    )


def hidden_states(model: Any, batch: MicroBatch) -> torch.Tensor:
    """``(B, S, H)`` final hidden states of the suffix positions (prefix run once)."""
    from transformers import DynamicCache

    from agentworld_gym.llm.transformers_backend import cache_layers

    decoder, _, cache_kw = _parts(model)
    device = batch.suffix.device
    rows, width = batch.suffix.shape
    prefix_len = batch.prefix.numel()
    if prefix_len == 0:
        out = decoder(input_ids=batch.suffix, attention_mask=batch.attention, use_cache=False)
        return out.last_hidden_state
    prefix_out = decoder(input_ids=batch.prefix[None].to(device), use_cache=True)
    cache = getattr(prefix_out, "cache", None)
    if cache is None:
        cache = prefix_out.past_key_values
    layers = cache_layers(cache)
    shared = DynamicCache(
        ddp_cache_data=[(k.expand(rows, -1, -1, -1), v.expand(rows, -1, -1, -1)) for k, v in layers]
    )
    attention = torch.cat([batch.attention.new_ones(rows, prefix_len), batch.attention], dim=1)
    positions = torch.arange(prefix_len, prefix_len + width, device=device)[None].expand(rows, -1)
    out = decoder(
        input_ids=batch.suffix,
        attention_mask=attention,
        position_ids=positions,
        use_cache=True,
        **{cache_kw: shared},
    )
    return out.last_hidden_state


def token_logprobs(
    model: Any,
    batch: MicroBatch,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk: int = 2048,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(B, S)`` log π(target) at policy positions (0 elsewhere) and, optionally, the
    per-token entropy there (no grad). Logits are divided by ``temperature`` as in sampling."""
    logp, entropy, _ = _head_logprobs(model, batch, temperature, with_entropy, chunk, ())
    return logp, entropy


def token_logprobs_probed(
    model: Any, batch: MicroBatch, probe: Sequence[int], chunk: int = 2048
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`token_logprobs` (temperature 1) and ``(B, S)`` the probability the model puts,
    at each policy position, on any token of ``probe`` (summed; no grad; 0 off policy
    positions). SFT probes the tokens that open a tool call: at the answer's first position
    one minus that is the probability of answering rather than calling again."""
    logp, _, probed = _head_logprobs(model, batch, 1.0, False, chunk, tuple(probe))
    assert probed is not None
    return logp, probed


def _head_logprobs(
    model: Any,
    batch: MicroBatch,
    temperature: float,
    with_entropy: bool,
    chunk: int,
    probe: tuple[int, ...],
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    _, head, _ = _parts(model)
    hidden = hidden_states(model, batch)  # (B, S, H)
    where = batch.target_mask.bool()
    selected = hidden[where]  # (n, H)
    targets = batch.targets[where]  # (n,)
    picked, entropies, probed = [], [], []
    probe_ids = torch.tensor(probe, dtype=torch.long, device=hidden.device) if probe else None
    for start in range(0, selected.shape[0], chunk):
        logits = head(selected[start : start + chunk]).float()  # (c, V)
        if temperature != 1.0:
            logits = logits / temperature
        logp = torch.log_softmax(logits, dim=-1)
        picked.append(logp.gather(-1, targets[start : start + chunk, None])[:, 0])
        if with_entropy:
            with torch.no_grad():
                entropies.append(-(logp.exp() * logp).sum(-1))
        if probe_ids is not None:
            with torch.no_grad():
                probed.append(logp[:, probe_ids].exp().sum(-1))
    out = hidden.new_zeros(batch.target_mask.shape, dtype=torch.float32)
    out = out.masked_scatter(where, torch.cat(picked)) if picked else out
    entropy = None
    if with_entropy:
        entropy = torch.zeros(batch.target_mask.shape, dtype=torch.float32)
        if entropies:
            entropy[where.cpu()] = torch.cat(entropies).cpu()
    probe_p = None
    if probe:
        probe_p = torch.zeros(batch.target_mask.shape, dtype=torch.float32)
        if probed:
            probe_p[where.cpu()] = torch.cat(probed).cpu()
    return out, entropy, probe_p
