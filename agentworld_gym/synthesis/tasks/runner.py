"""Executing tool calls for synthesis, through the agent's own runtime.

Everything synthesis executes goes through :class:`~agentworld_gym.tools.Toolbox` on a fork of
the environment's database, with the same :class:`~agentworld_gym.tools.ToolContext` an episode
gets, and every result makes the same JSON round trip the agent's observation makes. So a gold
chain that runs here runs identically under :func:`agentworld_gym.replay.replay_gold` — and
nothing here interprets an environment a second way.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentworld_gym.database import Database
from agentworld_gym.env import dumps
from agentworld_gym.errors import SpecError, ToolError
from agentworld_gym.replay import resolve_refs
from agentworld_gym.spec import EnvSpec
from agentworld_gym.tools import Toolbox, ToolContext

PROBE_SHIFT = dt.timedelta(days=3, minutes=17)
"""Clock shift of the second replay: a value that depends on the clock changes under it."""


def loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


@dataclass
class CallOutcome:
    ok: bool
    output: Any
    error: str = ""


@dataclass
class Run:
    """The result of running a chain of calls on a fresh fork."""

    outputs: list[Any]
    db: Database
    error: str = ""
    failed_step: int = -1

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass
class Runner:
    """Runs calls of one environment the way an episode does."""

    spec: EnvSpec
    toolbox: Toolbox = field(init=False)
    clock: dt.datetime = field(init=False)

    def __post_init__(self) -> None:
        self.toolbox = Toolbox(self.spec)
        self.clock = dt.datetime.fromisoformat(self.spec.runtime.clock.replace("Z", "+00:00"))

    @property
    def base(self) -> Database:
        return self.spec.database

    def context(self, task_id: str, probe: bool = False) -> ToolContext:
        """A fresh episode: a fork of the initial state, the env's clock and id scheme.

        ``probe=True`` shifts the clock (and the caller passes another task id), so values that
        depend on either come out different and can be recognised as volatile.
        """
        start = self.clock + (PROBE_SHIFT if probe else dt.timedelta(0))
        return ToolContext(self.base.fork(), self.spec.id, task_id, clock_start=start)

    def call(self, ctx: ToolContext, name: str, arguments: dict[str, Any]) -> CallOutcome:
        """One call; the output as the agent would read it back from the observation."""
        try:
            out = self.toolbox.call(ctx, name, arguments)
        except ToolError as exc:
            return CallOutcome(False, None, f"{type(exc).__name__}: {str(exc)[:200]}")
        return CallOutcome(True, loads(dumps(out)))

    def run(
        self,
        calls: list[dict[str, Any]],
        task_id: str,
        probe: bool = False,
        stop: int | None = None,
    ) -> Run:
        """Run ``calls`` (with ``$step.path`` references) on a fresh fork."""
        ctx = self.context(task_id, probe)
        outputs: list[Any] = []
        for i, call in enumerate(calls[:stop]):
            try:
                arguments = resolve_refs(call.get("arguments", {}), outputs)
            except SpecError as exc:
                return Run(outputs, ctx.db, str(exc), i)
            outcome = self.call(ctx, call["name"], arguments)
            if not outcome.ok:
                return Run(outputs, ctx.db, outcome.error, i)
            outputs.append(outcome.output)
        return Run(outputs, ctx.db)
