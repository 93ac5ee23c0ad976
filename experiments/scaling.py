"""Environment scaling: held-out-environment success against the number of training
environments, at equal training steps.

    python experiments/scaling.py                      # CPU: 4 / 12 / all (36) training envs
    python experiments/scaling.py 'env_pool.rule.max_train_envs=2,8,null'
    python experiments/scaling.py --config-name scaling_gpu   # a real model on a GPU

A Hydra multirun (``conf/scaling.yaml``): each job is the main job
(:func:`algorithms.pipeline.run`) on the first ``k`` training environments of the catalog
rule's seeded order (the pools are nested, the held-out environments and category the same for
every ``k``), with the same SFT and GRPO steps. When the sweep ends, :class:`ScalingPlot`
collects every job's held-out success with its 95% bootstrap interval into
``scaling.json``, ``scaling.md`` and ``scaling.png`` in the sweep folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from hydra.experimental.callback import Callback  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from algorithms.pipeline import register_configs, run  # noqa: E402

register_configs()

SETS = ("held-out envs", "held-out category")
"""Report rows whose success the curve plots (the names :mod:`algorithms.heldout` gives)."""


def collect(sweep_dir: Path) -> list[dict[str, Any]]:
    """One point per finished job: training envs, and each held-out set's success and CI."""
    points = []
    for summary_path in sorted(Path(sweep_dir).glob("*/summary.json")):
        job = summary_path.parent
        report_path = job / "eval_report.json"
        if not report_path.is_file():
            continue
        summary = json.loads(summary_path.read_text())
        report = json.loads(report_path.read_text())
        point: dict[str, Any] = {"job": job.name, "train_envs": len(summary["env_ids"])}
        for name, row in report.items():
            key = next((s for s in SETS if name.startswith(s)), None)
            if key is not None and "trained" in row:
                keys = ("success", "ci95", "episodes", "gold_nll", "gold_nll_ci95")
                point[key] = {k: row["trained"][k] for k in keys if k in row["trained"]}
        points.append(point)
    return sorted(points, key=lambda p: p["train_envs"])


def write(points: list[dict[str, Any]], sweep_dir: Path) -> str:
    """``scaling.json``, ``scaling.md`` and ``scaling.png``; returns the markdown table."""
    sweep_dir = Path(sweep_dir)
    (sweep_dir / "scaling.json").write_text(json.dumps(points, indent=2))
    sets = [k for k in SETS if any(k in p for p in points)]
    nll = [k for k in sets if any("gold_nll" in p.get(k, {}) for p in points)]
    head = [*sets, *(f"{k}: gold NLL" for k in nll)]
    lines = ["| training envs | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for p in points:
        cells = []
        for key in sets:
            v = p.get(key)
            cells.append(
                "-"
                if v is None
                else f"{v['success']:.1%} [{v['ci95'][0]:.1%}, {v['ci95'][1]:.1%}] "
                f"(n={v['episodes']})"
            )
        for key in nll:
            v = p.get(key, {})
            cells.append(
                f"{v['gold_nll']:.3f} [{v['gold_nll_ci95'][0]:.3f}, {v['gold_nll_ci95'][1]:.3f}]"
                if "gold_nll" in v
                else "-"
            )
        lines.append(f"| {p['train_envs']} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    (sweep_dir / "scaling.md").write_text(table + "\n")
    _plot(points, sweep_dir / "scaling.png")
    return table


def _plot(points: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nll = [k for k in SETS if any("gold_nll" in p.get(k, {}) for p in points)]
    fig, axes = plt.subplots(
        1, 1 + bool(nll), figsize=(6 + 5 * bool(nll), 4), constrained_layout=True, squeeze=False
    )
    _curves(axes[0][0], points, list(SETS), "success", "held-out success after training")
    axes[0][0].set_ylim(0, 1)
    if nll:
        _curves(axes[0][1], points, nll, "gold_nll", "held-out gold loss per assistant token")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _curves(ax: Any, points: list[dict[str, Any]], keys: list[str], value: str, label: str) -> None:
    """One line per held-out set: ``value`` against training envs, with its 95% interval
    (``ci95`` for success, ``<value>_ci95`` otherwise)."""
    ci = "ci95" if value == "success" else f"{value}_ci95"
    for key in keys:
        rows = [p for p in points if value in p.get(key, {})]
        if not rows:
            continue
        ys = [p[key][value] for p in rows]
        low = [y - p[key][ci][0] for y, p in zip(ys, rows, strict=True)]
        high = [p[key][ci][1] - y for y, p in zip(ys, rows, strict=True)]
        xs = [p["train_envs"] for p in rows]
        ax.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=4, label=key)
    ax.set_xscale("log")
    ax.set_xticks(sorted({p["train_envs"] for p in points}), minor=False)
    ax.set_xticks([], minor=True)
    ax.xaxis.set_major_formatter("{x:.0f}")
    ax.set_xlabel("training environments (equal steps)")
    ax.set_ylabel(f"{label} (95% CI)")
    ax.grid(alpha=0.3)
    ax.legend()


class ScalingPlot(Callback):
    """Hydra callback: draws the scaling curve when the multirun ends."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        table = write(collect(sweep_dir), sweep_dir)
        print(f"\nHeld-out success vs training environments ({sweep_dir}):\n{table}")


@hydra.main(version_base="1.3", config_path="../conf", config_name="scaling")
def main(cfg: DictConfig) -> float | None:
    summary = run(OmegaConf.to_object(cfg), Path(HydraConfig.get().runtime.output_dir))
    return summary.get("trained/held-out envs/success")


if __name__ == "__main__":
    main()
