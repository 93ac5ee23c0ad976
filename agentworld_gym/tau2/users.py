"""τ²'s customers: who answers the agent in a τ² episode.

A τ² episode starts, as in tau2, with the agent's greeting ("Hi! How can I help you
today?"); the user's reply to it is the first observation. The environment hands its user
simulator a *scenario* — ``task_id``, ``instructions`` (tau2's user-simulator guidelines with
the task's ``<scenario>``, the text tau2's own simulator gets as its system prompt), ``tools``
(the user's own tools as OpenAI schemas, in domains such as telecom where the customer acts
on a device) — and the dialogue from the user's side (``assistant`` greeting, then
``user``/``assistant`` alternating; tool traffic is not in it).

Any :class:`agentworld_gym.users.UserSimulator` works (``LLMUser(backend)`` reads the
``instructions``); a simulator with an ``act(scenario, dialogue, call_tool)`` method may also
call the user's tools: ``call_tool(name, arguments) -> str`` runs one on the episode's
environment as tau2 runs a user's call. Two are here:

- :class:`Tau2ScriptedUser` replays fixed lines (and user tool calls) per task: tests, gold
  replays;
- :class:`Tau2LLMUser` plays the scenario with any backend of the LLM interface, with tau2's
  system prompt and the user's tools, and stops as tau2's simulator stops.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentworld_gym.users import STOP

__all__ = ["STOP_TOKENS", "Tau2LLMUser", "Tau2ScriptedUser", "is_stop"]

STOP_TOKENS = (STOP, "###TRANSFER###", "###OUT-OF-SCOPE###")
"""What ends a conversation from the user's side in tau2 (stop, transfer, out of scope)."""

CallTool = Callable[[str, dict[str, Any]], str]


def is_stop(text: str | None) -> bool:
    """Whether a user message ends the conversation (as tau2's ``UserSimulator.is_stop``)."""
    return text is None or any(token in text for token in STOP_TOKENS)


def _said(dialogue: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for m in dialogue if m.get("role") == "user")


class Tau2ScriptedUser:
    """Says a fixed script per task: one entry per user turn, in order.

    An entry is the message text, or ``{"tool_calls": [{"name", "arguments"}, ...],
    "content": "..."}`` to run user tools first (their results are not read). After the last
    entry (or at an entry containing a stop token) the user stops.

    Args:
        scripts: task id → entries.
    """

    def __init__(self, scripts: Mapping[str, Sequence[str | Mapping[str, Any]]]) -> None:
        self.scripts = {str(k): list(v) for k, v in scripts.items()}

    def reply(self, scenario: dict[str, Any], dialogue: list[dict[str, Any]]) -> str | None:
        return self.act(scenario, dialogue, None)

    def act(
        self, scenario: dict[str, Any], dialogue: list[dict[str, Any]], call_tool: CallTool | None
    ) -> str | None:
        script = self.scripts.get(str(scenario.get("task_id")), [])
        turn = _said(dialogue)
        if turn >= len(script):
            return None
        entry = script[turn]
        if isinstance(entry, Mapping):
            if call_tool is not None:
                for call in entry.get("tool_calls") or []:
                    call_tool(str(call["name"]), dict(call.get("arguments") or {}))
            entry = str(entry.get("content") or "")
        return None if is_stop(entry) else str(entry)


class Tau2LLMUser:
    """Plays a τ² customer with any LLM-interface backend (seeded, temperature 0 by default).

    The system prompt is tau2's (its guidelines and the task's scenario, from
    ``scenario["instructions"]``); the dialogue is shown with the roles flipped, as tau2 shows
    it; the user's own tools (``scenario["tools"]``) are offered and run through ``call_tool``
    (at most ``max_tool_calls`` per turn). The user stops at a stop token or after
    ``max_turns`` messages.
    """

    def __init__(
        self, backend: Any, max_turns: int = 30, max_tool_calls: int = 10, **sampling: Any
    ) -> None:
        self.backend = backend
        self.max_turns = max_turns
        self.max_tool_calls = max_tool_calls
        self.sampling = {"temperature": 0.0, "seed": 0, **sampling}

    def reply(self, scenario: dict[str, Any], dialogue: list[dict[str, Any]]) -> str | None:
        return self.act(scenario, dialogue, None)

    def act(
        self, scenario: dict[str, Any], dialogue: list[dict[str, Any]], call_tool: CallTool | None
    ) -> str | None:
        if _said(dialogue) >= int(scenario.get("max_turns", self.max_turns)):
            return None
        flip = {"assistant": "user", "user": "assistant"}
        talk: list[dict[str, Any]] = [{"role": "system", "content": scenario["instructions"]}]
        talk += [{"role": flip[m["role"]], "content": m.get("content") or ""} for m in dialogue]
        tools = scenario.get("tools") if call_tool is not None else None
        for _ in range(self.max_tool_calls + 1):
            reply = self.backend.chat(talk, tools or None, **self.sampling) or {}
            calls = reply.get("tool_calls") or []
            if not calls or call_tool is None:
                text = str(reply.get("content") or "").strip()
                return None if not text or is_stop(text) else text
            talk.append({"role": "assistant", "content": reply.get("content"), "tool_calls": calls})
            for call in calls:
                fn = call.get("function") or {}
                try:
                    arguments = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                result = call_tool(
                    str(fn.get("name")), arguments if isinstance(arguments, dict) else {}
                )
                talk.append({"role": "tool", "tool_call_id": call.get("id"), "content": result})
        return None  # a user that only calls tools has nothing more to say
