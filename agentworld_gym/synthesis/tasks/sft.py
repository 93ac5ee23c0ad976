"""Gold trajectories as chat-format SFT data: ``agentworld synth export-sft``.

Each line of the JSONL file is one task's gold solution replayed through the environment
(:func:`agentworld_gym.replay.gold_trajectory`): OpenAI ``messages`` — system, user request,
assistant turns with ``tool_calls``, ``tool`` results, the final assistant answer — and the
``tools`` (function schemas, ``submit`` included) the model saw. A task whose gold does not
replay to reward 1.0 is skipped and counted. Only the train split is exported by default, so
test tasks never reach training data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.replay import gold_trajectory
from agentworld_gym.spec import EnvSpec


@dataclass
class ExportReport:
    envs: int = 0
    written: int = 0
    skipped: int = 0


def trajectories(
    spec: EnvSpec, split: str = "train", kinds: tuple[str, ...] = ()
) -> Iterable[dict[str, Any]]:
    """One SFT record per task of ``spec`` whose gold replays to 1.0; a
    ``{"task_id", "skipped": True}`` marker for one whose gold does not."""
    tasks = [t for t in spec.tasks_in(split) if not kinds or t.kind in kinds]
    if not tasks:
        return
    env = AgentWorldEnv(spec, split="all", max_turns=10_000)
    tools = env.reset(options={"task_id": tasks[0].id})[1]["tools"]
    for task in tasks:
        messages = gold_trajectory(env, task)
        if messages is None:
            yield {"task_id": task.id, "skipped": True}
            continue
        yield {
            "env_id": spec.id,
            "task_id": task.id,
            "split": task.split,
            "kind": task.kind,
            "messages": messages,
            "tools": tools,
        }


def export(
    specs: Iterable[EnvSpec],
    out: IO[bytes] | Path,
    split: str = "train",
    kinds: tuple[str, ...] = (),
) -> ExportReport:
    """Write every exportable gold trajectory of ``specs`` to ``out`` (JSON lines)."""
    report = ExportReport()
    fh = open(out, "wb") if isinstance(out, Path) else out  # noqa: SIM115 - closed below
    try:
        for spec in specs:
            report.envs += 1
            for record in trajectories(spec, split, kinds):
                if record.get("skipped"):
                    report.skipped += 1
                    continue
                fh.write(orjson.dumps(record) + b"\n")
                report.written += 1
    finally:
        if isinstance(out, Path):
            fh.close()
    return report
