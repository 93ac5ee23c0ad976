"""The adversarial gate: how lazy, greedy and sloppy policies score on a task, before it ships.

An RL policy optimises exactly what the verifier pays for, so every task is attacked through
the same ``reset``/``step`` an agent uses, by a fixed, seeded set of policies:

no work (must earn no success, reward < 0.3 on every task, ~0 on average)
    ``empty`` — no calls, an empty answer (paid nothing: an episode without a successful
    call never is, on a task whose gold calls a tool, see ``AgentWorldEnv.verify``);
    ``echo`` — the gold's first read, then the request as the answer; ``numbers`` — that
    read, then the constant answer "0 1 2 ... 11"; ``guess`` — a few random calls of tools
    the gold does not call, then one small count or truth value alone (each of ``GUESSES``
    in turn: a policy that always answers "2" must not be paid where the answer happens to
    be 2, see :mod:`agentworld_gym.verifiers.evidence`); ``random`` — a few random valid
    calls, then every value seen.
partial or greedy work (may keep partial credit as shaping, never success)
    ``dump`` — the gold chain's reads, then every value they returned as the answer;
    ``work_dump`` — the whole gold chain, then every value it returned as the answer (on
    tasks that ask for values: doing the work does not pay for listing everything seen);
    ``drop_write`` — the gold chain with one write left out (each in turn);
    ``alter_write`` — the gold chain with one write's value changed (each in turn).

and by correct-but-different solutions, which must still earn 1.0 with success:
    ``gold`` — the gold chain and answer; ``rephrased`` — the answer said otherwise (a
    preamble, small integers in words); ``extra_read`` — a harmless read first;
    ``reordered`` — two adjacent independent reads swapped.

A task also fails the gate when a value its answer checks ask for is returned by no tool of
the gold run and is not in the request: the task would pay for a stored answer the agent can
never derive.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import SpecError
from agentworld_gym.replay import resolve_refs
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.verifiers.answers import Expected, tokens
from agentworld_gym.verifiers.checks import ANSWER_CHECKS, answer_expected, leaves

NO_WORK = ("empty", "echo", "numbers", "guess", "random")
PARTIAL = ("dump", "work_dump", "drop_write", "alter_write")
ADVERSARIES = NO_WORK + PARTIAL
VARIANTS = ("gold", "rephrased", "extra_read", "reordered")
NO_WORK_MAX = 0.3
"""A no-work adversary at or above this reward on a task fails it."""
NUMBERS = " ".join(str(i) for i in range(12))
GUESSES = ("0", "1", "2", "3", "true", "false")
"""The constant answers of the ``guess`` adversary: the counts and truth values a lazy policy
would bet on."""
SKIP: dict[str, Any] = {"name": "", "arguments": {}}
"""A left-out call: it keeps its step number, so later ``$step`` references stay right."""
_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
_DUMP_CHARS = 20_000


@dataclass
class Attempt:
    """One policy's episode on one task."""

    policy: str
    reward: float
    success: bool
    detail: str = ""


@dataclass
class TaskGate:
    """Every attempt on one task and the gate's verdict."""

    env_id: str
    task_id: str
    attempts: list[Attempt] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _refs(value: Any) -> set[int]:
    """The steps a call's arguments reference (``"$2.id"`` → 2)."""
    if isinstance(value, str) and value.startswith("$"):
        head = value[1:].split(".", 1)[0]
        return {int(head)} if head.isdigit() else set()
    if isinstance(value, dict):
        return set().union(*map(_refs, value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*map(_refs, value)) if value else set()
    return set()


class Gate:
    """Runs the adversaries and variants on the tasks of one environment.

    Args:
        spec: the environment.
        seed: seeds the ``random`` adversary (with the task's request, so a task draws the
            same random calls under any id).
    """

    def __init__(self, spec: EnvSpec, seed: int = 0) -> None:
        self.spec = spec
        self.seed = seed
        self.env = AgentWorldEnv(spec, split="all", max_turns=10_000)
        self.writes = {t.name for t in spec.tools if t.kind != "read"}
        self.seen = [v for v in leaves(spec.database.snapshot()) if isinstance(v, str)][:5000]
        """The strings the ``random`` adversary fills arguments with (the data's own)."""

    # -- episodes ---------------------------------------------------------------------------
    def _episode(
        self, task: TaskSpec, calls: list[dict[str, Any]], answer: str | None
    ) -> tuple[float, bool, list[Any], str]:
        """Run ``calls`` (``$step`` references resolved against this run's outputs; a call
        whose reference cannot resolve, or ``SKIP``, is left out) and submit ``answer``
        (``None``: every value the calls returned)."""
        self.env.reset(options={"task_id": task.id})
        outputs: list[Any] = []
        for call in calls:
            if call is SKIP:
                outputs.append(None)
                continue
            try:
                arguments = resolve_refs(call.get("arguments", {}), outputs)
            except SpecError:
                outputs.append(None)
                continue
            obs, *_ = self.env.step(_dumps({"name": call["name"], "arguments": arguments}))
            outputs.append(_loads(obs))
        if answer is None:
            answer = " ".join(str(v) for v in leaves(outputs))[:_DUMP_CHARS]
        _, reward, _, _, info = self.env.step(
            _dumps({"name": "submit", "arguments": {"answer": answer}})
        )
        verification = info.get("verification", {})
        reason = verification.get("error") or "; ".join(
            f"{b['criterion'][:40]}: {b['reason']}"
            for b in verification.get("breakdown", [])
            if not b.get("met")
        )
        return float(reward), bool(verification.get("success")), outputs, reason[:300]

    def _attempt(self, name: str, task: TaskSpec, calls: list, answer: str | None) -> Attempt:
        reward, success, _, reason = self._episode(task, calls, answer)
        return Attempt(name, reward, success, reason)

    def _best_guess(self, task: TaskSpec, calls: list[dict[str, Any]]) -> Attempt:
        """The ``guess`` adversary: ``calls``, then each constant of ``GUESSES`` alone; the
        best one counts."""
        tries = [self._attempt("guess", task, calls, g) for g in GUESSES]
        best = max(tries, key=lambda a: (a.success, a.reward))
        guess = GUESSES[tries.index(best)]
        return Attempt("guess", best.reward, best.success, f"answer {guess!r}: {best.detail}")

    # -- the policies -------------------------------------------------------------------------
    def _gold(self, task: TaskSpec) -> tuple[list[dict[str, Any]], str]:
        gold = task.gold or {}
        return list(gold.get("calls", [])), str(gold.get("answer", task.reference_answer) or "")

    def _random_calls(
        self, rng: random.Random, n: int = 4, avoid: set[str] | frozenset = frozenset()
    ) -> list[dict]:
        """``n`` calls of random tools (none named in ``avoid``) with required arguments
        drawn from the data's own strings."""
        tools = [t for t in self.spec.tools if t.name not in avoid] or self.spec.tools
        calls = []
        for _ in range(n):
            tool = rng.choice(tools)
            props = tool.parameters.get("properties", {})
            args = {}
            for name in tool.parameters.get("required", []):
                args[name] = _random_value(props.get(name, {}), self.seen, rng)
            calls.append({"name": tool.name, "arguments": args})
        return calls

    def attack(self, task: TaskSpec) -> TaskGate:
        """Every adversary and variant on ``task``, and the verdict."""
        gate = TaskGate(self.spec.gym_id, task.id)
        calls, answer = self._gold(task)
        rng = random.Random(f"{self.seed}:{task.instruction}")  # ids change when tasks are named
        add = gate.attempts.append
        reads = [SKIP if c["name"] in self.writes else c for c in calls]
        first_read = next(
            (c for c in reads if c is not SKIP and not _refs(c.get("arguments"))), None
        )
        # one harmless read first: an episode without a working call is paid nothing, and the
        # guesses must still earn nothing from the answer checks themselves
        looked = [first_read] if first_read is not None else []
        add(self._attempt("empty", task, [], ""))
        add(self._attempt("echo", task, looked, task.instruction))
        add(self._attempt("numbers", task, looked, NUMBERS))
        add(self._best_guess(task, self._random_calls(rng, avoid={c["name"] for c in calls})))
        add(self._attempt("random", task, self._random_calls(rng), None))
        asked = _asked(task)
        if calls:
            add(self._attempt("dump", task, reads, None))
        if calls and asked:
            add(self._attempt("work_dump", task, calls, None))
        writes = [i for i, c in enumerate(calls) if c["name"] in self.writes]
        for i in writes:
            add(self._attempt("drop_write", task, [*calls[:i], SKIP, *calls[i + 1 :]], answer))
            changed = _alter(calls[i])
            if changed is not None:
                add(
                    self._attempt(
                        "alter_write", task, [*calls[:i], changed, *calls[i + 1 :]], answer
                    )
                )
        reward, success, outputs, reason = self._episode(task, calls, answer)
        add(Attempt("gold", reward, success, reason))
        add(self._attempt("rephrased", task, calls, _rephrase(answer, asked)))
        if first_read is not None:
            shifted = [_shift(c, 1) for c in calls]
            add(self._attempt("extra_read", task, [first_read, *shifted], answer))
        swap = _swappable(calls, self.writes)
        if swap is not None:
            add(self._attempt("reordered", task, _swapped(calls, swap), answer))
        gate.problems = self._verdict(gate.attempts) + self._underivable(task, outputs)
        return gate

    def _verdict(self, attempts: list[Attempt]) -> list[str]:
        problems = []
        for a in attempts:
            if a.policy in ADVERSARIES and a.success:
                problems.append(f"adversary {a.policy} succeeds ({a.reward:.2f})")
            elif a.policy in NO_WORK and a.reward >= NO_WORK_MAX:
                problems.append(f"no-work adversary {a.policy} earns {a.reward:.2f}")
            elif a.policy in VARIANTS and (not a.success or a.reward < 1.0 - 1e-9):
                problems.append(f"correct variant {a.policy} scores {a.reward:.2f}: {a.detail}")
        return problems

    def _underivable(self, task: TaskSpec, outputs: list[Any]) -> list[str]:
        """Asked text values that no gold output returns and the request does not state."""
        asked = _asked(task)
        if not asked:
            return []
        seen = tokens(" ".join(str(v) for v in leaves(outputs)) + " " + task.instruction)
        text = " " + " ".join(seen) + " "
        missing = [
            e.value
            for e in asked
            if e.kind in ("", "text")
            and isinstance(e.value, str)
            and (t := tokens(e.value))
            and f" {' '.join(t)} " not in text
        ]
        return [f"expected value {v!r} is returned by no tool of the gold run" for v in missing]


def _asked(task: TaskSpec) -> list[Expected]:
    verifier = task.verifier
    if verifier.get("type") != "rubric":
        return []
    return [
        e
        for c in verifier.get("criteria", [])
        if (check := c.get("check")) and check.get("type") in ANSWER_CHECKS
        for e in answer_expected(check)
    ]


def _random_value(schema: dict[str, Any], seen: list[str], rng: random.Random) -> Any:
    kind = schema.get("type")
    if "enum" in schema and schema["enum"]:
        return rng.choice(schema["enum"])
    if kind == "integer":
        return rng.randint(0, 10)
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_random_value(schema.get("items", {}), seen, rng)]
    if kind == "object":
        return {}
    return rng.choice(seen) if seen else "x"


def _alter(call: dict[str, Any]) -> dict[str, Any] | None:
    """The call with its last plain argument value changed (``None``: nothing to change)."""
    args = dict(call.get("arguments") or {})
    for name in reversed(list(args)):
        value = args[name]
        if isinstance(value, bool):
            args[name] = not value
        elif isinstance(value, int | float):
            args[name] = value + 1
        elif isinstance(value, str) and value and not value.startswith("$"):
            args[name] = value + " (changed)"
        else:
            continue
        return {**call, "arguments": args}
    return None


def _shift(call: dict[str, Any], by: int) -> dict[str, Any]:
    """The call with its ``$step`` references moved ``by`` steps later."""

    def move(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$"):
            head, _, rest = value[1:].partition(".")
            if head.isdigit():
                return f"${int(head) + by}" + (f".{rest}" if rest else "")
            return value
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        if isinstance(value, list):
            return [move(v) for v in value]
        return value

    return {**call, "arguments": move(call.get("arguments", {}))}


def _swappable(calls: list[dict[str, Any]], writes: set[str]) -> int | None:
    """The first ``i`` where reads ``i`` and ``i + 1`` do not depend on each other."""
    for i in range(len(calls) - 1):
        a, b = calls[i], calls[i + 1]
        if a["name"] in writes or b["name"] in writes or a == b:
            continue
        if i in _refs(b.get("arguments")):
            continue
        later = set().union(*(_refs(c.get("arguments")) for c in calls[i + 2 :]))
        if {i, i + 1} & later:
            continue  # a later call reads their outputs by position
        return i
    return None


def _swapped(calls: list[dict[str, Any]], i: int) -> list[dict[str, Any]]:
    out = list(calls)
    out[i], out[i + 1] = out[i + 1], out[i]
    return out


def _rephrase(answer: str, asked: list[Expected]) -> str:
    """The same answer said otherwise: a preamble, and the asked integers up to twelve in
    words ("3 of them" -> "three of them"; a "2" inside a name stays)."""
    numbers = {
        int(e.value)
        for e in asked
        if isinstance(e.value, int | float)
        and not isinstance(e.value, bool)
        and float(e.value).is_integer()
        and 0 <= e.value <= 12
    }
    words = []
    for word in answer.split(" "):
        core = word.rstrip(".,;:")
        tail = word[len(core) :]
        said = core.isdigit() and int(core) in numbers
        words.append(_WORDS[int(core)] + tail if said else word)
    return "Here is the answer you asked for: " + " ".join(words)


def gate_env(spec: EnvSpec, tasks: list[TaskSpec] | None = None, seed: int = 0) -> list[TaskGate]:
    """Attack every task of ``spec`` (or ``tasks``)."""
    gate = Gate(spec, seed)
    return [gate.attack(t) for t in (tasks if tasks is not None else spec.tasks)]


def table(results: list[TaskGate]) -> str:
    """Per policy: attempts, success rate, mean and max reward; then the verdicts."""
    rows: dict[str, list[Attempt]] = {}
    for r in results:
        for a in r.attempts:
            rows.setdefault(a.policy, []).append(a)
    lines = [f"{'policy':<12} {'kind':<8} {'episodes':>8} {'success':>8} {'mean':>6} {'max':>6}"]
    for name in (*ADVERSARIES, *VARIANTS):
        got = rows.get(name)
        if not got:
            continue
        kind = "no-work" if name in NO_WORK else "partial" if name in PARTIAL else "correct"
        rewards = [a.reward for a in got]
        lines.append(
            f"{name:<12} {kind:<8} {len(got):>8} {sum(a.success for a in got) / len(got):>8.1%} "
            f"{statistics.fmean(rewards):>6.3f} {max(rewards):>6.3f}"
        )
    failed = sum(not r.passed for r in results)
    lines.append(f"{len(results) - failed}/{len(results)} tasks pass the gate")
    return "\n".join(lines)
