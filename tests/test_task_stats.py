"""``agentworld tasks stats``, ``synth tasks`` and ``synth export-sft`` end to end on a copy."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import orjson
import pytest
from test_synth_tasks import make_op_env

from agentworld_gym.cli import main
from agentworld_gym.registry import build_index, read_index
from agentworld_gym.spec import EnvSpec
from agentworld_gym.synthesis.tasks import synthesize_tasks
from agentworld_gym.synthesis.tasks.stats import DIMENSIONS, collect, format_table, summarize


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A one-environment catalog root (with a hand-written task that must survive)."""
    spec = make_op_env()
    mine = synthesize_tasks(spec, n=2, seed=9)[0]
    spec.tasks = [dataclasses.replace(mine, provenance={"author": "person"})]
    spec.save(tmp_path / "tracker")
    build_index(tmp_path)
    return tmp_path


def _synth(root: Path, *extra: str) -> int:
    return main(
        [
            "synth",
            "tasks",
            "--env",
            "tracker",
            "--root",
            str(root),
            "--n",
            "10",
            "--seed",
            "4",
            "-q",
            *extra,
        ]
    )


def test_synth_tasks_writes_reproducibly_and_keeps_other_tasks(catalog, tmp_path, capsys):
    assert _synth(catalog) == 0  # dry run
    assert len(json.loads((catalog / "tracker" / "tasks.json").read_text())) == 1
    capsys.readouterr()
    assert _synth(catalog, "--write") == 0
    out = capsys.readouterr().out
    totals = json.loads(out[out.index("{") :])
    assert totals["tasks"] >= 8 and 0 < totals["acceptance"] <= 1 and totals["rejections"]
    first = (catalog / "tracker" / "tasks.json").read_bytes()
    tasks = orjson.loads(first)
    assert tasks[0]["provenance"] == {"author": "person"}
    assert read_index(catalog)[0].n_tasks == len(tasks)
    assert _synth(catalog, "--write", "--workers", "1") == 0  # rerun replaces, same bytes
    assert (catalog / "tracker" / "tasks.json").read_bytes() == first


def test_stats_six_dimensions_table_and_plots(catalog, tmp_path, capsys):
    _synth(catalog, "--write")
    spec = EnvSpec.load(catalog / "tracker")
    rows = collect([spec])
    assert rows and set(rows[0].dims) == set(DIMENSIONS)
    summary = summarize(rows)
    assert set(summary) == {"L1-10 Productivity & Collaboration", "all"}
    entry = summary["all"]
    assert entry["tasks"] == len(spec.tasks)
    assert entry["tool_calls"]["mean"] >= 1 and entry["control_flow"]["max"] >= 2
    assert "L1-10" in format_table(summary)
    capsys.readouterr()
    out = tmp_path / "plots"
    assert main(["tasks", "stats", "--root", str(catalog), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "tasks" in printed and "answer types" in printed
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == 2 and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_export_sft_writes_openai_chats_of_train_tasks(catalog, tmp_path):
    _synth(catalog, "--write")
    out = tmp_path / "sft.jsonl"
    assert main(["synth", "export-sft", "--root", str(catalog), "--out", str(out)]) == 0
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    spec = EnvSpec.load(catalog / "tracker")
    assert len(lines) == len(spec.tasks_in("train"))
    for rec in lines:
        assert rec["split"] == "train"
        msgs = rec["messages"]
        assert [m["role"] for m in msgs[:2]] == ["system", "user"]
        assert msgs[-1]["role"] == "assistant" and msgs[-1]["content"]
        calls = [c for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls", [])]
        task = spec.task(rec["task_id"])
        assert [c["function"]["name"] for c in calls] == [c["name"] for c in task.gold["calls"]]
        assert all(isinstance(c["function"]["arguments"], str) for c in calls)
        tool_ids = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
        assert tool_ids == [c["id"] for c in calls]
        assert "submit" in {t["function"]["name"] for t in rec["tools"]}
