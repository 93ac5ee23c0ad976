"""Held-out evaluation sets and the report a researcher reads: success with 95% bootstrap
intervals per set, base vs SFT vs SFT+GRPO, and paired differences between them.

The sets, each never trained on:

- ``train-envs (test tasks)``: the ``test`` split of the training environments;
- ``held-out envs``: every fitting task of environments training never sees
  (:mod:`algorithms.catalog_split`), from the training categories;
- ``held-out category``: the same for the L1 category held out whole;
- ``<env> (test)`` for each of ``eval.extra_envs`` (default notion's ``test`` split), with its
  own token budget (notion's system prompt alone is ~5k tokens).

Success is the verifiers' ``success`` (every criterion met). Intervals are percentile
bootstraps over episodes; differences between two models are paired (same tasks, same order),
which is the honest test of what one training phase added.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_gym.errors import ConfigError
from agentworld_gym.suites import bootstrap_interval
from algorithms.catalog_split import Part
from algorithms.evaluate import (
    EvalConfig,
    EvalResult,
    evaluate,
    play_batched,
    select_tasks,
    summarise,
)
from algorithms.pool import EnvPoolConfig, TaskPool, TaskRef

PAIRS = (("sft", "base"), ("trained", "sft"), ("trained", "base"))
"""Differences the report shows (``a - b``) when both models were evaluated."""


@dataclass
class EvalSet:
    """One held-out set: its pool, the split it draws from, and its eval settings."""

    name: str
    pool: TaskPool
    config: EvalConfig
    owned: bool = True
    """Close the pool after use (the training pool is closed by its owner)."""


def eval_sets(pool: TaskPool, config: EvalConfig) -> list[EvalSet]:
    """The held-out sets of a run (see the module docstring)."""
    try:
        parts = {Part(p) for p in config.parts}
    except ValueError as exc:
        raise ConfigError(f"eval.parts: {exc}; choose from {[p.value for p in Part]}") from exc
    own = config
    if pool.split is not None and config.train_max_tasks is not None:
        own = dataclasses.replace(config, max_tasks=config.train_max_tasks)
    sets = []
    if pool.split is None or Part.train in parts:
        sets.append(EvalSet("train-envs (test tasks)", pool, own, owned=False))
    if pool.split is not None and config.heldout:
        rule = pool.config.rule
        for part, name in ((Part.heldout_envs, "held-out envs"), (Part.heldout_category, "")):
            if part not in parts or not pool.split.part(part):
                continue
            name = name or f"held-out category ({pool.split.category})"
            held = TaskPool(
                dataclasses.replace(pool.config, rule=dataclasses.replace(rule, part=part))
            )
            sets.append(EvalSet(name, held, dataclasses.replace(config, split="all")))
    for env in config.extra_envs:
        extra = TaskPool(EnvPoolConfig(envs=[env]))
        budget = max(config.max_episode_tokens, config.extra_max_episode_tokens)
        extra_cfg = dataclasses.replace(config, max_episode_tokens=budget)
        sets.append(EvalSet(f"{env} ({config.split})", extra, extra_cfg))
    return sets


def evaluate_sets(model: Any, sets: list[EvalSet]) -> dict[str, EvalResult]:
    """Evaluate ``model`` on every set; ``{set name: result}``.

    A token generator plays the episodes of all sets that share rollout settings (and no
    environment) as one sequence of ``eval.batch_size``-row batches, so no set ends in a
    half-empty batch. On CPU keep batches small (16): a decoding step's attention cost per
    row grew ~15x from 14 to 116 rows, once a layer's keys/values outgrew the cache.
    """
    if not (hasattr(model, "generate") and hasattr(model, "chat_format")):
        return {s.name: evaluate(model, s.pool, s.config)[0] for s in sets}
    results: dict[str, EvalResult] = {}
    for group in _batchable(sets):
        tasks = {s.name: _tasks(s) for s in group}
        router = _Router({t.env_id: s for s in group for t in tasks[s.name]})
        everything = [t for s in group for t in tasks[s.name]]
        trajs = play_batched(model, router, everything, "", group[0].config)
        for s in group:
            mine, trajs = trajs[: len(tasks[s.name])], trajs[len(tasks[s.name]) :]
            results[s.name] = summarise(mine, s.pool)
            if s.config.gold_nll and not hasattr(model, "model"):
                warnings.warn(
                    f"eval.gold_nll needs the model's logits; {type(model).__name__} has no "
                    "torch model, so the gold loss is not measured",
                    stacklevel=2,
                )
            elif s.config.gold_nll:
                losses = gold_nll(model, s)
                results[s.name].episode_gold_nll = losses
                results[s.name].gold_nll = sum(losses) / len(losses) if losses else None
    return {s.name: results[s.name] for s in sets}


def gold_nll(generator: Any, s: EvalSet) -> list[float]:
    """Teacher-forced loss of ``s``'s gold trajectories under ``generator``'s model: for each
    evaluated task whose gold replays, the mean negative log-likelihood of the assistant
    tokens (calls and answer) given everything before them, encoded exactly as SFT and
    rollouts encode them. Lower is better; success needs every token of a call right, so a
    model learns to transfer here first.

    Tasks of one environment share their system prompt (the tool list, most of each
    sequence): it is run once and its keys/values reused for each task's rest, as decoding
    does (the same values up to floating-point reassociation)."""
    import torch

    from agentworld_gym.llm.transformers_backend import cache_layers, common_prefix
    from algorithms.sft import encode_gold

    model = generator.model
    device = next(model.parameters()).device
    tasks = select_tasks(s.pool, s.config)
    examples = encode_gold(generator.chat_format, s.pool, s.config.split, 1 << 30, tasks)
    out: list[float] = [0.0] * len(examples)
    by_env: dict[str, list[int]] = {}
    for i, example in enumerate(examples):
        by_env.setdefault(example.env_id, []).append(i)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for rows in by_env.values():
                ids = [examples[i].token_ids for i in rows]
                first = min(examples[i].mask.index(1) for i in rows)  # no loss before it
                shared = max(0, min(first, *(common_prefix(ids[0], x) for x in ids)) - 1)
                cache, last = None, None
                if shared > 0:
                    prefix = torch.tensor([ids[0][:shared]], device=device)
                    output = model(input_ids=prefix, use_cache=True)
                    cache, last = cache_layers(output.past_key_values), output.logits[0, -1:]
                for i in rows:
                    out[i] = _gold_loss(model, examples[i], shared, cache, last, device)
    finally:
        model.train(was_training)
    return out


def _gold_loss(model: Any, example: Any, shared: int, cache: Any, last: Any, device: Any) -> float:
    """Mean loss over ``example``'s assistant tokens, its first ``shared`` tokens already in
    ``cache`` (per-layer keys/values, left as they are; their last logits are ``last``)."""
    import torch

    from agentworld_gym.llm.transformers_backend import make_cache

    ids, mask = example.token_ids, example.mask
    rest = torch.tensor([ids[shared:]], device=device)
    if cache is None:
        logits = model(input_ids=rest).logits[0, :-1]
    else:
        positions = torch.arange(shared, len(ids), device=device)[None]
        output = model(input_ids=rest, past_key_values=make_cache(cache), position_ids=positions)
        logits = torch.cat([last, output.logits[0, :-1]])
    logp = torch.log_softmax(logits.float(), dim=-1)
    target = torch.tensor(ids[max(shared, 1) :], device=device)
    picked = logp.gather(1, target[:, None])[:, 0]
    keep = torch.tensor(mask[max(shared, 1) :], dtype=torch.bool, device=device)
    return float(-picked[keep].mean())


def _tasks(s: EvalSet) -> list[TaskRef]:
    return [t for t in select_tasks(s.pool, s.config) for _ in range(s.config.episodes_per_task)]


def _batchable(sets: list[EvalSet]) -> list[list[EvalSet]]:
    """Sets grouped by equal rollout settings, a set whose environments another set of the
    group already has starting a group of its own."""
    groups: list[list[EvalSet]] = []
    for s in sets:
        key = _rollout_key(s.config)
        envs = set(s.pool.env_ids)
        for group in groups:
            if (
                _rollout_key(group[0].config) == key
                and s.config.suite is None
                and not any(envs & set(g.pool.env_ids) for g in group)
            ):
                group.append(s)
                break
        else:
            groups.append([s])
    return groups


def _rollout_key(c: EvalConfig) -> tuple:
    return (
        c.max_turns,
        c.max_new_tokens,
        c.max_episode_tokens,
        c.temperature,
        c.seed,
        c.suite,
        c.constrain_calls,
    )


class _Router:
    """Looks like a pool to :func:`run_episodes`: each env id is served by its own set's pool
    and split (the ``split`` argument is ignored)."""

    def __init__(self, owner: dict[str, EvalSet]) -> None:
        self.owner = owner

    def acquire(self, env_id: str, split: str) -> Any:
        s = self.owner[env_id]
        return s.pool.acquire(env_id, s.config.split)

    def release(self, env: Any, env_id: str, split: str) -> None:
        s = self.owner[env_id]
        s.pool.release(env, env_id, s.config.split)


def close_sets(sets: list[EvalSet]) -> None:
    for s in sets:
        if s.owned:
            s.pool.close()


def report(results: dict[str, dict[str, EvalResult]], resamples: int = 2000) -> dict[str, Any]:
    """``{set: {model: {success, ci95, episodes}, "diff": {"a-b": {mean, ci95}}}}``."""
    out: dict[str, Any] = {}
    sets = list(dict.fromkeys(s for per_model in results.values() for s in per_model))
    for name in sets:
        row: dict[str, Any] = {}
        for label, per_set in results.items():
            r = per_set.get(name)
            if r is None:
                continue
            row[label] = {
                "success": r.success,
                "ci95": bootstrap_interval(r.episode_success, resamples=resamples),
                "episodes": r.episodes,
                "envs": len(r.per_env),
                "mean_reward": r.mean_reward,
                "tool_call_valid": r.tool_call_valid,
                "answered": r.answered,
            }
            if r.gold_nll is not None:
                row[label]["gold_nll"] = r.gold_nll
                row[label]["gold_nll_ci95"] = bootstrap_interval(
                    r.episode_gold_nll, resamples=resamples
                )
        diffs = {}
        for a, b in PAIRS:
            ra, rb = results.get(a, {}).get(name), results.get(b, {}).get(name)
            if ra is None or rb is None or ra.episodes != rb.episodes:
                continue
            diffs[f"{a}-{b}"] = {
                "mean": ra.success - rb.success,
                "ci95": bootstrap_interval(
                    ra.episode_success, rb.episode_success, resamples=resamples
                ),
            }
        row["diff"] = diffs
        out[name] = row
    return out


def markdown_table(rep: dict[str, Any]) -> str:
    """The report as a markdown table: success [95% CI] per model, paired differences."""
    labels = list(dict.fromkeys(k for row in rep.values() for k in row if k != "diff"))
    diffs = list(dict.fromkeys(k for row in rep.values() for k in row["diff"]))
    head = ["set", "episodes (envs)", *labels, *(f"{d} (paired)" for d in diffs)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in rep.items():
        first = next(v for k, v in row.items() if k != "diff")
        cells = [name, f"{first['episodes']} ({first['envs']})"]
        for label in labels:
            v = row.get(label)
            cells.append("-" if v is None else _pct(v["success"], v["ci95"]))
        for d in diffs:
            v = row["diff"].get(d)
            cells.append("-" if v is None else _pct(v["mean"], v["ci95"], signed=True))
        lines.append("| " + " | ".join(cells) + " |")
    nll = [(n, row) for n, row in rep.items() if any("gold_nll" in row.get(k, {}) for k in labels)]
    if nll:
        lines += [
            "",
            "Gold-trajectory loss (mean NLL per assistant token, 95% CI; lower is better):",
            "",
            "| set | " + " | ".join(labels) + " |",
            "|---|" + "---|" * len(labels),
        ]
        for name, row in nll:
            cells = [
                f"{v['gold_nll']:.3f} [{v['gold_nll_ci95'][0]:.3f}, {v['gold_nll_ci95'][1]:.3f}]"
                if "gold_nll" in (v := row.get(label, {}))
                else "-"
                for label in labels
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pct(value: float, ci: tuple[float, float], signed: bool = False) -> str:
    sign = "+" if signed else ""
    return f"{value:{sign}.1%} [{ci[0]:{sign}.1%}, {ci[1]:{sign}.1%}]"


def write(rep: dict[str, Any], out_dir: Path) -> str:
    """``eval_table.md``, ``eval_report.json`` and ``eval.png``; returns the table."""
    out_dir = Path(out_dir)
    table = markdown_table(rep)
    (out_dir / "eval_table.md").write_text(table + "\n")
    (out_dir / "eval_report.json").write_text(json.dumps(rep, indent=2))
    plot(rep, out_dir / "eval.png")
    return table


def write_results(results: dict[str, dict[str, EvalResult]], out_dir: Path) -> Path:
    """``eval_results.json``: every model's per-set results, per-episode successes included,
    so that evaluations from separate runs on the same sets can be paired later
    (:func:`read_results`, then :func:`report`)."""
    path = Path(out_dir) / "eval_results.json"
    data = {label: {s: r.to_dict() for s, r in per.items()} for label, per in results.items()}
    path.write_text(json.dumps(data, indent=1))
    return path


def read_results(path: Path) -> dict[str, dict[str, EvalResult]]:
    """The results :func:`write_results` wrote."""
    data = json.loads(Path(path).read_text())
    return {label: {s: EvalResult(**r) for s, r in per.items()} for label, per in data.items()}


def plot(rep: dict[str, Any], path: Path) -> Path:
    """Grouped bars: success per set and model, with the 95% bootstrap intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(k for row in rep.values() for k in row if k != "diff"))
    names = list(rep)
    width = 0.8 / max(1, len(labels))
    fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(names) + 2), 4.2), constrained_layout=True)
    for i, label in enumerate(labels):
        xs, ys, err = [], [], [[], []]
        for j, name in enumerate(names):
            v = rep[name].get(label)
            if v is None:
                continue
            xs.append(j + i * width)
            ys.append(v["success"])
            err[0].append(max(0.0, v["success"] - v["ci95"][0]))
            err[1].append(max(0.0, v["ci95"][1] - v["success"]))
        ax.bar(xs, ys, width, yerr=err, capsize=3, label=label)
    ax.set_xticks([j + width * (len(labels) - 1) / 2 for j in range(len(names))])
    ax.set_xticklabels(names, rotation=12, ha="right")
    ax.set_ylabel("success (95% bootstrap CI)")
    ax.set_ylim(0, 1)
    ax.legend()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
