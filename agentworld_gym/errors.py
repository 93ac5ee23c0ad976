"""One error hierarchy for the whole package.

``AgentWorldEnv.step`` turns every :class:`ToolError` into an observation the agent can read
and recover from; every other error is a bug or an API misuse by the programmer and propagates.
"""

from __future__ import annotations

from typing import Any


class AgentWorldError(Exception):
    """Base class of every error raised by agentworld_gym."""


class ToolError(AgentWorldError):
    """An agent-visible failure of a tool call; the database is left as it was."""

    code: str = "tool_error"

    def payload(self) -> dict[str, Any]:
        """The JSON object the agent sees as the tool's observation."""
        return {"error": {"type": self.code, "message": str(self)}}


class ActionParseError(ToolError):
    """The action carries a tool-call marker but cannot be parsed into a call."""

    code = "malformed_action"


class TooManyCalls(ToolError):
    """The action carries more tool calls than one action may run; the extra ones did not run."""

    code = "too_many_calls"


class ToolNotFound(ToolError):
    """The agent called a tool the environment does not have."""

    code = "unknown_tool"


class ToolArgumentError(ToolError):
    """The arguments do not satisfy the tool's JSON Schema."""

    code = "invalid_arguments"


class ToolExecutionError(ToolError):
    """The tool ran and failed: an API-level error (404, 400, 409, ...) or a crash.

    ``body`` is the in-band error object the service would answer with (for example a Notion
    error object); when given it is the observation verbatim.
    """

    code = "tool_execution_error"

    def __init__(self, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.body = body

    def payload(self) -> dict[str, Any]:
        return self.body if self.body is not None else super().payload()


class ConfigError(AgentWorldError):
    """A configuration or specification is invalid; the message says what to change."""


class LLMRequestError(AgentWorldError):
    """One request to a model server failed (timed out, connection dropped, 5xx) after the
    client's own retries: the policy failed this time, not the configuration. Episode runners
    retry or record it; they never abort a run for it."""


class SpecError(ConfigError):
    """An EnvSpec, task or verifier definition is malformed."""


class RegistrationError(AgentWorldError):
    """An environment id is unknown or registered twice."""


class VerifierError(AgentWorldError):
    """A verifier could not run (bad definition); agent mistakes never raise this."""


class SandboxError(AgentWorldError):
    """Untrusted code could not be run in the sandbox (timeout, limits, crash)."""
