"""Readable outputs: the per-round diagnosis report (Markdown + PNG) and run-level plots.

matplotlib is imported lazily (it is a ``train`` extra); without it the reports are written
without plots and a warning says why.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.evolution.diagnosis import Diagnosis, class_totals
from agentworld_gym.suites import SuiteRow, format_rows

logger = logging.getLogger(__name__)


def _pyplot() -> Any | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        warnings.warn(
            "matplotlib is not installed: reports are written without plots "
            "(pip install matplotlib)",
            stacklevel=3,
        )
        return None
    return plt


def _bar(plt: Any, path: Path, labels: list[str], values: list[float], title: str, xlabel: str):
    fig, ax = plt.subplots(figsize=(8, 0.4 * max(3, len(labels)) + 1))
    ax.barh(labels[::-1], values[::-1], color="#4c72b0")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def diagnosis_plots(diagnosis: Diagnosis, folder: Path) -> list[Path]:
    """Success by category, failure classes, weak-environment scores (PNG)."""
    plt = _pyplot()
    if plt is None:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    cats = diagnosis.categories
    if cats:
        paths.append(
            _bar(
                plt,
                folder / "success_by_category.png",
                [c.l1 for c in cats],
                [c.success_rate for c in cats],
                f"Round {diagnosis.round}: success rate by L1 category",
                "success rate",
            )
        )
    totals = class_totals(diagnosis).most_common()
    if totals:
        paths.append(
            _bar(
                plt,
                folder / "failure_classes.png",
                [k for k, _ in totals],
                [v for _, v in totals],
                f"Round {diagnosis.round}: failures by primary class",
                "episodes",
            )
        )
    top = [e for e in diagnosis.envs if e.score > 0][:15]
    if top:
        paths.append(
            _bar(
                plt,
                folder / "weak_envs.png",
                [e.env_id.split("/")[-1] for e in top],
                [e.score for e in top],
                f"Round {diagnosis.round}: weakness score (top {len(top)})",
                "score",
            )
        )
    return paths


def diagnosis_markdown(diagnosis: Diagnosis, plots: list[Path], base: Path) -> str:
    d = diagnosis
    lines = [
        f"# Diagnosis — round {d.round}",
        "",
        f"{d.episodes} evaluation episodes, success rate {d.success_rate:.1%}, "
        f"global failure rate p0 = {d.global_failure_rate:.3f}.",
        "",
        f"Weakness score: `{d.formula}` with alpha = {d.parameters.get('alpha')}, "
        f"kappa = {d.parameters.get('kappa')}.",
        "",
    ]
    lines += [f"![{p.stem}]({p.relative_to(base).as_posix()})" for p in plots]
    lines += ["", "## By category", "", "| L1 | episodes | success | mean reward |"]
    lines.append("|---|---|---|---|")
    for c in d.categories:
        lines.append(f"| {c.l1} | {c.episodes} | {c.success_rate:.1%} | {c.mean_reward:.2f} |")
    lines += ["", "## Failure classes", "", "| class | episodes |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in class_totals(d).most_common()]
    lines += [
        "",
        "## Environments (weakest first)",
        "",
        "| env | L1 | n | success | F | rate | evidence | score | weak |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in d.envs:
        mark = "yes" if e.env_id in d.weak_envs else ""
        lines.append(
            f"| {e.env_id} | {e.l1} | {e.episodes} | {e.success_rate:.0%} | "
            f"{e.failure_mass:.2f} | {e.smoothed_failure_rate:.2f} | {e.evidence:.2f} | "
            f"{e.score:.3f} | {mark} |"
        )
    weak_tools = [t for t in d.tools if t.weakness > 0]
    if weak_tools:
        lines += ["", "## Tools with errors or implicated in failures", ""]
        lines += ["| env | tool | calls | errors | implicated |", "|---|---|---|---|---|"]
        for t in sorted(weak_tools, key=lambda t: -t.weakness)[:30]:
            errors = ", ".join(f"{k} {v}" for k, v in t.errors.items()) or "-"
            lines.append(f"| {t.env_id} | {t.tool} | {t.calls} | {errors} | {t.implicated} |")
    lines += ["", "## Guidelines for weak environments", ""]
    for gid, g in d.guidelines.items():
        lines += [
            f"### {gid}",
            "",
            f"- focus tools: {', '.join(g.focus_tools) or '-'}",
            f"- patterns: {', '.join(g.patterns) or '-'}",
            f"- walk length {g.walk_length}, writes {g.writes}, distractors {g.distractors}, "
            f"program share {g.program_share:.0%}",
        ]
        lines += [f"- {note}" for note in g.notes]
        if g.text:
            lines += ["", g.text]
        lines.append("")
    return "\n".join(lines) + "\n"


def write_diagnosis_report(diagnosis: Diagnosis, folder: str | Path, plots: bool = True) -> Path:
    """``diagnosis.json``, ``diagnosis.md`` and ``plots/*.png`` in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    diagnosis.save(folder / "diagnosis.json")
    paths = diagnosis_plots(diagnosis, folder / "plots") if plots else []
    md = folder / "diagnosis.md"
    md.write_text(diagnosis_markdown(diagnosis, paths, folder), encoding="utf-8")
    return md


# -- run level ----------------------------------------------------------------------------
def round_summaries(run_dir: str | Path) -> list[dict[str, Any]]:
    """The ``summary.json`` of every finished round of a run, in round order."""
    run_dir = Path(run_dir)
    out = []
    for path in sorted(run_dir.glob("round_*/summary.json")):
        out.append(orjson.loads(path.read_bytes()))
    return out


def success_table(summaries: list[dict[str, Any]]) -> tuple[list[str], list[list[float | None]]]:
    """Categories and, per round, the success rate of each (``None`` when not in the arena)."""
    cats = sorted({c for s in summaries for c in s.get("success_by_category", {})})
    rows = [[s.get("success_by_category", {}).get(c) for c in cats] for s in summaries]
    return cats, rows


def format_run_report(run_dir: str | Path) -> str:
    """Per-round success by category as a text table (then, per round, the held-out suite's
    table: tasks, success and 95% interval per suite category)."""
    summaries = round_summaries(run_dir)
    if not summaries:
        return f"{run_dir}: no finished round yet"
    cats, rows = success_table(summaries)
    width = max([len(c) for c in cats] + [8])
    head = f"{'category':<{width}} " + " ".join(f"{'r' + str(s['round']):>6}" for s in summaries)
    lines = [head, "-" * len(head)]
    for j, cat in enumerate(cats):
        cells = " ".join(f"{'-':>6}" if r[j] is None else f"{r[j]:>6.1%}" for r in rows)
        lines.append(f"{cat:<{width}} {cells}")
    overall = " ".join(f"{s['success_rate']:>6.1%}" for s in summaries)
    lines += ["-" * len(head), f"{'overall':<{width}} {overall}", ""]
    for s in summaries:
        evolved = ", ".join(s.get("new_versions", [])) or "none"
        lines.append(f"round {s['round']}: weak {s.get('weak_envs', [])}; new versions: {evolved}")
    for s in summaries:
        held_out = s.get("held_out")
        if held_out:
            rows = [SuiteRow.from_json(row) for row in held_out["rows"]]
            title = f"round {s['round']}: held-out suite {held_out['suite']}"
            lines += ["", format_rows(title, rows)]
    return "\n".join(lines)


def plot_run(run_dir: str | Path, out: str | Path | None = None) -> Path | None:
    """Per-round success rate by category (one line per category) as a PNG."""
    summaries = round_summaries(run_dir)
    plt = _pyplot()
    if plt is None or not summaries:
        return None
    cats, rows = success_table(summaries)
    rounds = [s["round"] for s in summaries]
    fig, ax = plt.subplots(figsize=(8, 5))
    for j, cat in enumerate(cats):
        points = [(r, row[j]) for r, row in zip(rounds, rows, strict=True) if row[j] is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=cat)
    ax.plot(rounds, [s["success_rate"] for s in summaries], "k--", lw=2, label="overall")
    ax.set_xlabel("round")
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xticks(rounds)
    ax.set_title("Evaluation success by L1 category")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    path = Path(out) if out else Path(run_dir) / "success_by_round.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
