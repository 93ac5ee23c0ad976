"""Simulated users: the other side of a conversation whose next message depends on the agent.

A task with fixed follow-ups lists them in ``TaskSpec.turns``. A task whose user reacts to
what the agent said (τ²-bench's customers) carries a *scenario* in ``TaskSpec.user``
instead: who the user is, what they want, what they know. After each answer of the agent,
the environment asks its :class:`UserSimulator` for the user's next message; ``None`` ends
the episode. Two simulators:

- :class:`ScriptedUser` says the scenario's ``script`` lines in order (tests, replays);
- :class:`LLMUser` plays the scenario with any chat model behind the package's LLM interface
  (an object with ``chat(messages, tools=None, **sampling) -> {"content": ...}``), and stops
  when the model says :data:`STOP` or after ``max_turns`` user messages.

A scenario is a dict: ``{"instructions": "You are Mia Li ...", "max_turns": 6}`` (LLMUser)
and/or ``{"script": ["...", "..."]}`` (ScriptedUser).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["STOP", "LLMUser", "ScriptedUser", "UserSimulator"]

STOP = "###STOP###"
"""What a simulated user says when the conversation is over (τ²-bench's convention)."""

SYSTEM = """You are playing a user talking to a customer-service agent. Stay in character.
{instructions}

Write only your next message to the agent, in one or two sentences. Reveal what you know only
when it is asked for or needed. When your request is fully handled, or cannot be, reply with
exactly {stop}."""


class UserSimulator(Protocol):
    """The user's next message after the agent's latest answer, or ``None`` to end.

    ``dialogue`` is the conversation as the user saw it: the request, then the agent's
    answers and the user's replies alternating (``role`` ``user`` / ``assistant``); tool
    calls, tool results and error observations are not in it.
    """

    def reply(self, scenario: dict[str, Any], dialogue: list[dict[str, Any]]) -> str | None: ...


def _user_turns(dialogue: list[dict[str, Any]]) -> int:
    return sum(1 for m in dialogue if m.get("role") == "user")


class ScriptedUser:
    """Says the scenario's ``script`` lines in order, one per answer of the agent."""

    def reply(self, scenario: dict[str, Any], dialogue: list[dict[str, Any]]) -> str | None:
        script = list(scenario.get("script") or [])
        said = _user_turns(dialogue) - 1  # the request itself is the first user message
        return str(script[said]) if 0 <= said < len(script) else None


class LLMUser:
    """Plays the scenario with a chat model (seeded, temperature 0 by default).

    The dialogue is shown to the model from the user's side: the agent's answers as
    ``user`` messages and the user's own as ``assistant`` ones.
    """

    def __init__(self, backend: Any, max_turns: int = 10, **sampling: Any) -> None:
        self.backend = backend
        self.max_turns = max_turns
        self.sampling = {"temperature": 0.0, "seed": 0, **sampling}

    def reply(self, scenario: dict[str, Any], dialogue: list[dict[str, Any]]) -> str | None:
        limit = int(scenario.get("max_turns", self.max_turns))
        if _user_turns(dialogue) >= limit:
            return None
        system = SYSTEM.format(instructions=scenario.get("instructions", ""), stop=STOP)
        flip = {"assistant": "user", "user": "assistant"}
        talk: list[dict[str, Any]] = [{"role": "system", "content": system}]
        talk += [{"role": flip[m["role"]], "content": m.get("content") or ""} for m in dialogue]
        reply = self.backend.chat(talk, None, **self.sampling)
        text = str((reply or {}).get("content") or "").strip()
        if not text or STOP in text:
            return None
        return text
