"""Scripted play of BFCL tasks: the ground truth (every task must pass) and wrong variants.

A *script* is, per user turn, the calls to make (``{"name", "arguments"}``); the player
sends a turn's calls as one action, then a plain-text answer that ends the turn. Playing the
ground truth is the end-to-end check that our episodes, turns and tools reproduce BFCL
(``benchmarks/bfcl_replay.py`` does all 800 tasks); :func:`wrong_script` derives scripts
that should fail some tasks, to compare our verdict with BFCL's on the same calls.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.benchmarks_ext.bfcl.data import BFCLTask, parse_call

Script = list[list[dict[str, Any]]]
"""Per user turn, the calls to make."""

KNOWN_EXCEPTIONS: dict[str, str] = {
    **{
        f"multi_turn_{c}_173": (
            "the ground truth calls close_ticket(ticket_id='ticket_001'), a string where "
            "BFCL's function doc declares an integer: our schema check refuses it"
        )
        for c in ("base", "miss_func", "miss_param", "long_context")
    },
    "multi_turn_miss_func_49": (
        "the ground truth of turn 1 calls tail, which the task holds out until turn 3"
    ),
}
"""Tasks whose ground truth cannot pass through our environments, and why (BFCL's data)."""

TURN_DONE = "Done."
"""The answer that ends a turn in a scripted play (BFCL does not score answers)."""


def gold_script(task: BFCLTask) -> Script:
    """The task's ground-truth calls per turn, as calls with named arguments."""
    classes = list(task.entry["involved_classes"])
    return [[parse_call(text, classes) for text in turn] for turn in task.ground_truth]


@dataclass
class Played:
    """What a scripted play gave: the env's verdict and what the agent saw."""

    task_id: str
    success: bool
    reward: float
    verification: dict[str, Any]
    terminated: bool
    truncated: bool
    observations: list[list[str]] = field(default_factory=list)
    """Per turn, the tool result text of each call, in order."""
    refused: list[dict[str, Any]] = field(default_factory=list)
    """Calls the env refused before running them (``{"name", "ok", "error"}``)."""


def play(env: Any, task_id: str, script: Script, seed: int = 0) -> Played:
    """Play ``script`` on ``env`` (a BFCL env, bare or from ``gym.make``)."""
    env.reset(seed=seed, options={"task_id": task_id})
    cap = env.unwrapped.max_calls_per_action
    observations: list[list[str]] = []
    refused: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    reward, terminated, truncated = 0.0, False, False
    for calls in script:
        seen: list[str] = []
        for start in range(0, len(calls), cap):
            chunk = calls[start : start + cap]
            before = len(info.get("messages", [])) if info else 0
            _, reward, terminated, truncated, info = env.step(copy.deepcopy(chunk))
            messages = list(info["messages"])[before:]
            seen += [m["content"] for m in messages if m.get("role") == "tool"]
            refused += [
                r
                for r in info["tool_results"]
                if not r["ok"] and r["error"] != "tool_execution_error"
            ]
            if terminated or truncated:
                break
        observations.append(seen)
        if terminated or truncated:
            break
        _, reward, terminated, truncated, info = env.step(TURN_DONE)
        if terminated or truncated:
            break
    verification = dict(info.get("verification", {}))
    return Played(
        task_id,
        bool(verification.get("success")),
        float(reward),
        verification,
        bool(terminated),
        bool(truncated),
        observations,
        refused,
    )


MUTATIONS = ("drop_call", "skip_turn", "alter_argument", "repeat_call", "reverse_turn")
"""Ways :func:`wrong_script` spoils a ground truth (some spoilt scripts still pass: BFCL
checks state and results, not the exact calls)."""


def wrong_script(script: Script, kind: str, seed: int = 0) -> Script:
    """A spoilt copy of ``script`` (schema-valid calls only, so that every call runs).

    ``drop_call``: leave out one call; ``skip_turn``: make no call in one turn;
    ``alter_argument``: change one string argument; ``repeat_call``: make one call twice;
    ``reverse_turn``: one turn's calls in reverse order.
    """
    rng = random.Random(seed)
    out = copy.deepcopy(script)
    turns = [k for k, calls in enumerate(out) if calls]
    if not turns:
        return out
    k = rng.choice(turns)
    i = rng.randrange(len(out[k]))
    if kind == "drop_call":
        del out[k][i]
    elif kind == "skip_turn":
        out[k] = []
    elif kind == "repeat_call":
        out[k].insert(i, copy.deepcopy(out[k][i]))
    elif kind == "reverse_turn":
        out[k].reverse()
    elif kind == "alter_argument":
        candidates = [
            (t, j, name)
            for t in turns
            for j, call in enumerate(out[t])
            for name, value in call["arguments"].items()
            if isinstance(value, str)
        ]
        if candidates:
            t, j, name = rng.choice(candidates)
            out[t][j]["arguments"][name] += "_x"
        else:
            del out[k][i]
    else:
        raise ValueError(f"unknown mutation {kind!r}; known: {MUTATIONS}")
    return out


def bfcl_execution(task: BFCLTask, script: Script) -> list[list[str]]:
    """What BFCL's own executor (``execute_multi_turn_func_call``) answers to ``script``,
    per turn: the reference for the observations of :func:`play`."""
    import uuid

    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    from agentworld_gym.benchmarks_ext.bfcl.data import call_text
    from agentworld_gym.benchmarks_ext.bfcl.env import _LOCK

    model_name = f"agentworld_exec_{uuid.uuid4().hex}"
    out = []
    with _LOCK:
        try:
            for calls in script:
                results, _ = multi_turn_utils.execute_multi_turn_func_call(
                    [call_text(c["name"], c["arguments"]) for c in calls],
                    task.entry["initial_config"],
                    task.entry["involved_classes"],
                    model_name,
                    task.id,
                    long_context=task.long_context,
                )
                out.append(results)
        finally:
            names = vars(multi_turn_utils)
            for key in [k for k in names if k.startswith(model_name)]:
                del names[key]
    return out


class BFCLGoldPolicy:
    """A policy (``policy(messages, tools) -> OpenAI message``) that plays each task's ground
    truth, read from the chat alone: one instance serves many threads or a fake model server.

    It finds the task from the user messages so far (the first one, then the follow-ups to
    tell apart tasks that open alike), sends the current turn's calls when the turn has just
    begun, and ends the turn with :data:`TURN_DONE` once they have run.
    """

    def __init__(self, category: str) -> None:
        from agentworld_gym.benchmarks_ext.bfcl.data import load_category, to_task_spec

        self.plays: dict[str, list[tuple[list[str], Script]]] = {}
        for task in load_category(category).values():
            spec = to_task_spec(task)
            said = [spec.instruction, *(t["content"] for t in spec.turns)]
            self.plays.setdefault(spec.instruction, []).append((said, gold_script(task)))

    def __call__(self, messages: Any, tools: Any) -> dict[str, Any]:
        said = [m.get("content") for m in messages if m.get("role") == "user"]
        candidates = self.plays.get(said[0] if said else "", [])
        script = next((s for texts, s in candidates if texts[: len(said)] == said), None)
        turn = len(said) - 1
        if script is None or messages[-1].get("role") != "user" or not script[turn]:
            return {"role": "assistant", "content": TURN_DONE}
        calls = [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for i, c in enumerate(script[turn])
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}


def bfcl_pipeline_verdict(task: BFCLTask, script: Script) -> bool:
    """BFCL's own verdict for a model that made ``script``'s calls (one step per turn),
    without our environment: each turn's response decoded as BFCL's FC decoder does
    (``convert_to_function_call``), empty decodes dropped, then ``multi_turn_checker``."""
    from agentworld_gym.benchmarks_ext.bfcl.env import bfcl_verdict

    decoded = []
    for calls in script:
        response = [{c["name"]: json.dumps(c["arguments"])} for c in calls]
        step = [
            f"{name}({','.join(f'{k}={v!r}' for k, v in json.loads(args).items())})"
            for item in response
            for name, args in item.items()
        ]
        decoded.append([step] if step else [])
    return bool(bfcl_verdict(task, decoded)["valid"])
