"""The benchmark scripts run in a tiny mode and print their tables (no timing is asserted:
speed belongs to the benchmarks, not to the tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

from benchlib import Series, _strip, table  # noqa: E402


def _run(*argv: str) -> str:
    proc = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_series_summary_and_table():
    s = Series("op")
    for i in range(1, 101):
        s.add(i * 1000, i * 2000)
    row = s.summary()
    assert row["n"] == 100 and row["cpu_med"] == 50.5 and row["wall_p95"] == 192.0
    assert "| op " in table([row, Series("empty").summary()])


def test_compare_strips_its_own_options():
    argv = ["--n", "3", "--compare", "/x", "--ab-rounds=2", "--json", "out.json", "--pin"]
    assert _strip(argv, {"--compare": True, "--ab-rounds": True, "--json": True}) == [
        "--n",
        "3",
        "--pin",
    ]


def test_env_speed_tiny():
    out = _run(str(BENCH / "env_speed.py"), "--n", "3", "--tools", "2")
    assert "step read" in out and "final answer + verify rubric" in out and "load:" in out


def test_workload_tiny_skips_tau2_cleanly(tmp_path):
    out = _run(str(BENCH / "workload.py"), "--envs", "2", "--rounds", "1", "--tau2", str(tmp_path))
    assert "notion: read step" in out and "catalog (2 envs): whole episode" in out
    assert "tau2-bench: skipped" in out
    assert "tau2-bench: skipped (no --tau2" in _run(
        str(BENCH / "workload.py"), "--envs", "0", "--rounds", "1"
    )


@pytest.mark.parametrize(
    "script",
    [
        "env_speed.py",
        "workload.py",
        "catalog_speed.py",
        "tau2_workload.py",
        "grpo_step.py",
        "grpo_ray_rollouts.py",
        "sft_prefix.py",
    ],
)
def test_help(script):
    assert "usage:" in _run(str(BENCH / script), "--help")


def test_catalog_speed_tiny():
    out = _run(str(BENCH / "catalog_speed.py"), "--sample", "3", "--imports", "1")
    assert "gym.make max over" in out and "target < 100 MB" in out


def test_sft_prefix_tiny():
    out = _run(
        str(BENCH / "sft_prefix.py"),
        *("--model", "tiny", "--rows", "3", "--prefix", "40", "--suffix", "12", "--repeats", "1"),
    )
    assert "| plain/shared |" in out and "shared prefix 40 tokens (saves 80 of" in out
