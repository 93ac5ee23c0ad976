"""Parse an agent's action into tool calls or a final answer.

The rule (also in the README): an action that carries a **tool-call marker** — a Hermes
``<tool_call>`` tag, a JSON object with a ``"name"`` key (alone, in a list, or in a fenced code
block), or an OpenAI ``tool_calls`` entry — is a request to call tools; if it cannot be executed
the agent sees an error observation and may try again. Text without any marker is the
**final answer**, as is a call of the built-in ``submit`` tool (``{"answer": "..."}``).

Accepted shapes::

    {"name": "API-get-self", "arguments": {}}                      # JSON text or dict
    [{"name": ...}, {"name": ...}]                                  # several calls
    I'll look it up. <tool_call>{"name": ..., "arguments": ...}</tool_call>   # Hermes
    {"role": "assistant", "content": ..., "tool_calls": [{"id": ..., "type": "function",
      "function": {"name": ..., "arguments": "<json text>"}}]}      # OpenAI message (dict/JSON)
    The answer is 42.                                              # final answer

What cannot be carried as JSON is normalised or refused before anything else reads it (see
:mod:`agentworld_gym.jsonsafe`): lone surrogates anywhere become U+FFFD; a JSON value nested
deeper than :data:`~agentworld_gym.jsonsafe.MAX_DEPTH`, a non-string key, an integer outside the
64-bit range, NaN/Infinity, a set, bytes or another object inside a dict/list action refuses the
action (or, inside one call's JSON text, that call) with an error observation; an OpenAI
message's ``content`` must be text, null or a list of text parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentworld_gym.errors import ActionParseError
from agentworld_gym.jsonsafe import (
    MAX_DEPTH,
    JSONValueError,
    clean_text,
    depth_exceeds,
    preview,
    to_json_text,
    too_deep_text,
)

SUBMIT_TOOL = "submit"
SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SUBMIT_TOOL,
        "description": (
            "Submit the final answer and end the episode. Call it once the request is done; "
            "a message without any tool call is treated as the final answer too."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "answer": {"type": "string", "description": "The final answer."},
                "fields": {
                    "type": "object",
                    "description": (
                        "Optional: the answer's named values, when the task lists answer "
                        'fields (info["answer_fields"]), e.g. {"budget": 30000}.'
                    ),
                },
            },
            "required": ["answer"],
        },
    },
}

_NAME_KEY = re.compile(r'"name"\s*:')
_LONE_ESCAPE = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
"""An escaped backslash, a surrogate pair escape, or a lone surrogate escape (in that order,
so ``\\\\udcff`` stays a backslash and text)."""


@dataclass(slots=True)
class ToolCall:
    """One requested call; ``error`` is set when the request could not be parsed."""

    name: str
    arguments: Any
    id: str = ""
    error: ActionParseError | None = None


@dataclass(slots=True)
class ParsedAction:
    """What the agent asked for: tool calls, free text, and possibly a final answer."""

    content: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    final_answer: str | None = None
    answer_fields: dict[str, Any] | None = None
    """Named values submitted with the answer (``submit``'s ``fields``)."""


def parse_action(action: Any, max_chars: int = 100_000) -> ParsedAction:
    """Turn an action (text, dict or list) into a :class:`ParsedAction`.

    Text is cleaned of lone surrogates first; a dict or list goes through
    :func:`~agentworld_gym.jsonsafe.to_json` (an iterative walk), so nothing recursive ever
    sees an unchecked value.

    Raises:
        ActionParseError: the whole action is unusable (too long, not text, not UTF-8, or a
            dict/list holding what JSON cannot carry); the message says what and where.
    """
    if type(action) is str:  # the common case first
        _check_length(len(action), max_chars, "")
        return _parse_text(clean_text(action))
    if isinstance(action, bytes | bytearray):
        try:
            action = bytes(action).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ActionParseError(f"Action is not valid UTF-8: {exc}") from None
    if isinstance(action, str):
        _check_length(len(action), max_chars, "")
        return _parse_text(clean_text(action))
    if isinstance(action, dict | list | tuple):
        try:
            value, size = to_json_text(action, "action")
        except JSONValueError as exc:
            raise ActionParseError(f"Action refused: {exc}") from None
        _check_length(size, max_chars, " as JSON")
        return _parse_json_value(value, raw="")
    raise ActionParseError(
        "Expected the action as text (or an OpenAI message dict), got "
        f"{type(action).__name__} {preview(action, 40)}"
    )


def usual_call(action: Any, max_chars: int = 100_000) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` when ``action`` is the usual action: the JSON text of exactly one
    ``{"name": ..., "arguments": {...}}`` object naming a tool other than ``submit``; else
    ``None`` (then :func:`parse_action` decides, with the same answer for this one).

    Only what :func:`parse_action` would conclude for the text is accepted: within the length
    limit, no ``<tool_call>`` tag, JSON that orjson decodes (text with a lone surrogate fails
    here and is repaired there), not deeper than the limit.
    """
    if (
        type(action) is not str
        or action[:1] != "{"
        or action[-1:] != "}"
        or len(action) > max_chars
        or "<tool_call>" in action
    ):
        return None
    try:
        value = orjson.loads(action)
    except orjson.JSONDecodeError:
        return None
    if type(value) is not dict or len(value) != 2:
        return None
    name, arguments = value.get("name"), value.get("arguments")
    if (
        type(name) is not str
        or not name
        or name == SUBMIT_TOOL
        or type(arguments) is not dict
        or too_deep_text(action)
    ):
        return None
    return name, arguments


def _check_length(chars: int, max_chars: int, how: str) -> None:
    if chars > max_chars:
        raise ActionParseError(
            f"Action of {chars:,} characters{how} exceeds the {max_chars:,}-character limit; "
            "send a shorter tool call or answer."
        )


def _too_deep(where: str) -> str:
    return (
        f"{where} is nested deeper than {MAX_DEPTH} levels of objects and arrays; send flatter JSON"
    )


def _fix_escape(match: re.Match[str]) -> str:
    return "\\ufffd" if len(match.group()) == 6 else match.group()


def _loads_checked(text: str) -> Any:
    """``orjson.loads`` plus the depth limit (walked only when the text has enough brackets);
    a lone surrogate escape (``"\\udcff"``), which orjson rejects, decodes as U+FFFD.

    Raises:
        orjson.JSONDecodeError: not JSON.
        JSONValueError: nested deeper than ``MAX_DEPTH``.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise
        value = orjson.loads(_LONE_ESCAPE.sub(_fix_escape, text))  # "\udcff" → U+FFFD
    if too_deep_text(text) and depth_exceeds(value):
        raise JSONValueError(_too_deep("the JSON"))  # callers say whose JSON
    return value


def content_text(content: Any) -> str:
    """An OpenAI message's ``content`` as text: a string, null (empty), or a list of parts
    whose ``text`` is joined (``[{"type": "text", "text": "..."}]``).

    Raises:
        ActionParseError: anything else (a number, an object, a part that is not text).
    """
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts = []
        for part in content:
            text = part.get("text") if isinstance(part, dict) else part
            if not isinstance(text, str):
                break
            texts.append(text)
        else:
            return "".join(texts)
    raise ActionParseError(
        'The message "content" must be text, null or a list of text parts '
        '([{"type": "text", "text": "..."}]), got '
        f"{_json_type_name(content)} {preview(content, 40)}"
    )


def _json_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    names = {dict: "object", list: "array", str: "string", int: "integer", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _parse_text(text: str) -> ParsedAction:
    if "<tool_call>" in text:
        bodies, content = _hermes_split(text)
        calls = [_call_from_json_text(body) for body in bodies]
        return _finish(ParsedAction(content=content, calls=calls))
    body = text if text[:1] == "{" and text[-1:] == "}" else _unfence(text.strip())
    if body[:1] in ("{", "["):
        try:
            value = _loads_checked(body)
        except (orjson.JSONDecodeError, JSONValueError) as exc:
            if _NAME_KEY.search(body) or '"tool_calls"' in body:
                if isinstance(exc, JSONValueError):
                    message = _too_deep("The tool call JSON")
                else:
                    message = f"Malformed tool call JSON: {exc}"
                raise_as_call = ToolCall(name="", arguments=None, error=ActionParseError(message))
                return ParsedAction(calls=[raise_as_call])
            return ParsedAction(content=text, final_answer=text)
        parsed = _parse_json_value(value, raw=text)
        if parsed.calls or parsed.final_answer is not None:
            return parsed
    return ParsedAction(content=text, final_answer=text)


def _hermes_split(text: str) -> tuple[list[str], str]:
    """The ``<tool_call>`` bodies (stripped) and the text around them (joined, stripped).

    The matches of ``<tool_call>(.*?)(?:</tool_call>|$)`` (``re.DOTALL``) and the text with
    them removed, found with ``str.find`` instead of that lazy regex, which tries both endings
    at every character: an unclosed tag runs to the end of the text (before a final newline,
    as ``$`` does).
    """
    bodies: list[str] = []
    around: list[str] = []
    pos = 0
    while (opened := text.find("<tool_call>", pos)) >= 0:
        around.append(text[pos:opened])
        start = opened + len("<tool_call>")
        closed = text.find("</tool_call>", start)
        if closed >= 0:
            bodies.append(text[start:closed].strip())
            pos = closed + len("</tool_call>")
        else:
            pos = len(text) - 1 if text.endswith("\n") else len(text)
            bodies.append(text[start:pos].strip())
    around.append(text[pos:])
    return bodies, "".join(around).strip()


def _parse_json_value(value: Any, raw: str) -> ParsedAction:
    """Interpret decoded JSON; with no tool-call marker in it, the raw text is the answer."""
    if type(value) is dict and "name" in value and "tool_calls" not in value:  # the usual call
        call = _call_from_obj(value)
        if call.name != SUBMIT_TOOL:
            return ParsedAction(calls=[call])
        return _finish(ParsedAction(calls=[call]))
    if isinstance(value, dict) and "tool_calls" in value:
        entries = value.get("tool_calls") or []
        if not isinstance(entries, list):
            entries = [entries]
        content = content_text(value.get("content"))
        calls = [_call_from_obj(e) for e in entries]
        if not calls:
            return ParsedAction(content=content, final_answer=content)
        return _finish(ParsedAction(content=content, calls=calls))
    if isinstance(value, dict) and ("name" in value or "function" in value):
        return _finish(ParsedAction(calls=[_call_from_obj(value)]))
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, dict) and ("name" in v or "function" in v) for v in value)
    ):
        return _finish(ParsedAction(calls=[_call_from_obj(v) for v in value]))
    if isinstance(value, dict) and value.get("role") == "assistant":
        return _parse_text(content_text(value.get("content")))
    if raw:
        return ParsedAction(content=raw, final_answer=raw)
    raise ActionParseError(
        'Expected an OpenAI assistant message, a tool call {"name", "arguments"} or a list '
        "of tool calls"
    )


def _unfence(text: str) -> str:
    """The inside of a fenced code block (```json ... ```), else ``text`` as is.

    String operations, not a regex: ``^```(?:json)?\\s*(.*?)\\s*```$`` backtracks in cubic
    time on a fence opened and followed by whitespace (5,000 spaces took 72 s).
    """
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return text
    inner = text[3:-3]
    return (inner[4:] if inner.startswith("json") else inner).strip()


def _call_from_json_text(body: str) -> ToolCall:
    body = _unfence(body)
    try:
        value = _loads_checked(body)
    except orjson.JSONDecodeError as exc:
        return ToolCall("", None, error=ActionParseError(f"Malformed JSON in <tool_call>: {exc}"))
    except JSONValueError:
        return ToolCall("", None, error=ActionParseError(_too_deep("The <tool_call> JSON")))
    return _call_from_obj(value)


def _call_from_obj(value: Any) -> ToolCall:
    """``{"name", "arguments"}`` or OpenAI ``{"id", "function": {"name", "arguments"}}``."""
    if not isinstance(value, dict):
        return ToolCall(
            "", None, error=ActionParseError("A tool call must be a JSON object with a name")
        )
    call_id = value.get("id")
    call_id = call_id if type(call_id) is str else str(call_id or "")
    function = value.get("function")
    if isinstance(function, dict):
        value = function
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return ToolCall(
            "",
            None,
            id=call_id,
            error=ActionParseError('A tool call needs a non-empty string "name"'),
        )
    arguments = value["arguments"] if "arguments" in value else value.get("parameters")
    if type(arguments) is dict:
        return ToolCall(name, arguments, call_id)
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = _loads_checked(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError as exc:
            return ToolCall(
                name,
                None,
                id=call_id,
                error=ActionParseError(f"The arguments of {name} are not valid JSON: {exc}"),
            )
        except JSONValueError:
            error = ActionParseError(_too_deep(f"The arguments of {name}"))
            return ToolCall(name, None, id=call_id, error=error)
    return ToolCall(name, arguments, id=call_id)


def _finish(parsed: ParsedAction) -> ParsedAction:
    """A ``submit`` call turns into the final answer (after the calls before it)."""
    for i, call in enumerate(parsed.calls):
        if call.name == SUBMIT_TOOL and call.error is None:
            args = call.arguments if isinstance(call.arguments, dict) else {}
            answer = args.get("answer", "")
            parsed.final_answer = (
                answer if isinstance(answer, str) else orjson.dumps(answer).decode()
            )
            fields = args.get("fields")
            parsed.answer_fields = fields if isinstance(fields, dict) else None
            parsed.calls = parsed.calls[:i]
            break
    return parsed
