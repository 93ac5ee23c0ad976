"""``dtype: auto`` and ``threads: auto`` follow what the machine really does fast."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from agentworld_gym.errors import ConfigError  # noqa: E402
from agentworld_gym.llm import hardware  # noqa: E402
from algorithms.tracking import JobEta  # noqa: E402


@pytest.fixture
def cpu_only(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(hardware.platform, "machine", lambda: "x86_64")


def _flags(monkeypatch, bf16: bool, amx: bool) -> None:
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)


def test_auto_is_float32_on_a_cpu_without_native_bf16(cpu_only, monkeypatch):
    _flags(monkeypatch, bf16=False, amx=False)
    assert hardware.resolve_dtype("auto") is torch.float32
    assert hardware.resolve_dtype(None, "cpu") is torch.float32
    assert "emulated" in hardware.auto_dtype("cpu").reason


@pytest.mark.parametrize(("bf16", "amx"), [(True, False), (False, True)])
def test_auto_is_bfloat16_on_a_cpu_with_avx512_bf16_or_amx(cpu_only, monkeypatch, bf16, amx):
    _flags(monkeypatch, bf16=bf16, amx=amx)
    assert hardware.resolve_dtype("auto") is torch.bfloat16


def test_explicit_cpu_device_ignores_a_present_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(hardware.platform, "machine", lambda: "x86_64")
    _flags(monkeypatch, bf16=False, amx=False)
    assert hardware.resolve_dtype("auto", "cpu") is torch.float32


def test_cuda_without_bf16_falls_back_to_float16(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    assert hardware.resolve_dtype("auto", "cuda:0") is torch.float16


def test_cpu_without_flags_benchmarks_once_and_caches(cpu_only, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path))
    monkeypatch.setattr(hardware.platform, "machine", lambda: "aarch64")
    times = {torch.float32: 1.0, torch.bfloat16: 5.0}
    calls = []
    monkeypatch.setattr(hardware, "_time_matmul", lambda dt: calls.append(dt) or times[dt])
    assert hardware.resolve_dtype("auto") is torch.float32
    assert hardware.resolve_dtype("auto") is torch.float32
    assert len(calls) == 2  # one measurement of each dtype, then the cached verdict
    assert (tmp_path / "cpu_bf16.json").is_file()


def test_explicit_dtypes_and_bad_names():
    assert hardware.resolve_dtype("bfloat16") is torch.bfloat16
    assert hardware.resolve_dtype("float32") is torch.float32
    with pytest.raises(ConfigError, match="Unknown dtype 'fp8'"):
        hardware.resolve_dtype("fp8")


@pytest.mark.parametrize(
    ("cores", "load", "threads"),
    [(2, 0.1, 2), (2, 0.6, 2), (2, 0.8, 1), (2, 1.0, 1), (2, 5.0, 1), (16, 3.2, 13)],
)
def test_auto_threads_leaves_the_loaded_cores_alone(cores, load, threads):
    assert hardware.auto_threads(cores, load) == threads


def test_set_threads_rejects_nonsense():
    with pytest.raises(ConfigError, match="threads must be >= 1"):
        hardware.set_threads(0)


def test_job_eta_reports_the_whole_job_once_per_newly_timed_phase():
    eta = JobEta({"eval": 3, "grpo": 8})
    line = eta.observe({"perf/eval_base_s": 60.0})
    assert line == "ETA: ~2.0 min left + untimed phases (2 eval x 60 s, 8 grpo not yet timed)"
    eta.expect("sft", 12)
    assert "11 sft x 10 s" in eta.observe({"perf/sft_step_s": 10.0})  # first SFT step
    assert eta.observe({"perf/sft_step_s": 14.0}) is None  # later steps stay quiet
    line = eta.observe({"perf/step_s": 30.0, "reward/mean": 0.5})
    # 2 evals x 60 s + 10 SFT steps x 12 s + 7 GRPO steps x 30 s = 450 s
    assert line.startswith("ETA: ~7.5 min left (")


def test_refresh_threads_follows_the_others_load_only_in_auto_mode(monkeypatch):
    torch.set_num_threads(1)
    hardware.set_threads(1)
    assert hardware.refresh_threads(min_interval_s=0) is None  # a fixed count stays fixed
    monkeypatch.setattr(hardware, "busy_cores", lambda seconds=0.25: 0.0)
    monkeypatch.setattr(hardware, "_cores", lambda: 2)
    monkeypatch.setattr(hardware.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(hardware.os, "sysconf", lambda name: 100)
    marks = iter([(0, 0, 0.0), (150, 200, 0.5)])  # 1 s on 2 cpus: 1.5 busy, 0.5 of it ours
    monkeypatch.setattr(hardware, "_cpu_mark", lambda: next(marks))
    assert hardware.set_threads(None) == 2
    assert hardware.refresh_threads(min_interval_s=0) == 1  # the others keep a core busy
    assert torch.get_num_threads() == 1
    hardware.set_threads(1)
