"""Metrics out of a run: a local JSONL file, wandb (offline by default), PNG plots, and
progress bars.

wandb never asks for a login or the network unless ``logger.wandb=online``: ``offline`` writes
the run under the output folder (``wandb sync`` uploads it later), ``disabled`` skips wandb.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

CURVES = {
    "reward": "reward/mean",
    "success": "reward/success",
    "KL to reference": "loss/kl_ref",
    "entropy": "loss/entropy",
    "response tokens": "rollout/response_tokens",
    "tool-call validity": "rollout/tool_call_valid",
    "reward > 0 without a successful call (hacking guard)": "reward/without_ok_call",
    "refused pay: no call, or an answer never looked up": "reward/unpaid",
    "sampled turns cut at max_new_tokens": "rollout/cut_turns",
}
"""Panel title → metric key of the training-curves figure."""


class WandbMode(StrEnum):
    """Where wandb writes (members are lower-case: ``logger.wandb=disabled``)."""

    offline = "offline"
    """Local files under the run folder; no login, no network."""
    online = "online"
    """Stream to the wandb server (needs a login)."""
    disabled = "disabled"
    """No wandb at all."""


@dataclass
class LoggerConfig:
    """Where metrics go (the Hydra ``logger`` group)."""

    wandb: WandbMode = WandbMode.offline
    """wandb mode; ``offline`` never touches the network."""
    project: str = "agentworld-gym"
    """wandb project."""
    entity: str | None = None
    """wandb entity (team or user); ``None`` = the default."""
    run_name: str | None = None
    """wandb run name; ``None`` = the output folder's name."""
    tags: list[str] = field(default_factory=list)
    """wandb tags."""
    jsonl: bool = True
    """Write every logged row to ``metrics.jsonl`` in the run folder."""
    plots: bool = True
    """Write PNG plots of the training curves at the end."""
    progress: bool = True
    """Show tqdm progress bars."""


class Tracker:
    """Log metric rows to every configured sink; ``close()`` draws the plots.

    Args:
        config: the logger settings.
        out_dir: the run folder.
        run_config: the full experiment config (a plain dict), stored with the run.
    """

    def __init__(self, config: LoggerConfig, out_dir: Path, run_config: dict | None = None):
        self.config = config
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.out_dir / "metrics.jsonl"
        self.rows: list[dict[str, Any]] = []
        if self.path.is_file():  # a resumed run keeps its history
            with self.path.open() as fh:
                self.rows = [json.loads(line) for line in fh if line.strip()]
        self.eta: JobEta | None = None
        """Set by the entry point to print the whole job's ETA as phases get timed."""
        self._wandb = None
        if config.wandb is not WandbMode.disabled:
            self._wandb = self._init_wandb(run_config or {})

    def _init_wandb(self, run_config: dict) -> Any:
        try:
            import wandb
        except ImportError:
            logger.warning("wandb is not installed; logging to metrics.jsonl only")
            return None
        os.environ.setdefault("WANDB_SILENT", "true")
        run_id_file = self.out_dir / "wandb_run_id"
        run_id = run_id_file.read_text().strip() if run_id_file.is_file() else None
        run = wandb.init(
            mode=self.config.wandb.value,
            project=self.config.project,
            entity=self.config.entity,
            name=self.config.run_name or self.out_dir.name,
            tags=list(self.config.tags),
            dir=str(self.out_dir),
            config=run_config,
            id=run_id,
            resume="allow",
        )
        run_id_file.write_text(run.id)
        return run

    def log(self, metrics: dict[str, Any], step: int) -> None:
        """Record one row of metrics at ``step``."""
        row = {"step": step, **{k: _plain(v) for k, v in metrics.items()}}
        self.rows.append(row)
        if self.config.jsonl:
            with self.path.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
        if self._wandb is not None:
            self._wandb.log(metrics, step=step)
        if self.eta is not None and (line := self.eta.observe(metrics)):
            print(line, flush=True)

    def summary(self, values: dict[str, Any]) -> None:
        """Final numbers of the run (wandb summary and ``summary.json``)."""
        (self.out_dir / "summary.json").write_text(json.dumps(values, indent=2, default=str))
        if self._wandb is not None:
            for key, value in values.items():
                self._wandb.summary[key] = value

    def progress(self, total: int, desc: str, initial: int = 0) -> Any:
        """A tqdm bar (or a silent stand-in when progress bars are off)."""
        from tqdm.auto import tqdm

        if self.eta is not None:
            self.eta.expect(desc.lower(), total - initial)
        return tqdm(total=total, desc=desc, initial=initial, disable=not self.config.progress)

    def close(self) -> list[Path]:
        """Draw the plots and finish the wandb run; returns the PNG paths."""
        paths = plot_curves(self.rows, self.out_dir) if self.config.plots else []
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None
        return paths


class JobEta:
    """The whole job's remaining time, printed when a phase's first step has been timed.

    Args:
        plan: phase → number of units still to run (``{"eval": 3, "sft": 12, "grpo": 8}``).
            Units are timed from logged rows: ``perf/eval_*_s`` (one evaluation),
            ``perf/sft_step_s`` and ``perf/step_s`` (one GRPO step).
    """

    KEYS = {"perf/sft_step_s": "sft", "perf/step_s": "grpo"}

    def __init__(self, plan: dict[str, int]) -> None:
        self.left = {k: v for k, v in plan.items() if v > 0}
        self.seconds: dict[str, list[float]] = {}

    def _phase(self, key: str) -> str | None:
        if key in self.KEYS:
            return self.KEYS[key]
        return "eval" if key.startswith("perf/eval_") and key.endswith("_s") else None

    def expect(self, phase: str, units: int) -> None:
        """Add a phase whose size became known (``units`` still to run)."""
        if units > 0:
            self.left[phase] = max(self.left.get(phase, 0), units)

    def observe(self, metrics: dict[str, Any]) -> str | None:
        """Count the units ``metrics`` reports; returns the ETA line when one is due."""
        due = False
        for key, value in metrics.items():
            phase = self._phase(key)
            if phase is None or not isinstance(value, int | float) or phase not in self.left:
                continue
            self.left[phase] -= 1
            due |= not self.seconds.get(phase)
            self.seconds.setdefault(phase, []).append(float(value))
        return self.line() if due else None

    def line(self) -> str:
        known = untimed = 0.0
        parts = []
        for phase, n in self.left.items():
            if n <= 0:
                continue
            if self.seconds.get(phase):
                per = sum(self.seconds[phase]) / len(self.seconds[phase])
                known += n * per
                parts.append(f"{n} {phase} x {per:.0f} s")
            else:
                untimed += n
                parts.append(f"{n} {phase} not yet timed")
        eta = f"ETA: ~{known / 60:.1f} min left" + (" + untimed phases" if untimed else "")
        return f"{eta} ({', '.join(parts) or 'done'})"


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def plot_curves(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """``training_curves.png`` (one panel per :data:`CURVES` entry) from logged rows."""
    train = [r for r in rows if r.get("phase", "grpo") == "grpo" and "reward/mean" in r]
    if not train:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows_n = math.ceil(len(CURVES) / 3)
    fig, axes = plt.subplots(rows_n, 3, figsize=(13, 3.5 * rows_n), constrained_layout=True)
    for ax in axes.flat[len(CURVES) :]:
        ax.axis("off")
    for ax, (title, key) in zip(axes.flat, CURVES.items(), strict=False):
        points = [(r["step"], r[key]) for r in train if r.get(key) is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, marker="o", markersize=3)
        else:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("GRPO step")
        ax.grid(alpha=0.3)
    path = Path(out_dir) / "training_curves.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
