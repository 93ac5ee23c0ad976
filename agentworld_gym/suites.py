"""Evaluation suites: named sets of held-out environments, reported per category with a CI.

A suite (``bfcl-multi-turn``, ``bfcl-multi-turn-base``, ``tau2-retail``, ...) names the
environments to evaluate and the category each one reports under. ``agentworld eval --suite
NAME`` and the ``eval.suite`` setting of ``experiments/train.py`` run one. A benchmark adds
its suites by calling :func:`register_suite` from its module's ``register()`` (see
:mod:`agentworld_gym.benchmarks_ext`)::

    from agentworld_gym.suites import register_suite

    def register() -> None:
        register_suite(
            "tau2-retail",
            {"AgentWorld/tau2-retail-v0": "retail"},
            description="τ²-bench retail domain",
            requires=None if tau2_available() else "run agentworld import-tau2 PATH first",
        )

Results are success rates with a 95% Wilson score interval (:func:`wilson_interval`), which
stays inside [0, 1] and is honest for the small counts a ``--limit`` run has.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.errors import ConfigError

__all__ = [
    "Suite",
    "SuiteRow",
    "format_rows",
    "format_suite_table",
    "get_suite",
    "list_suites",
    "register_suite",
    "suite_rows",
    "wilson_interval",
]


@dataclass(frozen=True)
class Suite:
    """A named set of environments evaluated together."""

    name: str
    envs: dict[str, str]
    """Gymnasium id → the category its tasks report under (``base``, ``miss_func``, ...)."""
    description: str = ""
    split: str = "all"
    """Which tasks of each environment (benchmarks are held out whole: ``all``)."""
    requires: str | None = None
    """Why the suite cannot run here and how to fix it (``None``: it can)."""
    meta: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Raise :class:`ConfigError` with :attr:`requires` when the suite cannot run."""
        if self.requires:
            raise ConfigError(f"suite {self.name!r} is not available: {self.requires}")


_SUITES: dict[str, Suite] = {}


def register_suite(
    name: str,
    envs: Mapping[str, str] | Iterable[str],
    *,
    description: str = "",
    split: str = "all",
    requires: str | None = None,
    **meta: Any,
) -> Suite:
    """Register (or replace) an evaluation suite; the one function a benchmark module calls.

    Args:
        name: what users type (``agentworld eval --suite NAME``).
        envs: Gymnasium ids, or a mapping of each id to its category in result tables
            (default: the id without namespace and version).
        description: one line for ``--suite`` listings.
        split: the tasks of each environment to run (``all`` for a held-out benchmark).
        requires: ``None`` when the suite can run; otherwise what is missing and how to get
            it (shown instead of running).
    """
    if not isinstance(envs, Mapping):
        envs = {e: e.split("/")[-1].rsplit("-v", 1)[0] for e in envs}
    suite = Suite(name, dict(envs), description, split, requires, dict(meta))
    _SUITES[name] = suite
    return suite


def list_suites() -> list[Suite]:
    """Every registered suite, by name."""
    return [_SUITES[k] for k in sorted(_SUITES)]


def get_suite(name: str) -> Suite:
    """The suite called ``name`` (an unknown name answers with the closest ones)."""
    suite = _SUITES.get(name)
    if suite is None:
        close = difflib.get_close_matches(name, list(_SUITES), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        known = ", ".join(sorted(_SUITES)) or "none"
        raise ConfigError(f"unknown suite {name!r}.{hint} Known suites: {known}")
    return suite


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95% for ``z=1.96``).

    >>> lo, hi = wilson_interval(8, 10)
    >>> round(lo, 3), round(hi, 3)
    (0.49, 0.943)
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_interval(
    values: Sequence[float],
    paired: Sequence[float] | None = None,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a mean over episodes, or of the mean *difference*
    ``values - paired`` when both were measured on the same episodes' tasks (a paired test:
    the task-to-task noise cancels). Seeded, so a report reprints the same interval.

    >>> bootstrap_interval([0.0] * 50)
    (0.0, 0.0)
    >>> lo, hi = bootstrap_interval([1.0] * 10 + [0.0] * 40)
    >>> 0.08 <= lo < 0.2 < hi <= 0.32
    True
    """
    import numpy as np

    x = np.asarray(values, dtype=float)
    if paired is not None:
        x = x - np.asarray(paired, dtype=float)
    if x.size == 0:
        return 0.0, 1.0
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


@dataclass
class SuiteRow:
    """One category's results (or ``all``)."""

    category: str
    tasks: int = 0
    successes: int = 0
    errors: int = 0

    @property
    def success_rate(self) -> float:
        return self.successes / self.tasks if self.tasks else 0.0

    @property
    def ci95(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.tasks)

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.ci95
        return {
            "category": self.category,
            "tasks": self.tasks,
            "successes": self.successes,
            "success_rate": self.success_rate,
            "ci95": [lo, hi],
            "errors": self.errors,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SuiteRow:
        """The row :meth:`to_json` wrote (the rate and interval are recomputed)."""
        return cls(data["category"], data["tasks"], data["successes"], data.get("errors", 0))


def suite_rows(suite: Suite, results: Iterable[Any]) -> list[SuiteRow]:
    """Rows per category (in the suite's order), then ``all``.

    ``results``: anything with ``env_id``, ``success`` and ``error`` attributes (the
    :class:`~agentworld_gym.integrations.rollout.Trajectory` of an eval run); an episode
    that errored counts as a failure, and in ``errors``.
    """
    rows = {category: SuiteRow(category) for category in dict.fromkeys(suite.envs.values())}
    total = SuiteRow("all")
    for r in results:
        category = suite.envs.get(r.env_id)
        if category is None:
            continue
        for row in (rows[category], total):
            row.tasks += 1
            row.successes += int(bool(r.success))
            row.errors += int(getattr(r, "error", None) is not None)
    return [*rows.values(), total]


def format_suite_table(suite: Suite, results: Iterable[Any]) -> str:
    """A plain-text table: category, tasks, success rate, its 95% Wilson interval, errors."""
    return format_rows(f"suite {suite.name}", suite_rows(suite, results))


def format_rows(title: str, rows: list[SuiteRow]) -> str:
    """:func:`format_suite_table`'s table of ``rows`` under ``title``."""
    width = max([len(r.category) for r in rows] + [12])
    lines = [
        title,
        f"{'category':<{width}} {'tasks':>6} {'success':>8} {'95% CI':>15} {'errors':>6}",
    ]
    for r in rows:
        lo, hi = r.ci95
        ci = f"[{lo:5.1%}, {hi:5.1%}]" if r.tasks else "-"
        lines.append(
            f"{r.category:<{width}} {r.tasks:>6} {r.success_rate:>8.1%} {ci:>15} {r.errors:>6}"
        )
    return "\n".join(lines)
