"""Decoding held to the environment's tools: the JSON of a ``<tool_call>`` names a real tool and
only its parameters.

Why: a small policy's calls fail on names far more than on values. The CPU demo's SFT model
(SmolLM2-135M) made 17 calls on 8 held-out episodes and every one failed: 7 named no tool (a
value from the request as the tool's name), 10 used another tool's argument keys or left out
a required one, and it repeated the failing call after the error named the fix. With nothing
right, every GRPO rollout got reward 0 and the gradient was exactly 0.

Inside a ``<tool_call>`` block the grammar lets through only JSON text whose root object has
the keys ``name`` and ``arguments``; whose ``name`` is one of the tools; whose ``arguments``
object has only that tool's parameters as keys, each at most once, and does not close before
every required one is there; and whose string values of an enum parameter are members. A
call ends with ``</tool_call>`` (text run on after the JSON would make it unparseable). The
values themselves, and everything outside calls (reasoning, the final answer), stay free: the
policy still has to find them. The end-of-turn token is refused inside an unfinished call.

Sampling with the grammar is rejection sampling: a token is drawn from the model's
distribution as usual and kept when the grammar accepts it (almost always); when it does not,
it is redrawn from the distribution restricted to the tokens the grammar accepts. Together
these draw from exactly the restricted distribution whenever the allowed tokens are among the
redraw's candidates: the model's top 64 and every token that spells a permitted name or key
(the whole vocabulary only if none of those fits). A redraw ignores ``top_p``. The
log-probability reported for a redrawn token is the restricted distribution's, so the
trainer's truncated importance weights see the sampler's real probability; a kept token
reports the model's own.

Works with any tokenizer: each token's text is decoded once after an anchor token (so that
SentencePiece's leading spaces survive) and the grammar reads characters, not token ids.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from dataclasses import dataclass
from typing import Any

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
_WHITESPACE = frozenset(" \t\n\r")
_SCALAR = frozenset("0123456789+-.eEtrufalsn")
_SCALAR_END = frozenset(",}] \t\n\r")
_LITERALS = ("true", "false", "null")
_NUMBER_PREFIX = re.compile(r"-?(\d+(\.\d*)?([eE][+-]?\d*)?)?")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
MAX_SCALAR = 20
"""Characters a number may have (a runaway "1000000..." would never end the call)."""
_STARTS = {
    "string": '"',
    "integer": "-0123456789",
    "number": "-0123456789",
    "boolean": "tf",
    "array": "[",
    "object": "{",
    "null": "n",
}
CANDIDATES = 64
"""Tokens of highest probability tried before the exact candidates of a refused draw."""


@dataclass(frozen=True)
class ToolShape:
    """What the grammar needs of one tool: its parameters, the required ones, string enums."""

    params: frozenset[str]
    required: frozenset[str]
    enums: dict[str, tuple[str, ...]]
    starts: dict[str, frozenset[str]]
    """Per parameter with a plain JSON type, the characters its value may begin with."""

    @classmethod
    def of(cls, tool: dict[str, Any]) -> ToolShape:
        function = tool.get("function", tool)
        parameters = function.get("parameters") or {}
        props = parameters.get("properties") or {}
        enums = {}
        for key, schema in props.items():
            members = schema.get("enum") if isinstance(schema, dict) else None
            if members and all(isinstance(m, str) for m in members if m is not None):
                enums[key] = tuple(sorted({m for m in members if m is not None}))
        required = frozenset(k for k in parameters.get("required") or [] if k in props)
        starts = {}
        for key, schema in props.items():
            kinds = schema.get("type") if isinstance(schema, dict) else None
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if kinds and all(k in _STARTS for k in kinds):
                starts[key] = frozenset("".join(_STARTS[k] for k in kinds))
        return cls(frozenset(props), required, enums, starts)


class CallGrammar:
    """The calls one environment's tools allow (build once per tool list, share across rows)."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools: dict[str, ToolShape] = {}
        for tool in tools:
            name = tool.get("function", tool).get("name")
            if isinstance(name, str) and name:
                self.tools[name] = ToolShape.of(tool)
        self.names = tuple(sorted(self.tools))

    def start(self) -> CallState:
        """The state at the start of an assistant turn (outside any call)."""
        return CallState(self)


class _Frame:
    """One open JSON container: its role in the call and what it expects next."""

    __slots__ = ("array", "role", "expect", "key", "used")

    def __init__(self, array: bool, role: str, expect: str) -> None:
        self.array = array
        self.role = role  # "root", "args" or "free"
        self.expect = expect  # key_or_end, key, colon, value, value_or_end, comma_or_end
        self.key: str | None = None
        self.used: set[str] = set()

    def copy(self) -> _Frame:
        f = _Frame(self.array, self.role, self.expect)
        f.key, f.used = self.key, set(self.used)
        return f


class CallState:
    """Where one row's generated text stands against the grammar; :meth:`feed` advances it."""

    __slots__ = (
        "grammar",
        "inside",
        "tail",
        "stack",
        "text",
        "choices",
        "string_is_key",
        "escape",
        "scalar",
        "tool",
        "closing",
    )

    def __init__(self, grammar: CallGrammar) -> None:
        self.grammar = grammar
        self.inside = False  # in a call's JSON (from <tool_call> until its root object closes)
        self.tail = ""  # outside: the last characters, to see the next <tool_call>
        self.stack: list[_Frame] = []
        self.text: str | None = None  # the open string's characters so far
        self.choices: tuple[str, ...] | None = None  # the values that string may take
        self.string_is_key = False
        self.escape = False
        self.scalar: str | None = None  # the number or literal being written
        self.tool: str | None = None
        self.closing: str | None = None  # after the JSON: the part of </tool_call> written

    def copy(self) -> CallState:
        s = CallState.__new__(CallState)
        s.grammar, s.inside, s.tail = self.grammar, self.inside, self.tail
        s.stack = [f.copy() for f in self.stack]
        s.text, s.choices, s.string_is_key = self.text, self.choices, self.string_is_key
        s.escape, s.scalar, s.tool = self.escape, self.scalar, self.tool
        s.closing = self.closing
        return s

    @property
    def may_end(self) -> bool:
        """Whether the turn may end here (not inside an unfinished call)."""
        return not self.inside

    def feed(self, chunk: str) -> bool:
        """Advance over ``chunk``; False (and the state is then undefined) when refused."""
        for c in chunk:
            if not self._char(c):
                return False
        return True

    def accepts(self, chunk: str | None, end: bool = False) -> bool:
        """Whether a token with text ``chunk`` (``None``: a special token; ``end``: the
        end-of-turn token) may come next; the state is not changed."""
        if end:
            return self.may_end
        if chunk is None:
            return not self.inside
        return self.copy().feed(chunk)

    # -- characters -------------------------------------------------------------------------
    def _char(self, c: str) -> bool:
        if not self.inside:
            self.tail = (self.tail + c)[-len(OPEN_TAG) :]
            if self.tail == OPEN_TAG:
                self.inside, self.tail, self.stack, self.tool = True, "", [], None
            return True
        if self.closing is not None:  # the JSON is done: only </tool_call> may follow
            if not self.closing and c in _WHITESPACE:
                return True
            self.closing += c
            if not CLOSE_TAG.startswith(self.closing):
                return False
            if self.closing == CLOSE_TAG:
                self.inside, self.closing, self.tail = False, None, ""
            return True
        if self.text is not None:
            return self._string_char(c)
        if self.scalar is not None:
            if c in _SCALAR:
                self.scalar += c
                return _scalar_prefix(self.scalar)
            if c not in _SCALAR_END or not _scalar_done(self.scalar):
                return False
            self.scalar = None
            self._after_value(None)
        return self._structural(c)

    def _string_char(self, c: str) -> bool:
        assert self.text is not None
        if self.escape:
            self.escape = False
            self.text += c
            return True
        if c == "\\":
            if self.choices is not None:  # no tool, key or enum member needs an escape
                return False
            self.escape = True
            return True
        if c == '"':
            value, self.text = self.text, None
            if self.choices is not None and value not in self.choices:
                return False
            if self.string_is_key:
                frame = self.stack[-1]
                frame.key, frame.expect = value, "colon"
                frame.used.add(value)
                return True
            self._after_value(value)
            return True
        self.text += c
        if self.choices is not None and not _has_prefix(self.choices, self.text):
            return False
        return True

    def _structural(self, c: str) -> bool:
        if c in _WHITESPACE:
            return True
        if not self.stack:  # after <tool_call>: the root object
            if c != "{":
                return False
            self.stack.append(_Frame(False, "root", "key_or_end"))
            return True
        frame = self.stack[-1]
        expect = frame.expect
        if expect in ("key_or_end", "key"):
            if c == '"':
                choices = self._key_choices(frame)
                if choices == ():  # every key is used: a key string could never close
                    return False
                self._open_string(choices, key=True)
                return True
            return expect == "key_or_end" and c == "}" and self._close(frame)
        if expect == "colon":
            if c != ":":
                return False
            frame.expect = "value"
            return True
        if expect in ("value", "value_or_end"):
            if expect == "value_or_end" and c == "]":
                return self._close(frame)
            return self._value_start(frame, c)
        # comma_or_end
        if c == ",":
            if not frame.array and self._key_choices(frame) == ():
                return False  # no key is left to follow the comma
            frame.expect = "value" if frame.array else "key"
            return True
        if c == ("]" if frame.array else "}"):
            return self._close(frame)
        return False

    def _value_start(self, frame: _Frame, c: str) -> bool:
        field = None if frame.array else frame.key
        if frame.role == "root" and field == "name":
            if c != '"':
                return False
            self._open_string(self.grammar.names, key=False)
            return True
        if frame.role == "root" and field == "arguments" and c != "{":
            return False  # arguments are an object
        if frame.role == "args" and self.tool is not None and field is not None:
            starts = self.grammar.tools[self.tool].starts.get(field)
            if starts is not None and c not in starts:
                return False  # a value of another type than the parameter's
        if c == '"':
            self._open_string(self._enum_choices(frame, field), key=False)
            return True
        if c in "{[":
            role = "args" if frame.role == "root" and field == "arguments" else "free"
            if c == "{":
                self.stack.append(_Frame(False, role, "key_or_end"))
            else:
                self.stack.append(_Frame(True, role, "value_or_end"))
            return True
        if c in _SCALAR:
            self.scalar = c
            return _scalar_prefix(c)
        return False

    def _open_string(self, choices: tuple[str, ...] | None, key: bool) -> None:
        self.text, self.choices, self.string_is_key, self.escape = "", choices, key, False

    def _key_choices(self, frame: _Frame) -> tuple[str, ...] | None:
        if frame.role == "root":
            return tuple(k for k in ("arguments", "name") if k not in frame.used)
        if frame.role == "args" and self.tool is not None:
            shape = self.grammar.tools[self.tool]
            return tuple(sorted(shape.params - frame.used))
        return None

    def _enum_choices(self, frame: _Frame, field: str | None) -> tuple[str, ...] | None:
        if frame.role == "args" and self.tool is not None and field is not None:
            return self.grammar.tools[self.tool].enums.get(field)
        return None

    def _after_value(self, value: str | None) -> None:
        frame = self.stack[-1]
        if frame.role == "root" and frame.key == "name" and value is not None:
            self.tool = value
        frame.expect = "comma_or_end"

    def _close(self, frame: _Frame) -> bool:
        if frame.role == "root" and frame.used != {"name", "arguments"}:
            return False
        if frame.role == "args" and self.tool is not None:
            if not self.grammar.tools[self.tool].required <= frame.used:
                return False
        self.stack.pop()
        if not self.stack:  # the call's JSON is complete: its closing tag comes next
            self.closing = ""
            return True
        self._after_value(None)
        return True

    # -- what may come next -----------------------------------------------------------------
    def targets(self) -> list[str]:
        """Texts that spell the rest of the constrained string being written (or the next
        key's), closing quote included: where the exact candidates of a redraw come from."""
        if not self.inside:
            return []
        if self.closing is not None:
            return [CLOSE_TAG[len(self.closing) :]]
        if self.text is not None:
            if self.choices is None:
                return []
            return [c[len(self.text) :] + '"' for c in self.choices if c.startswith(self.text)]
        if self.stack and self.stack[-1].expect in ("key_or_end", "key"):
            choices = self._key_choices(self.stack[-1]) or ()
            return ['"' + c + '"' for c in choices]
        if self.stack and self.stack[-1].expect == "value":
            frame = self.stack[-1]
            if frame.role == "root" and frame.key == "name":
                return ['"' + c + '"' for c in self.grammar.names]
        return []


def _scalar_prefix(text: str) -> bool:
    """Whether ``text`` can still become a JSON number (of at most MAX_SCALAR characters)
    or literal."""
    if any(lit.startswith(text) for lit in _LITERALS):
        return True
    return len(text) <= MAX_SCALAR and _NUMBER_PREFIX.fullmatch(text) is not None


def _scalar_done(text: str) -> bool:
    return text in _LITERALS or _NUMBER.fullmatch(text) is not None


def _has_prefix(choices: tuple[str, ...], prefix: str) -> bool:
    """Whether a member of the sorted ``choices`` starts with ``prefix``."""
    i = bisect.bisect_left(choices, prefix)
    return i < len(choices) and choices[i].startswith(prefix)


class Vocabulary:
    """Every token's text, decoded once, and the look-ups a redraw needs."""

    def __init__(self, tokenizer: Any, size: int | None = None) -> None:
        size = max(len(tokenizer), size or 0)
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        anchor = tokenizer.encode("a", add_special_tokens=False)[:1]
        head = tokenizer.decode(anchor)
        rows = tokenizer.batch_decode([anchor + [i] for i in range(len(tokenizer))])
        self.text: list[str | None] = [None] * size
        for i, row in enumerate(rows):
            if i not in special and row.startswith(head) and len(row) > len(head):
                self.text[i] = row[len(head) :]
        self.by_text: dict[str, list[int]] = {}
        for i, t in enumerate(self.text):
            if t is not None:
                self.by_text.setdefault(t, []).append(i)
        self.sorted_texts = sorted(self.by_text)

    def spelling(self, target: str) -> list[int]:
        """Tokens that spell a non-empty prefix of ``target`` or start with all of it."""
        out: list[int] = []
        for k in range(1, len(target) + 1):
            out += self.by_text.get(target[:k], [])
        i = bisect.bisect_right(self.sorted_texts, target)
        while i < len(self.sorted_texts) and self.sorted_texts[i].startswith(target):
            out += self.by_text[self.sorted_texts[i]]
            i += 1
        return out


@functools.lru_cache(maxsize=1024)
def _grammar_for(key: str) -> CallGrammar:
    return CallGrammar(json.loads(key))


def grammar_for(tools: list[dict[str, Any]]) -> CallGrammar:
    """The grammar of a tool list (cached: rows of one environment share it)."""
    return _grammar_for(json.dumps(tools, sort_keys=True, default=str))


class ConstrainedRows:
    """The grammar states of one generation batch's rows and the redraw of refused tokens.

    Args:
        vocab: the tokenizer's :class:`Vocabulary`.
        eos: the end-of-turn token id.
        tools: per row, the tools it may call (``None``: that row is free).
    """

    def __init__(
        self, vocab: Vocabulary, eos: int, tools: list[list[dict[str, Any]] | None]
    ) -> None:
        self.vocab, self.eos = vocab, eos
        self.states = [None if t is None else grammar_for(t).start() for t in tools]
        self.redrawn = 0

    def fix(self, row: int, token: int, logits: Any, temperature: float, generator: Any) -> tuple:
        """The token row ``row`` emits given the model's draw ``token`` and the step's
        ``logits`` (1-D): ``(token, logprob or None)``; ``None`` = the draw stands and its
        log-probability is the model's. Advances the row's state."""
        state = self.states[row]
        if state is None:
            return token, None
        if self._advance(state, token):
            return token, None
        allowed = self._allowed(state, logits)
        if not allowed:  # nothing fits (a vocabulary without the characters): let it be
            self.states[row] = None
            return token, None
        import torch

        self.redrawn += 1
        index = torch.tensor(allowed, device=logits.device)
        scores = logits[index].float()
        if temperature > 0:
            logp = torch.log_softmax(scores / temperature, dim=-1)
            pick = int(torch.multinomial(logp.exp(), 1, generator=generator)[0])
        else:
            logp = torch.log_softmax(scores, dim=-1)
            pick = int(scores.argmax())
        chosen = allowed[pick]
        self._advance(state, chosen)
        return chosen, float(logp[pick])

    def _advance(self, state: CallState, token: int) -> bool:
        if token == self.eos:
            return state.may_end
        text = self.vocab.text[token] if token < len(self.vocab.text) else None
        if text is None:
            return not state.inside
        trial = state.copy()
        if not trial.feed(text):
            return False
        _assign(state, trial)
        return True

    def _allowed(self, state: CallState, logits: Any) -> list[int]:
        import torch

        top = torch.topk(logits, min(CANDIDATES, logits.shape[-1])).indices.tolist()
        candidates = dict.fromkeys(top)
        for target in state.targets():
            candidates.update(dict.fromkeys(self.vocab.spelling(target)))
        allowed = [t for t in candidates if self._fits(state, t)]
        if not allowed:
            allowed = [t for t in range(logits.shape[-1]) if self._fits(state, t)]
        return allowed

    def _fits(self, state: CallState, token: int) -> bool:
        if token == self.eos:
            return state.may_end
        text = self.vocab.text[token] if token < len(self.vocab.text) else None
        return state.accepts(text)


def _assign(state: CallState, other: CallState) -> None:
    for name in CallState.__slots__:
        setattr(state, name, getattr(other, name))
