"""Why did an episode fail? One primary class per failed episode, plus every label that applies.

The evidence is the trajectory's per-step ``tool_results`` (error codes from the env), the
verifier's breakdown (which criteria were unmet; a criterion's check type comes from the
task's verifier definition, in the same order) and the task's gold chain.

An *error* counts only if it was not recovered: a failed call of tool T is recovered when a
later call of T succeeds (for malformed actions and unknown tools: when any later call
succeeds). The primary class is the first that applies in this order, from the most basic
skill to the most subtle:

1. ``no_tool_use`` — no call attempted although the gold chain has calls;
2. ``malformed_call`` / 3. ``unknown_tool`` / 4. ``invalid_arguments`` /
   5. ``tool_error_unrecovered`` — an unrecovered error of that kind;
6. ``budget_exhausted`` — the turn budget ran out before an answer;
7. ``missing_step`` — a gold-chain tool was never called successfully, or a
   ``tool_called`` criterion is unmet;
8. ``wrong_value`` — a state check (``record``, ``count``) is unmet;
9. ``wrong_answer`` — an answer check (``answer_contains``, ``answer_equals``) is unmet;
10. ``judged_unmet`` — only LLM-judged criteria are unmet; ``script_failed`` — a script
    verifier said no; ``verifier_error`` — the verifier could not run; ``other``.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from agentworld_gym.evolution.episodes import EpisodeRecord
from agentworld_gym.spec import TaskSpec
from agentworld_gym.verifiers.checks import ANSWER_CHECKS


class FailureClass(enum.StrEnum):
    NO_TOOL_USE = "no_tool_use"
    MALFORMED_CALL = "malformed_call"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    TOOL_ERROR_UNRECOVERED = "tool_error_unrecovered"
    BUDGET_EXHAUSTED = "budget_exhausted"
    MISSING_STEP = "missing_step"
    WRONG_VALUE = "wrong_value"
    WRONG_ANSWER = "wrong_answer"
    JUDGED_UNMET = "judged_unmet"
    SCRIPT_FAILED = "script_failed"
    VERIFIER_ERROR = "verifier_error"
    OTHER = "other"


PRIORITY: list[FailureClass] = list(FailureClass)
"""Primary-class order (the enum's order)."""

_ERROR_CLASS = {
    "malformed_action": FailureClass.MALFORMED_CALL,
    "unknown_tool": FailureClass.UNKNOWN_TOOL,
    "invalid_arguments": FailureClass.INVALID_ARGUMENTS,
    "tool_execution_error": FailureClass.TOOL_ERROR_UNRECOVERED,
}
STATE_CHECKS = frozenset({"record", "count", "state"})
CALL_CHECKS = frozenset({"tool_called"})


@dataclass
class FailureDiagnosis:
    """The classification of one failed episode."""

    env_id: str
    task_id: str
    primary: FailureClass
    labels: list[FailureClass] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    """Tools implicated: those with unrecovered errors, missing gold tools, or the gold
    tools behind an unmet check."""
    reward: float = 0.0
    details: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["primary"] = self.primary.value
        data["labels"] = [label.value for label in self.labels]
        return data


def gold_tools(task: TaskSpec | None) -> list[str]:
    """Tool names of the task's gold chain, in order, without duplicates."""
    if task is None or not task.gold or task.gold.get("type") != "tool_chain":
        return []
    names: list[str] = []
    for call in task.gold.get("calls", []):
        if call.get("name") and call["name"] not in names:
            names.append(call["name"])
    return names


def unrecovered_errors(record: EpisodeRecord) -> list[tuple[FailureClass, str]]:
    """``(class, tool name)`` of every failed call no later call made good."""
    calls = record.calls
    out: list[tuple[FailureClass, str]] = []
    for i, call in enumerate(calls):
        if call.get("ok"):
            continue
        cls = _ERROR_CLASS.get(call.get("error") or "", FailureClass.TOOL_ERROR_UNRECOVERED)
        name = call.get("name") or ""
        later = calls[i + 1 :]
        if cls in (FailureClass.MALFORMED_CALL, FailureClass.UNKNOWN_TOOL):
            recovered = any(c.get("ok") for c in later)
        else:
            recovered = any(c.get("ok") and c.get("name") == name for c in later)
        if not recovered and (cls, name) not in out:
            out.append((cls, name))
    return out


def unmet_checks(record: EpisodeRecord, task: TaskSpec | None) -> list[tuple[str, str]]:
    """``(check type, criterion text)`` of every unmet criterion; ``"llm"`` without a check.
    A criterion unmet only because it waits for another (``requires``) is left out: the
    other one is the failure."""
    breakdown = record.verification.get("breakdown") or []
    criteria = (task.verifier.get("criteria") if task is not None else None) or []
    out = []
    for i, row in enumerate(breakdown):
        if row.get("met") is not False or row.get("waits_for"):
            continue
        check = criteria[i].get("check") if i < len(criteria) else None
        kind = check.get("type", "other") if isinstance(check, dict) else "llm"
        out.append((kind, str(row.get("criterion", ""))))
    return out


def classify_failure(
    record: EpisodeRecord, task: TaskSpec | None, write_tools: frozenset[str] = frozenset()
) -> FailureDiagnosis | None:
    """Classify a failed episode (``None`` for a success); see the module docstring."""
    if record.success:
        return None
    labels: list[FailureClass] = []
    tools: list[str] = []
    details: list[str] = []

    def add(cls: FailureClass, names: list[str] | tuple[str, ...] = (), detail: str = "") -> None:
        if cls not in labels:
            labels.append(cls)
        tools.extend(n for n in names if n and n not in tools)
        if detail:
            details.append(detail)

    gold = gold_tools(task)
    calls = record.calls
    if not calls and gold:
        add(FailureClass.NO_TOOL_USE, [], f"answered without calling any of {gold}")
    for cls, name in unrecovered_errors(record):
        add(cls, [name], f"{cls.value}: {name or '<unparsed call>'}")
    if record.truncated:
        add(FailureClass.BUDGET_EXHAUSTED, [], f"no answer after {record.turns} turns")
    called_ok = {c.get("name") for c in calls if c.get("ok")}
    missing = [name for name in gold if name not in called_ok]
    unmet = unmet_checks(record, task)
    if missing and (unmet or record.verification.get("verifier") == "script"):
        add(FailureClass.MISSING_STEP, missing, f"gold tools never called: {missing}")
    for kind, text in unmet:
        if kind in CALL_CHECKS:
            add(FailureClass.MISSING_STEP, [], f"unmet: {text}")
        elif kind in STATE_CHECKS:
            writes = [n for n in gold if n in write_tools] or gold
            add(FailureClass.WRONG_VALUE, writes, f"unmet state check: {text}")
        elif kind in ANSWER_CHECKS:
            reads = [n for n in gold if n not in write_tools] or gold
            add(FailureClass.WRONG_ANSWER, reads, f"unmet answer check: {text}")
        elif kind == "llm":
            add(FailureClass.JUDGED_UNMET, [], f"judged unmet: {text}")
        else:
            add(FailureClass.OTHER, [], f"unmet {kind} check: {text}")
    if record.verification.get("error"):
        add(FailureClass.VERIFIER_ERROR, [], str(record.verification["error"])[:200])
    elif record.verification.get("verifier") == "script":
        add(FailureClass.SCRIPT_FAILED, gold, "the script verifier rejected the episode")
    if not labels:
        add(FailureClass.OTHER, [], f"reward {record.reward:.2f} with no unmet criterion")
    labels.sort(key=PRIORITY.index)
    return FailureDiagnosis(
        env_id=record.env_id,
        task_id=record.task_id,
        primary=labels[0],
        labels=labels,
        tools=tools,
        reward=record.reward,
        details=details,
    )
