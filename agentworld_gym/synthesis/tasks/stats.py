"""Task statistics along six dimensions, per L1 category: ``agentworld tasks stats``.

The dimensions, measured on each task's gold solution:

- ``tool_calls``: calls in the gold chain;
- ``distinct_tools``: different tools among them;
- ``chain_depth``: the longest chain of calls each using an earlier call's output
  (``$<step>`` references; programs record the depth of their data flow);
- ``control_flow``: control-flow constructs of the solution (loop, branch, filter, join,
  aggregate, conditional write);
- ``writes``: calls of write tools;
- ``answer_type``: what the final answer carries (number, text, mixed, none).

Hand-written tasks without synthesis metadata are measured from their gold chain alone.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.synthesis.tasks.candidate import ref_depth

NUMERIC = ("tool_calls", "distinct_tools", "chain_depth", "control_flow", "writes")
DIMENSIONS = (*NUMERIC, "answer_type")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass
class TaskRow:
    env_id: str
    l1: str
    task_id: str
    kind: str
    split: str
    long_horizon: bool
    dims: dict[str, Any] = field(default_factory=dict)


def measure(task: TaskSpec, writes: set[str]) -> dict[str, Any]:
    """The six dimensions of one task (``writes``: names of the env's write tools)."""
    calls = (task.gold or {}).get("calls", [])
    diff = task.difficulty or {}
    return {
        "tool_calls": len(calls),
        "distinct_tools": len({c["name"] for c in calls}),
        "chain_depth": int(diff.get("depth") or ref_depth(calls)),
        "control_flow": len(diff.get("control_flow") or []),
        "writes": sum(1 for c in calls if c["name"] in writes),
        "answer_type": diff.get("answer_type") or _answer_type(task.reference_answer),
    }


def _answer_type(answer: str) -> str:
    text = (answer or "").strip()
    if not text or text.lower().rstrip(".!") in ("done", "ok", "deleted", "created"):
        return "none"
    numbers = _NUMBER.findall(text)
    words = re.findall(r"[A-Za-z]{3,}", text)
    if numbers and len(words) <= 3:
        return "number"
    return "mixed" if numbers else "text"


def collect(specs: list[EnvSpec], split: str = "all") -> list[TaskRow]:
    rows = []
    for spec in specs:
        writes = {t.name for t in spec.tools if t.kind != "read"}
        l1 = spec.taxonomy.get("l1", "unclassified") or "unclassified"
        for task in spec.tasks_in(split):
            rows.append(
                TaskRow(
                    spec.id,
                    l1,
                    task.id,
                    task.kind,
                    task.split,
                    bool((task.difficulty or {}).get("long_horizon")),
                    measure(task, writes),
                )
            )
    return rows


def summarize(rows: list[TaskRow]) -> dict[str, dict[str, Any]]:
    """Per L1 category (and ``all``): task count, mean and max of each numeric dimension,
    the answer-type distribution, and the kinds."""
    groups: dict[str, list[TaskRow]] = defaultdict(list)
    for r in rows:
        groups[r.l1].append(r)
        groups["all"].append(r)
    out: dict[str, dict[str, Any]] = {}
    for l1 in sorted(groups, key=lambda k: (k == "all", k)):
        members = groups[l1]
        entry: dict[str, Any] = {"tasks": len(members), "envs": len({r.env_id for r in members})}
        for dim in NUMERIC:
            values = [r.dims[dim] for r in members]
            entry[dim] = {"mean": round(statistics.fmean(values), 2), "max": max(values)}
        entry["answer_type"] = dict(Counter(r.dims["answer_type"] for r in members))
        entry["kinds"] = dict(Counter(r.kind for r in members))
        entry["long_horizon"] = sum(r.long_horizon for r in members)
        out[l1] = entry
    return out


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    head = (
        f"{'L1 category':<40} {'envs':>5} {'tasks':>6} {'calls':>6} {'tools':>6} "
        f"{'depth':>6} {'flow':>5} {'writes':>6}  answer types"
    )
    lines = [head, "-" * len(head)]
    for l1, e in summary.items():
        answers = ", ".join(f"{k} {v}" for k, v in sorted(e["answer_type"].items()))
        lines.append(
            f"{l1[:40]:<40} {e['envs']:>5} {e['tasks']:>6} "
            + " ".join(
                f"{e[d]['mean']:>6.2f}" if d != "control_flow" else f"{e[d]['mean']:>5.2f}"
                for d in NUMERIC
            )
            + f"  {answers}"
        )
    return "\n".join(lines)


def plot(rows: list[TaskRow], out: Path) -> list[Path]:
    """Two PNGs: mean of each dimension per L1 category, and each dimension's distribution."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    summary = {k: v for k, v in summarize(rows).items() if k != "all"}
    cats = list(summary)
    labels = [c if len(c) <= 22 else c[:21] + "…" for c in cats]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    for ax, dim in zip(axes.flat, DIMENSIONS, strict=True):
        if dim == "answer_type":
            types = sorted({t for e in summary.values() for t in e["answer_type"]})
            bottom = [0.0] * len(cats)
            for t in types:
                vals = [summary[c]["answer_type"].get(t, 0) / summary[c]["tasks"] for c in cats]
                ax.bar(labels, vals, bottom=bottom, label=t)
                bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
            ax.legend(fontsize=7)
            ax.set_ylabel("share of tasks")
        else:
            ax.bar(labels, [summary[c][dim]["mean"] for c in cats], color="tab:blue")
            ax.set_ylabel("mean per task")
        ax.set_title(dim.replace("_", " "))
        ax.tick_params(axis="x", rotation=60, labelsize=7)
    fig.suptitle(f"Task statistics per L1 category ({len(rows)} tasks)")
    fig.tight_layout()
    means = out / "task_stats_by_l1.png"
    fig.savefig(means, dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    for ax, dim in zip(axes.flat, DIMENSIONS, strict=True):
        values = [r.dims[dim] for r in rows]
        if dim == "answer_type":
            counts = Counter(values)
            ax.bar(list(counts), list(counts.values()), color="tab:green")
        else:
            for kind in sorted({r.kind for r in rows}):
                ax.hist(
                    [r.dims[dim] for r in rows if r.kind == kind],
                    alpha=0.6,
                    label=kind,
                    bins=range(0, max(values, default=0) + 2),
                )
            ax.legend(fontsize=7)
        ax.set_title(dim.replace("_", " "))
        ax.set_ylabel("tasks")
    fig.suptitle("Distribution of each dimension, by task kind")
    fig.tight_layout()
    hists = out / "task_stats_distributions.png"
    fig.savefig(hists, dpi=110)
    plt.close(fig)
    return [means, hists]
