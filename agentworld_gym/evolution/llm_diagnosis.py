"""An LLM diagnosis agent: reads failed trajectories and rewrites a weak env's guidelines.

It starts from the rule guidelines (so a model that answers nonsense changes nothing), shows
the model the statistics and a few failed trajectories, and asks for a JSON object with the
same knobs plus a prose ``text`` for the task synthesizer. Values are validated and clamped;
tool names must exist in the environment.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any

import orjson

from agentworld_gym.evolution.diagnosis import EnvStats, ToolStats
from agentworld_gym.evolution.episodes import EpisodeRecord
from agentworld_gym.evolution.protocols import Guidelines
from agentworld_gym.llm.base import LLMBackend
from agentworld_gym.spec import EnvSpec

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You diagnose why a tool-using LLM agent fails in a simulated API environment, and you "
    "advise a task generator where to make harder training tasks. Reply with one JSON object "
    "and nothing else."
)
_JSON = re.compile(r"\{.*\}", re.DOTALL)
PATTERNS = ("lookup", "find", "count", "walk", "update", "create", "aggregate")


class LLMDiagnoser:
    """Refines rule guidelines with an LLM (any :class:`LLMBackend`).

    Args:
        backend: the model that writes the diagnosis.
        max_examples: failed trajectories shown per environment.
        max_chars: characters of each trajectory shown (its end, where it went wrong).
        sampling: per-call sampling overrides (default: temperature 0).
    """

    def __init__(
        self,
        backend: LLMBackend,
        max_examples: int = 3,
        max_chars: int = 3000,
        sampling: dict[str, Any] | None = None,
    ) -> None:
        self.backend = backend
        self.max_examples = max_examples
        self.max_chars = max_chars
        self.sampling = {"temperature": 0.0} if sampling is None else sampling

    def refine(
        self,
        rules: Guidelines,
        stats: EnvStats,
        tools: list[ToolStats],
        failed: list[EpisodeRecord],
        spec: EnvSpec | None,
    ) -> Guidelines:
        """The rule guidelines with the model's corrections; unchanged if it answers badly."""
        prompt = self.prompt(rules, stats, tools, failed, spec)
        reply = self.backend.chat(
            [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
            None,
            **self.sampling,
        )
        names = {t.name for t in spec.tools} if spec is not None else set()
        try:
            return merge(rules, parse_reply(str(reply.get("content") or "")), names)
        except ValueError as exc:
            logger.warning("LLM diagnosis of %s unusable (%s); keeping rules", rules.env_id, exc)
            notes = [*rules.notes, f"LLM diagnosis unusable: {exc}"]
            return dataclasses.replace(rules, notes=notes)

    def prompt(
        self,
        rules: Guidelines,
        stats: EnvStats,
        tools: list[ToolStats],
        failed: list[EpisodeRecord],
        spec: EnvSpec | None,
    ) -> str:
        tool_lines = [
            f"- {t.name} [{t.kind}]: {t.description[:120]}" for t in (spec.tools if spec else [])
        ]
        tool_stats = [
            {"tool": t.tool, "calls": t.calls, "errors": t.errors, "implicated": t.implicated}
            for t in tools
        ]
        examples = []
        for rec in failed[: self.max_examples]:
            chat = "\n".join(_line(m) for m in rec.messages)
            examples.append(
                f"### task {rec.task_id} (reward {rec.reward:.2f})\n{chat[-self.max_chars :]}"
            )
        stats_json = {
            "episodes": stats.episodes,
            "successes": stats.successes,
            "failure_classes": stats.classes,
            "patterns": stats.patterns,
            "tools": tool_stats,
        }
        return "\n\n".join(
            [
                f"Environment {rules.env_id}. Tools:\n" + "\n".join(tool_lines),
                "Evaluation statistics:\n" + orjson.dumps(stats_json).decode(),
                "Rule-based guidelines:\n" + orjson.dumps(rules.to_dict()).decode(),
                "Failed trajectories:\n" + "\n\n".join(examples),
                'Reply with JSON: {"focus_tools": [tool names], "patterns": [any of '
                + ", ".join(PATTERNS)
                + '], "walk_length": 2-6, "writes": 0-3, "distractors": 0-3, '
                '"program_share": 0-1, "text": "advice for the task writer"}',
            ]
        )


def _line(message: dict[str, Any]) -> str:
    text = str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        text += f" -> {fn.get('name')}({fn.get('arguments')})"
    return f"[{message.get('role')}] {text}"


def parse_reply(text: str) -> dict[str, Any]:
    """The JSON object in the model's reply (fenced or bare)."""
    match = _JSON.search(text)
    if not match:
        raise ValueError("no JSON object in the reply")
    try:
        value = orjson.loads(match.group(0))
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("the reply is not a JSON object")
    return value


def _clamp_int(value: Any, lo: int, hi: int, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(min(hi, max(lo, round(value))))


def merge(rules: Guidelines, reply: dict[str, Any], tool_names: set[str]) -> Guidelines:
    """Apply the model's knobs to the rule guidelines, validated and clamped."""
    focus = [t for t in reply.get("focus_tools") or [] if isinstance(t, str)]
    if tool_names:
        focus = [t for t in focus if t in tool_names]
    patterns = [p for p in reply.get("patterns") or [] if p in PATTERNS]
    share = reply.get("program_share")
    if isinstance(share, int | float) and not isinstance(share, bool):
        share = round(min(1.0, max(0.0, float(share))), 2)
    else:
        share = rules.program_share
    text = reply.get("text")
    return dataclasses.replace(
        rules,
        focus_tools=focus or rules.focus_tools,
        patterns=patterns or rules.patterns,
        walk_length=_clamp_int(reply.get("walk_length"), 2, 6, rules.walk_length),
        writes=_clamp_int(reply.get("writes"), 0, 3, rules.writes),
        distractors=_clamp_int(reply.get("distractors"), 0, 3, rules.distractors),
        program_share=share,
        text=str(text) if isinstance(text, str) else rules.text,
        notes=[*rules.notes, "refined by the LLM diagnosis agent"],
    )
