"""An LLM judge for rubric criteria that no rule can check.

The judge sees the task, the agent's final answer and a caller-written summary of what the
agent did (database changes, tool calls), and returns one :class:`Verdict` per criterion. Model
output is untrusted: whatever it says, :meth:`LLMJudge.judge` returns a verdict for every
criterion, and a criterion the output does not settle is unmet (never silently passed).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the verifier core must not import the LLM layer at run time
    from agentworld_gym.llm.base import LLMBackend

JUDGE_SYSTEM_PROMPT = """\
You grade whether an AI agent completed a task. For each numbered criterion, decide from the \
task, the agent's final answer and the evidence of what the agent actually did whether the \
criterion is met. Judge only what is shown: a claim in the answer that the evidence does not \
support does not count. Be strict; if unsure, the criterion is not met.

Reply with only a JSON array, one object per criterion, in order, and nothing else:
[{"index": 0, "met": true, "reason": "<one sentence>"}, ...]"""

JUDGE_USER_TEMPLATE = """\
## Task
{instruction}

## Agent's final answer
{answer}

## Evidence (final database changes and tool calls)
{evidence}

## Criteria
{criteria}"""

_UNPARSEABLE = "judge output unparseable"
_SNIPPET_CHARS = 200
# One verdict per line: "0: YES - reason", "[1] NO, because ...", "Criterion 2 - yes".
_LINE_VERDICT = re.compile(
    r"^[\s>*#\-\[(]*(?:criterion\s*)?(\d+)?[\s\]).:\-*]*\b(yes|no)\b[\s:.,\-–—*]*(.*)$",
    re.IGNORECASE,
)
_THINK_BLOCK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_BOOL_WORDS = {"true": True, "yes": True, "met": True, "false": False, "no": False}


@dataclass(frozen=True)
class Verdict:
    """The judge's decision on one criterion."""

    met: bool
    reason: str


class LLMJudge:
    """Grades natural-language criteria with an :class:`~agentworld_gym.llm.base.LLMBackend`.

    Args:
        backend: The model to ask.
        temperature: Sampling temperature; 0 makes grading as repeatable as the server allows.
        max_tokens: Cap on the judge's reply.
    """

    def __init__(self, backend: LLMBackend, *, temperature: float = 0.0, max_tokens: int = 512):
        self.backend = backend
        self.temperature = temperature
        self.max_tokens = max_tokens

    def judge(
        self, instruction: str, answer: str, criteria: list[str], evidence: str = ""
    ) -> list[Verdict]:
        """Return one verdict per criterion, in order.

        Args:
            instruction: The task as the agent saw it.
            answer: The agent's final answer.
            criteria: Natural-language criteria; ``[]`` returns ``[]`` without calling the model.
            evidence: A text summary of the final database changes and tool calls; the judge is
                told to trust it over the answer's claims.

        Backend errors (unreachable server, ...) propagate; bad model output never raises.
        """
        if not criteria:
            return []
        messages = [
            {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
            {
                "role": "user",
                "content": format_judge_request(instruction, answer, criteria, evidence),
            },
        ]
        reply = self.backend.chat(
            messages, temperature=self.temperature, max_tokens=self.max_tokens
        )
        return parse_verdicts(reply.get("content") or "", len(criteria))


def format_judge_request(instruction: str, answer: str, criteria: list[str], evidence: str) -> str:
    """The user message of the judge prompt; criteria are numbered from 0."""
    numbered = "\n".join(f"{index}. {text}" for index, text in enumerate(criteria))
    return JUDGE_USER_TEMPLATE.format(
        instruction=instruction.strip() or "(none)",
        answer=answer.strip() or "(empty)",
        evidence=evidence.strip() or "(none provided)",
        criteria=numbered,
    )


def parse_verdicts(text: str, num_criteria: int) -> list[Verdict]:
    """Read ``num_criteria`` verdicts from a judge reply; never raises.

    Tries, in order: a JSON array of verdict objects anywhere in the text (inside code fences
    or prose, or wrapped as ``{"verdicts": [...]}``), ignoring ``<think>`` blocks; then one
    ``YES``/``NO`` per line, numbered, or unnumbered when there is exactly one such line per
    criterion (so a stray "Yes, ..." in prose passes nothing). A criterion neither settles is
    ``Verdict(met=False, reason="judge output unparseable: ...")``.

    >>> parse_verdicts('Sure! ```json\\n[{"index": 0, "met": true, "reason": "ok"}]\\n```', 1)
    [Verdict(met=True, reason='ok')]
    >>> parse_verdicts("0: NO - nothing was created", 1)
    [Verdict(met=False, reason='nothing was created')]
    """
    answer = _THINK_BLOCK.sub("", text)  # reasoning models draft verdicts before answering
    found = _verdicts_from_json(answer, num_criteria) or _verdicts_from_lines(answer, num_criteria)
    snippet = " ".join(text.split())[:_SNIPPET_CHARS]
    return [
        found.get(index)
        or Verdict(False, f"{_UNPARSEABLE}: no verdict for criterion {index} in {snippet!r}")
        for index in range(num_criteria)
    ]


def _verdicts_from_json(text: str, num_criteria: int) -> dict[int, Verdict]:
    decoder = json.JSONDecoder()
    loose: list[Any] = []  # lone verdict objects, e.g. from an array cut off by max_tokens
    start = 0
    while start < len(text):
        if text[start] not in "[{":
            start += 1
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            start += 1
            continue
        if isinstance(value, dict) and not any(isinstance(v, list) for v in value.values()):
            loose.append(value)
        else:
            verdicts = _verdicts_from_list(_unwrap(value), num_criteria)
            if verdicts:
                return verdicts
        start = end
    return _verdicts_from_list(loose, num_criteria)


def _unwrap(value: Any) -> Any:
    """``{"verdicts": [...]}`` -> ``[...]``; anything else unchanged."""
    if isinstance(value, dict):
        return next((item for item in value.values() if isinstance(item, list)), value)
    return value


def _verdicts_from_list(items: Any, num_criteria: int) -> dict[int, Verdict]:
    if not isinstance(items, list):
        return {}
    indexed: dict[int, Verdict] = {}
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        met = _as_bool(item.get("met"))
        index = _as_int(item.get("index", position))
        if met is None or index is None:
            continue
        indexed.setdefault(index, Verdict(met, str(item.get("reason", "")).strip()))
    return _zero_based(indexed, num_criteria)


def _verdicts_from_lines(text: str, num_criteria: int) -> dict[int, Verdict]:
    numbered: dict[int, Verdict] = {}
    unnumbered: list[Verdict] = []
    for line in text.splitlines():
        match = _LINE_VERDICT.match(line)
        if match is None:
            continue
        number, word, reason = match.groups()
        verdict = Verdict(word.lower() == "yes", reason.strip())
        if number is None:
            unnumbered.append(verdict)
        else:
            numbered.setdefault(int(number), verdict)
    if numbered:
        return _zero_based(numbered, num_criteria)
    return dict(enumerate(unnumbered)) if len(unnumbered) == num_criteria else {}


def _zero_based(indexed: dict[int, Verdict], num_criteria: int) -> dict[int, Verdict]:
    """Shift a reply numbered exactly 1..n (a common slip) to 0..n-1; drop out-of-range ones."""
    if num_criteria and set(indexed) == set(range(1, num_criteria + 1)):
        indexed = {index - 1: verdict for index, verdict in indexed.items()}
    return {index: verdict for index, verdict in indexed.items() if 0 <= index < num_criteria}


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    return _BOOL_WORDS.get(value.strip().lower()) if isinstance(value, str) else None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None
