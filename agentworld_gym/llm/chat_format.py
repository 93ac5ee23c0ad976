"""Chat templates as token sequences: tool prompts, turn boundaries and the prefix check.

Multi-turn RL needs the token sequence a policy *saw* to be exactly the one it is trained on.
:class:`ChatFormat` builds that sequence piece by piece, the same way for rollouts and for
supervised warm starts:

1. ``prompt_ids(messages, tools)`` — the conversation so far plus the generation prompt;
2. the model's own tokens, up to and including its end-of-turn token (never re-tokenised);
3. ``continuation_ids(history, new_messages, tools)`` — the template's text between the end
   of that turn and the next generation prompt (tool results, user turns), tokenised alone.

Step 3 cuts the rendered conversation right after the assistant's end-of-turn marker, so it
only works for templates that are **prefix-preserving**: rendering a conversation and then a
longer one must give a text that starts with the first. Templates that rewrite earlier turns
(e.g. ones that strip reasoning from past assistant messages) are not;
:meth:`ChatFormat.check_prefix_preserving` finds that out up front with a clear error.

Tool format: templates that know about tools (their source mentions ``tools``) render the
schemas and calls themselves (``ToolFormat.native``). For ChatML templates without tool support
(SmolLM2) we use the Hermes convention (``ToolFormat.hermes``): the schemas go into the system
prompt inside ``<tools></tools>``, calls are ``<tool_call>{"name", "arguments"}</tool_call>``
in the assistant text and tool results ``<tool_response>`` blocks in ``tool`` messages.
``ToolFormat.signatures`` is Hermes with each tool listed as one signature line instead of its
JSON schema (about half the tokens): for small models whose prompt is mostly the tool list.

Only a tokenizer is needed (``apply_chat_template``, ``encode``, ``decode``), no model library.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any

from agentworld_gym.errors import ConfigError

Message = dict[str, Any]

_CALL_FORMAT = """For each function call, return a json object with function name and arguments \
within <tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""

HERMES_TOOLS_PROMPT = (
    """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{schemas}
</tools>

"""
    + _CALL_FORMAT
)

SIGNATURES_TOOLS_PROMPT = (
    """# Tools

You may call one or more functions to assist with the user query. The functions, one per \
line as name(argument: type, optional?: type) - what it does:
{signatures}

"""
    + _CALL_FORMAT
)

MAX_ENUM_SHOWN = 12
"""A signature lists at most this many members of an enum (then ``|...``)."""

_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)[.!?]\s+(?=[A-Z(\"'])")
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


class ToolFormat(StrEnum):
    """How tool schemas, calls and results are written into the chat template (members are
    lower-case so a Hydra override reads ``model.tool_format=hermes``)."""

    auto = "auto"
    """``native`` when the template mentions ``tools``, else ``hermes``."""
    native = "native"
    """The template renders ``tools=``, ``tool_calls`` and ``tool`` messages itself."""
    hermes = "hermes"
    """Schemas in the system prompt, ``<tool_call>`` JSON in the assistant text."""
    signatures = "signatures"
    """Hermes, with one signature line per tool instead of its JSON schema."""


class ChatTemplateError(ConfigError):
    """The chat template cannot be used for token-exact multi-turn training."""


def hermes_tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The Hermes system-prompt block listing ``tools`` (OpenAI function schemas)."""
    schemas = "\n".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in tools)
    return HERMES_TOOLS_PROMPT.format(schemas=schemas)


def signature(tool: dict[str, Any]) -> str:
    """One line for an OpenAI tool schema: ``name(arg: type, opt?: type = default) - text``.

    The description is its first sentence (an API's summary); parameter descriptions follow
    on indented lines, first sentence too, since some say what a value means ("the media
    type of the data").

    >>> signature({"type": "function", "function": {"name": "get-tag", "description": "Get.",
    ...     "parameters": {"type": "object", "properties": {"tagId": {"type": "integer"},
    ...     "color": {"type": ["string", "null"], "enum": ["red", "olive"]}},
    ...     "required": ["tagId"]}}})
    'get-tag(tagId: integer, color?: "red"|"olive") - Get.'
    """
    function = tool.get("function", tool)
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required") or [])
    args, notes = [], []
    for name, schema in (parameters.get("properties") or {}).items():
        arg = f"{name}{'' if name in required else '?'}: {schema_type(schema)}"
        if "default" in schema and schema["default"] is not None:
            arg += f" = {json.dumps(schema['default'], ensure_ascii=False)}"
        args.append(arg)
        if text := _first_sentence(str(schema.get("description") or ""), 100):
            notes.append(f"  {name}: {text}")
    head = f"{function.get('name', '')}({', '.join(args)})"
    if text := _first_sentence(str(function.get("description") or ""), 200):
        head += f" - {text}"
    return "\n".join([head, *notes])


def schema_type(schema: dict[str, Any]) -> str:
    """A JSON schema as a short type: ``string``, ``uuid``, ``"a"|"b"``, ``integer[]``,
    ``{id: string, note?: string}``, ``object``."""
    if not isinstance(schema, dict):
        return "any"
    enum = [v for v in schema.get("enum") or [] if v is not None]
    if enum:
        shown = "|".join(json.dumps(v, ensure_ascii=False) for v in enum[:MAX_ENUM_SHOWN])
        return shown + ("|..." if len(enum) > MAX_ENUM_SHOWN else "")
    for key in ("anyOf", "oneOf"):
        if options := [o for o in schema.get(key) or [] if o.get("type") != "null"]:
            return "|".join(dict.fromkeys(schema_type(o) for o in options))
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kind = "|".join(k for k in kind if k != "null") or "null"
    if kind == "array":
        inner = schema_type(schema.get("items") or {})
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if kind == "object" and schema.get("properties"):
        required = set(schema.get("required") or [])
        fields = ", ".join(
            f"{k}{'' if k in required else '?'}: {schema_type(v)}"
            for k, v in schema["properties"].items()
        )
        return f"{{{fields}}}"
    if kind == "string" and schema.get("format"):
        return str(schema["format"])
    return str(kind)


def _first_sentence(text: str, limit: int) -> str:
    """The first sentence of ``text`` (an API summary), at most ``limit`` characters."""
    text = " ".join(text.split())
    if match := _SENTENCE_END.search(text):
        text = text[: match.start() + 1]
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def signatures_tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The system-prompt block listing ``tools`` as signature lines (``ToolFormat.signatures``)."""
    return SIGNATURES_TOOLS_PROMPT.format(signatures="\n".join(signature(t) for t in tools))


def hermes_call_text(call: dict[str, Any]) -> str:
    """``<tool_call>`` text of one OpenAI tool call (``arguments`` as a JSON string or object)."""
    function = call.get("function", call)
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass
    body = json.dumps(
        {"name": function.get("name", ""), "arguments": arguments}, ensure_ascii=False
    )
    return f"<tool_call>\n{body}\n</tool_call>"


def to_hermes(
    messages: list[Message], tools: list[dict[str, Any]] | None, signatures: bool = False
) -> list[Message]:
    """Rewrite an OpenAI chat for a template with no tool support (plain string contents);
    ``signatures`` lists the tools as signature lines instead of JSON schemas.

    >>> to_hermes([{"role": "tool", "content": "42"}], None)[0]["content"]
    '<tool_response>\\n42\\n</tool_response>'
    """
    out: list[Message] = []
    for m in messages:
        role, content = m["role"], m.get("content") or ""
        if role == "assistant" and m.get("tool_calls"):
            calls = "\n".join(hermes_call_text(c) for c in m["tool_calls"])
            content = f"{content}\n{calls}" if content else calls
        elif role == "tool":
            content = f"<tool_response>\n{content}\n</tool_response>"
        out.append({"role": role, "content": content})
    if tools:
        block = signatures_tools_prompt(tools) if signatures else hermes_tools_prompt(tools)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{block}"}
        else:
            out.insert(0, {"role": "system", "content": block})
    return out


def parse_tool_calls(text: str) -> Message:
    """An OpenAI assistant message from generated text with Hermes ``<tool_call>`` blocks.

    Blocks whose JSON does not parse stay in ``content``: the environment reads Hermes text
    too, and answers a malformed call with an error the agent can recover from.

    >>> parse_tool_calls('<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>')
    ... # doctest: +NORMALIZE_WHITESPACE
    {'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'call_0', 'type': 'function',
     'function': {'name': 'f', 'arguments': '{"x": 1}'}}]}
    """
    calls, bad = [], False
    for match in _TOOL_CALL.finditer(text):
        try:
            value = json.loads(match.group(1))
        except json.JSONDecodeError:
            bad = True
            continue
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            bad = True
            continue
        arguments = value.get("arguments", value.get("parameters", {}))
        calls.append(
            {
                "id": f"call_{len(calls)}",
                "type": "function",
                "function": {"name": value["name"], "arguments": json.dumps(arguments)},
            }
        )
    if bad or not calls:
        return {"role": "assistant", "content": text}
    content = _TOOL_CALL.sub("", text).strip()
    return {"role": "assistant", "content": content or None, "tool_calls": calls}


class ChatFormat:
    """Token-exact rendering of tool-use chats with one tokenizer's chat template.

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template.
        tool_format: see :class:`ToolFormat`.
        chat_template: a Jinja template replacing the tokenizer's own.
        eos_token: the end-of-turn token the model stops at (default: the tokenizer's EOS).
    """

    def __init__(
        self,
        tokenizer: Any,
        tool_format: ToolFormat | str = ToolFormat.auto,
        chat_template: str | None = None,
        eos_token: str | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        if chat_template:
            tokenizer.chat_template = chat_template
        template = getattr(tokenizer, "chat_template", None)
        if not isinstance(template, str) or not template:
            raise ChatTemplateError(
                f"{type(tokenizer).__name__} has no chat template; set model.chat_template."
            )
        tool_format = ToolFormat(tool_format)
        if tool_format is ToolFormat.auto:
            tool_format = ToolFormat.native if "tools" in template else ToolFormat.hermes
        self.tool_format = tool_format
        self.hermes_text = tool_format in (ToolFormat.hermes, ToolFormat.signatures)
        """Calls are ``<tool_call>`` text in the assistant message (not template-native)."""
        self.eos_token = eos_token or tokenizer.eos_token
        if not self.eos_token:
            raise ChatTemplateError("the tokenizer has no EOS token; pass eos_token=")
        self.eos_token_id = tokenizer.convert_tokens_to_ids(self.eos_token)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id: int = pad if pad is not None else self.eos_token_id
        """What batches are padded with: the tokenizer's pad token, else EOS."""

    # -- text -------------------------------------------------------------------------------
    def render(
        self, messages: list[Message], tools: list[dict] | None, add_generation_prompt: bool
    ) -> str:
        """The template's text for ``messages`` (Hermes rewriting applied when needed)."""
        if self.hermes_text:
            return self.tokenizer.apply_chat_template(
                to_hermes(messages, tools, self.tool_format is ToolFormat.signatures),
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
            )
        return self.tokenizer.apply_chat_template(
            _plain_contents(messages),
            tools=tools or None,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of a piece of template text (no BOS/EOS added: the template has them)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def parse(self, text: str) -> Message:
        """The assistant message (OpenAI format) that generated ``text`` stands for."""
        return parse_tool_calls(text)

    def history_message(self, text: str) -> Message:
        """The assistant message to keep in the history after generating ``text``: the text
        itself for Hermes (the template renders it verbatim), the parsed calls for native
        templates (which render ``tool_calls`` themselves)."""
        if self.hermes_text:
            return {"role": "assistant", "content": text}
        return self.parse(text)

    # -- token pieces -----------------------------------------------------------------------
    def prompt_ids(self, messages: list[Message], tools: list[dict] | None) -> list[int]:
        """Tokens of the conversation so far followed by the generation prompt."""
        return self.encode(self.render(messages, tools, add_generation_prompt=True))

    def continuation_ids(
        self,
        history: list[Message],
        new_messages: list[Message],
        tools: list[dict] | None,
        ended_with_eos: bool = True,
    ) -> list[int]:
        """Tokens between the end of the last assistant turn of ``history`` and the next
        generation prompt, after ``new_messages`` (tool results, user turns) were added.

        Raises:
            ChatTemplateError: the template is not prefix-preserving for this conversation.
        """
        base = self.render(history, tools, add_generation_prompt=False)
        full = self.render([*history, *new_messages], tools, add_generation_prompt=True)
        cut = base.rfind(self.eos_token)
        if cut < 0:
            raise ChatTemplateError(
                f"the rendered conversation has no end-of-turn token {self.eos_token!r}"
            )
        cut += len(self.eos_token)
        if not full.startswith(base[:cut]):
            raise self._not_prefix(base[:cut], full)
        text = full[cut:]
        if not ended_with_eos:
            text = self.eos_token + text
        return self.encode(text)

    def assistant_text(self, messages: list[Message], tools: list[dict] | None) -> str:
        """The text the template gives the last (assistant) message, as the model would
        generate it: from after the generation prompt up to, excluding, the end-of-turn token.
        Used to build supervised targets that match what rollouts produce."""
        prompt = self.render(messages[:-1], tools, add_generation_prompt=True)
        full = self.render(messages, tools, add_generation_prompt=False)
        if not full.startswith(prompt):
            raise self._not_prefix(prompt, full)
        end = full.rfind(self.eos_token)
        if end < len(prompt):
            raise ChatTemplateError(
                f"the template does not end assistant turns with {self.eos_token!r}"
            )
        return full[len(prompt) : end]

    def encode_chat(
        self, messages: list[Message], tools: list[dict] | None
    ) -> tuple[list[int], list[int]]:
        """``(token_ids, assistant_mask)`` of a whole chat, built exactly as a rollout builds
        it: prompt, then per assistant turn its text plus the end-of-turn token (mask 1), then
        the template's continuation (mask 0). The chat must start with system/user messages and
        end with an assistant message."""
        first = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), None)
        if first is None or messages[-1]["role"] != "assistant":
            raise ValueError("encode_chat needs a chat that has and ends with an assistant turn")
        ids = self.prompt_ids(messages[:first], tools)
        mask = [0] * len(ids)
        i = first
        while i < len(messages):
            turn = [*self.encode(self.assistant_text(messages[: i + 1], tools)), self.eos_token_id]
            ids += turn
            mask += [1] * len(turn)
            j = i + 1
            while j < len(messages) and messages[j]["role"] != "assistant":
                j += 1
            if j < len(messages):
                more = self.continuation_ids(messages[: i + 1], messages[i + 1 : j], tools)
                ids += more
                mask += [0] * len(more)
            i = j
        return ids, mask

    # -- checks -----------------------------------------------------------------------------
    def check_prefix_preserving(self, tools: list[dict] | None = None) -> None:
        """Raise :class:`ChatTemplateError` unless every turn of a sample tool-use chat renders
        as a prefix of the next one (what token-exact multi-turn rollouts rely on)."""
        call = {
            "id": "call_0",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"q": "x"}'},
        }
        chat = [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Find x."},
            {"role": "assistant", "content": "Looking.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "name": "lookup", "content": '{"x": 1}'},
            {"role": "assistant", "content": "x is 1."},
            {"role": "user", "content": "Thanks. And y?"},
            {"role": "assistant", "content": "y is 2."},
        ]
        tools = tools or [
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "description": "Look up a key.",
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                },
            }
        ]
        self.encode_chat(chat, tools)

    def _not_prefix(self, before: str, after: str) -> ChatTemplateError:
        at = next(
            (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
            min(len(before), len(after)),
        )
        return ChatTemplateError(
            "The chat template is not prefix-preserving: rendering a longer conversation "
            f"rewrites earlier text at character {at} (expected {before[at : at + 60]!r}, got "
            f"{after[at : at + 60]!r}). Token-exact multi-turn training needs each turn to "
            "extend the previous rendering (templates that drop past reasoning or re-render "
            "earlier turns do not). Set model.chat_template to a prefix-preserving template."
        )


def _plain_contents(messages: list[Message]) -> list[Message]:
    """Templates index ``message['content']`` and expect call ``arguments`` as objects."""
    out = []
    for m in messages:
        m = {**m, "content": m.get("content") or ""}
        if m.get("tool_calls"):
            m["tool_calls"] = [_object_arguments(c) for c in m["tool_calls"]]
        out.append(m)
    return out


def _object_arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function", {}))
    if isinstance(function.get("arguments"), str):
        try:
            function["arguments"] = json.loads(function["arguments"] or "{}")
        except json.JSONDecodeError:
            pass
    return {**call, "function": function}
