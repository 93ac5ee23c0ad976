"""``AgentWorldEnv``: a multi-turn, multi-tool, stateful text environment.

One episode = one task. ``reset`` picks a task (by ``options["task_id"]`` or the seed) and
returns its instruction; ``info`` carries ``tools`` (OpenAI function schemas, including the
built-in ``submit``), ``messages`` (the OpenAI chat so far, a read-only
:class:`MessagesView`), ``task_id`` and ``env_id``.
``step(action)`` runs the tool calls in the action (see :mod:`agentworld_gym.actions` for the
accepted shapes and for the rule that separates a tool call from a final answer) and returns
the tool results as the observation. A final answer (text with no tool-call marker, or a
``submit`` call) ends the episode with ``terminated=True`` and the verifier's reward; the turn
budget ends it with ``truncated=True`` and the reward of the state reached, judged with an
empty answer. Every intermediate reward is 0.

Malformed actions, unknown tools, invalid arguments and tool failures are observations the
agent can recover from, never exceptions, and leave the database unchanged. ``step`` never
raises on what an agent can send: text with invalid Unicode is repaired (U+FFFD), values JSON
cannot carry or nested deeper than :data:`~agentworld_gym.jsonsafe.MAX_DEPTH` are refused with
an error observation, and calls beyond ``max_calls_per_action`` in one action are refused
unrun (see :mod:`agentworld_gym.actions`).
"""

from __future__ import annotations

import datetime as dt
import itertools
import operator
from collections.abc import Iterator, Sequence
from typing import Any, SupportsFloat, overload

import gymnasium as gym
import orjson

from agentworld_gym.actions import SUBMIT_SCHEMA, ParsedAction, parse_action, usual_call
from agentworld_gym.database import Database
from agentworld_gym.errors import (
    ActionParseError,
    AgentWorldError,
    ConfigError,
    ToolError,
    TooManyCalls,
)
from agentworld_gym.jsonsafe import clean_text, preview
from agentworld_gym.spaces import TextSpace
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.tools import Encoded, Toolbox, ToolContext
from agentworld_gym.users import ScriptedUser, UserSimulator
from agentworld_gym.verifiers import (
    CallRecord,
    Episode,
    Judge,
    Verification,
    Verifier,
    answer_checked,
    build_verifier,
    declared_fields,
    needs_judge,
)
from agentworld_gym.verifiers.evidence import GoldRead, gold_reads, primary_keys, unseen

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent working in {name}. Use the tools to fulfil the user's request: call "
    "tools, read their results, and when you are done reply with the final answer as plain "
    "text (or call submit)."
)


MAX_CALLS_PER_ACTION = 32
"""Default cap on the tool calls one action may run (``max_calls_per_action``): the rest are
refused unrun, each with a ``too_many_calls`` error observation. Keeps one action's cost bounded
(a sandboxed tool call takes milliseconds)."""


NO_CALL = "the task needs a tool call and the episode made no successful one"
"""Why an episode that never made a tool call work is paid nothing (``verification["unpaid"]``)."""
UNSEEN = (
    "the answer is paid only for what the episode saw, and no successful call returned what "
    "{name}({arguments}) returns in the gold solution"
)
"""Why an answer the episode never looked up is paid nothing (``verification["unpaid"]``)."""


def _needs_a_call(task: TaskSpec) -> bool:
    """Whether the task's gold solution calls a tool."""
    return bool((task.gold or {}).get("calls"))


def dumps(value: Any) -> str:
    """JSON text of a tool result (compact; falls back to ASCII escapes for odd Unicode)."""
    if isinstance(value, str):
        return clean_text(value)
    if type(value) is Encoded:  # cached JSON fragments: valid JSON, written as they are
        return value.text()
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        import json

        try:
            return json.dumps(value, ensure_ascii=True, default=str)
        except (ValueError, RecursionError):  # a circular or absurdly deep result
            return json.dumps(preview(value, 2000))


def _arguments_text(arguments: Any) -> str:
    """A call's arguments as the JSON text of the assistant message (``{}`` for none)."""
    if type(arguments) is dict:
        try:
            return orjson.dumps(arguments).decode()
        except TypeError:
            pass
    return dumps(arguments or {})


class EpisodeOver(AgentWorldError):
    """``step`` was called after the episode ended; call ``reset`` first."""


Message = dict[str, Any]


class MessagesView(Sequence[Message]):
    """A read-only snapshot of the chat: the first ``length`` messages of an episode's log.

    ``info["messages"]`` is one of these, made in O(1) per step: the env only appends to an
    episode's log (``reset`` starts a new list), so the prefix a view covers never changes and
    a view taken at turn 3 still shows turn 3 later. It indexes, slices (into a list), iterates,
    compares equal to a list of the same messages and pickles as a list; call ``list(view)``
    for a list of your own (to mutate or to JSON-encode).

    >>> log = [{"role": "user", "content": "hi"}]
    >>> view = MessagesView(log)
    >>> log.append({"role": "assistant", "content": "hello"})
    >>> len(view), view == [{"role": "user", "content": "hi"}]
    (1, True)
    """

    __slots__ = ("_log", "_length")

    def __init__(self, log: list[Message], length: int | None = None) -> None:
        self._log = log
        self._length = len(log) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self._log[i] for i in range(*index.indices(self._length))]
        position = operator.index(index)
        if position < 0:
            position += self._length
        if not 0 <= position < self._length:
            raise IndexError("messages index out of range")
        return self._log[position]

    def __iter__(self) -> Iterator[Message]:
        return itertools.islice(self._log, self._length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessagesView | list):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable like one

    def __add__(self, other: Sequence[Message]) -> list[Message]:
        return [*self, *other]

    def __radd__(self, other: Sequence[Message]) -> list[Message]:
        return [*other, *self]

    def __reduce__(self) -> tuple[type[list], tuple[list[Message]]]:
        return list, (list(self),)

    def __repr__(self) -> str:
        return f"MessagesView({list(self)!r})"


class _Shared:
    """Per-EnvSpec objects that every env instance of that spec reuses."""

    def __init__(self, spec: EnvSpec) -> None:
        self.toolbox = Toolbox(spec)
        self.tools = [*self.toolbox.schemas, SUBMIT_SCHEMA]
        self.verifiers: dict[tuple[str, int], Verifier] = {}
        self.judged: dict[str, bool] = {}
        """Task id → whether its verifier has criteria only an LLM judge decides."""
        self.fields: dict[str, list[str]] = {}
        """Task id → the answer fields its verifier declares (may be submitted structured)."""
        self.evidence: dict[str, list[GoldRead]] = {}
        """Task id → what its answer is about: the gold solution's reads on the initial state
        (empty when the verifier checks no answer; :mod:`agentworld_gym.verifiers.evidence`)."""
        self.keys = primary_keys(spec)
        """The collections' primary-key fields: how a result's records are known."""
        self.budgets: dict[str, int] = {}
        """Task id → its turn budget (``difficulty.max_turns``, else the spec's)."""
        clock = spec.runtime.clock.replace("Z", "+00:00")
        self.clock = dt.datetime.fromisoformat(clock)

    @classmethod
    def of(cls, spec: EnvSpec) -> _Shared:
        shared = spec.__dict__.get("_shared")
        if shared is None:
            shared = spec.__dict__["_shared"] = cls(spec)
        return shared


class AgentWorldEnv(gym.Env[str, str]):
    """A Gymnasium environment over one :class:`~agentworld_gym.spec.EnvSpec`.

    Args:
        spec: the environment, or the path of its folder.
        split: which tasks ``reset`` draws from (``"train"``, ``"test"`` or ``"all"``).
        max_turns: turn budget of every episode (default: the task's own
            ``difficulty.max_turns``, which leaves room to recover from errors on a long task,
            else the spec's ``runtime.max_turns``). ``self.max_turns`` is the current
            episode's budget, also given as ``info["max_turns"]`` at reset.
        judge: an LLM judge for rubric criteria without a machine check.
        max_action_chars: longer actions are refused with an error observation.
        max_calls_per_action: an action's calls past this many are refused unrun, each with
            an error observation (default :data:`MAX_CALLS_PER_ACTION`).
        user: the simulated user that answers the agent on tasks with a ``user`` scenario
            (:mod:`agentworld_gym.users`; a scenario with a ``script`` needs none).
        render_mode: ``"ansi"`` renders the chat so far as text.

    >>> import gymnasium as gym, agentworld_gym
    >>> env = gym.make("AgentWorld/notion-v0")
    >>> obs, info = env.reset(seed=0)
    >>> sorted(info)[:3]
    ['env_id', 'max_turns', 'messages']
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        spec: EnvSpec | str,
        split: str = "train",
        max_turns: int | None = None,
        judge: Judge | None = None,
        max_action_chars: int = 100_000,
        render_mode: str | None = None,
        max_calls_per_action: int = MAX_CALLS_PER_ACTION,
        user: UserSimulator | None = None,
    ) -> None:
        if max_calls_per_action < 1:
            raise ValueError(f"max_calls_per_action must be at least 1, got {max_calls_per_action}")
        self.spec_data = spec if isinstance(spec, EnvSpec) else EnvSpec.load(spec)
        self.tasks = self.spec_data.tasks_in(split)
        if not self.tasks:
            raise AgentWorldError(f"environment {self.spec_data.id!r} has no {split!r} tasks")
        self.split = split
        self._max_turns_arg = max_turns
        self.user = user
        self.max_turns = max_turns or self.spec_data.runtime.max_turns
        self.judge = judge
        self.max_action_chars = max_action_chars
        self.max_calls_per_action = max_calls_per_action
        self.render_mode = render_mode
        self._shared = _Shared.of(self.spec_data)
        self._base = self.spec_data.database
        self.observation_space = TextSpace()
        self.action_space = TextSpace(max_length=max_action_chars)
        self._system = self.spec_data.runtime.system_prompt or DEFAULT_SYSTEM_PROMPT.format(
            name=self.spec_data.name
        )
        self._task: TaskSpec | None = None
        self._db: Database | None = None
        self._ctx: ToolContext | None = None
        self._messages: list[Message] = []  # append-only within an episode (MessagesView)
        self._calls: list[tuple[str, Any, bool, str]] = []  # CallRecord fields, made at verify
        self._turn = 0
        self._user_turn = 0
        self._answers: list[str] = []
        self._dialogue: list[Message] = []
        self._done = True

    # -- gymnasium API ------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id")
        if task_id is not None:
            self._task = self.spec_data.task(task_id)
        else:
            self._task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        user = self._task.user
        if user and self.user is None and not user.get("script"):
            raise ConfigError(
                f"task {self._task.id!r} has a simulated user: pass user=... (for example "
                "agentworld_gym.users.LLMUser(backend)) to the environment"
            )
        budget = self._shared.budgets.get(self._task.id)
        if budget is None:
            budget = self._task.difficulty.get("max_turns") or self.spec_data.runtime.max_turns
            self._shared.budgets[self._task.id] = budget
        self.max_turns = self._max_turns_arg or budget
        self._db = self._base.fork()
        toolbox = self._shared.toolbox
        if self._ctx is not None:
            toolbox.end(self._ctx)  # the last episode's sandboxed workers stop now
        self._ctx = ToolContext(
            self._db, self.spec_data.id, self._task.id, clock_start=self._shared.clock
        )
        toolbox.begin(self._ctx)  # code tools: a fresh worker starts loading
        self._messages = [
            {"role": "system", "content": self._system},
            {"role": "user", "content": self._task.instruction},
        ]
        self._calls = []
        self._turn = 0
        self._user_turn = 0
        self._answers = []
        self._dialogue = []  # the user-visible conversation, kept from the first answer on
        self._done = False
        info = {
            "env_id": self.spec_data.gym_id,
            "task_id": self._task.id,
            "split": self._task.split,
            "tools": list(self._shared.tools),
            "messages": MessagesView(self._messages),
            "max_turns": self.max_turns,
        }
        if self._task.turns:
            info["user_turns"] = 1 + len(self._task.turns)  # the request and its follow-ups
        fields = self._shared.fields.get(self._task.id)
        if fields is None:
            fields = self._shared.fields[self._task.id] = declared_fields(self._task.verifier)
        if fields:
            info["answer_fields"] = fields  # submit them as {"answer": ..., "fields": {...}}
        if self.judge is None:
            judged = self._shared.judged.get(self._task.id)
            if judged is None:
                judged = self._shared.judged[self._task.id] = needs_judge(self._task.verifier)
            if judged:
                info["needs_judge"] = True  # its prose criteria stay unjudged: no success
        return self._task.instruction, info

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._done:
            raise EpisodeOver("the episode has ended (or never started): call reset() first")
        self._turn += 1
        usual = usual_call(action, self.max_action_chars)
        if usual is not None:
            return self._step_usual(*usual)
        try:
            parsed = parse_action(action, self.max_action_chars)
        except ActionParseError as exc:
            parsed = None
            outputs = [dumps(exc.payload())]
            results = [{"name": None, "ok": False, "error": exc.code}]
            shown = clean_text(action[:200]) if isinstance(action, str) else preview(action, 200)
            self._messages.append({"role": "assistant", "content": shown})
            self._messages.append({"role": "user", "content": outputs[0]})
        if parsed is not None:
            outputs, results = self._run_calls(parsed)
        terminated = parsed is not None and parsed.final_answer is not None
        next_turn: dict[str, Any] = {}
        if terminated and (self._task.turns or self._task.user):  # type: ignore[union-attr]
            follow, next_turn = self._next_user_message(parsed.final_answer or "")  # type: ignore[union-attr]
            if follow is not None:  # one answer of several: the user's next message follows
                outputs = [follow]
                self._messages.append({"role": "user", "content": follow})
                terminated = False
        info: dict[str, Any] = {
            "turn": self._turn,
            "tool_results": results,
            "messages": MessagesView(self._messages),
            **next_turn,
        }
        truncated = not terminated and self._turn >= self.max_turns
        if self._shared.toolbox.episode_hooks and results:
            info["isolation"] = self._shared.toolbox.isolation()  # how the tools' code ran
        reward = 0.0
        if terminated or truncated:
            self._done = True
            answer = parsed.final_answer if terminated and parsed is not None else ""
            fields = parsed.answer_fields if terminated and parsed is not None else None
            verification = self.verify(answer or "", fields)
            reward = verification.reward
            info["final_answer"] = answer if terminated else None
            info["verification"] = verification.to_info()
            if terminated and not outputs:
                outputs = [f"[episode finished] reward={reward:.3f}"]
        if len(outputs) == 1:
            observation = outputs[0]
        else:
            observation = "\n".join(f"<tool_response>\n{o}\n</tool_response>" for o in outputs)
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        """Release the episode's resources: sandboxed workers, their folders, idle slots.

        Safe to call twice; ``with gym.make(...) as env:`` calls it. A closed env can be
        ``reset`` again (resources are then taken anew).
        """
        if self._ctx is not None:
            self._shared.toolbox.end(self._ctx, close=True)
            self._ctx = None
        self._done = True
        super().close()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        lines = []
        for m in self._messages:
            text = m.get("content") or ""
            for call in m.get("tool_calls", []):
                fn = call["function"]
                text += f"\n→ {fn['name']}({fn['arguments']})"
            lines.append(f"[{m['role']}] {text}")
        return "\n".join(lines)

    # -- internals ----------------------------------------------------------------------
    def _run_calls(self, parsed: ParsedAction) -> tuple[list[str], list[dict[str, Any]]]:
        assistant: dict[str, Any] = {"role": "assistant", "content": parsed.content or None}
        turn = self._turn
        if parsed.calls:
            assistant["tool_calls"] = [
                {
                    "id": call.id or f"call_{turn}_{i}",
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": _arguments_text(call.arguments),
                    },
                }
                for i, call in enumerate(parsed.calls)
            ]
        if parsed.final_answer is not None and not parsed.calls:
            assistant["content"] = parsed.final_answer
        self._messages.append(assistant)
        outputs: list[str] = []
        results: list[dict[str, Any]] = []
        cap = self.max_calls_per_action
        toolbox, ctx = self._shared.toolbox, self._ctx
        for i, call in enumerate(parsed.calls):
            ok, error = True, None
            try:
                if i >= cap:
                    raise TooManyCalls(
                        f"Call {i + 1} of {len(parsed.calls)} ({call.name or 'unnamed'}) was not "
                        f"run: an action may carry at most {cap} tool calls "
                        "(max_calls_per_action); send the rest in the next turn."
                    )
                if call.error is not None:
                    raise call.error
                result = toolbox.call(ctx, call.name, call.arguments, encoded=True)
                text = result.text() if type(result) is Encoded else dumps(result)
            except ToolError as exc:
                ok, error = False, exc.code
                text = dumps(exc.payload())
            self._calls.append((call.name, call.arguments, ok, text))
            results.append({"name": call.name, "ok": ok, "error": error})
            outputs.append(text)
            self._messages.append(
                {
                    "role": "tool",
                    "tool_call_id": assistant["tool_calls"][i]["id"],
                    "name": call.name,
                    "content": text,
                }
            )
        return outputs, results

    def _step_usual(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """``step`` of the usual action, one call (:func:`~agentworld_gym.actions.usual_call`):
        what :meth:`_run_calls` and the end of ``step`` do for it, in one straight line."""
        turn = self._turn
        call_id = f"call_{turn}_0"
        messages = self._messages
        try:
            arguments_text = orjson.dumps(arguments).decode()
        except TypeError:
            arguments_text = _arguments_text(arguments)
        function = {"name": name, "arguments": arguments_text}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        toolbox = self._shared.toolbox
        try:
            result = toolbox.call(self._ctx, name, arguments, encoded=True)  # type: ignore[arg-type]
            text = result.text() if type(result) is Encoded else dumps(result)
            ok, error = True, None
        except ToolError as exc:
            ok, error = False, exc.code
            text = dumps(exc.payload())
        self._calls.append((name, arguments, ok, text))
        messages.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": text})
        info: dict[str, Any] = {
            "turn": turn,
            "tool_results": [{"name": name, "ok": ok, "error": error}],
            "messages": MessagesView(messages),
        }
        if toolbox.episode_hooks:
            info["isolation"] = toolbox.isolation()
        if turn < self.max_turns:
            return text, 0.0, False, False, info
        self._done = True  # the turn budget is spent: judged with an empty answer
        verification = self.verify("", None)
        info["final_answer"] = None
        info["verification"] = verification.to_info()
        return text, verification.reward, False, True, info

    def _next_user_message(self, answer: str) -> tuple[str | None, dict[str, Any]]:
        """The user's message after the agent's ``answer`` (a fixed follow-up, else the
        simulated user's reply; ``None``: the conversation is over) and what ``info`` says."""
        task = self._task
        answer = clean_text(answer)
        if not self._dialogue:
            self._dialogue.append({"role": "user", "content": task.instruction})  # type: ignore[union-attr]
        self._dialogue.append({"role": "assistant", "content": answer})
        said: dict[str, Any] = {}
        if self._user_turn < len(task.turns):  # type: ignore[union-attr]
            follow: str | None = str(task.turns[self._user_turn].get("content", ""))  # type: ignore[union-attr]
        else:
            try:
                follow = (self.user or ScriptedUser()).reply(task.user, list(self._dialogue))  # type: ignore[union-attr,arg-type]
            except Exception as exc:  # a failing simulator ends the episode, not the run
                said["user_error"] = f"{type(exc).__name__}: {exc}"
                follow = None
        if follow is None:
            return None, said
        self._answers.append(answer)
        self._user_turn += 1
        self._dialogue.append({"role": "user", "content": follow})
        return follow, {**said, "user_turn": self._user_turn, "turn_answer": answer}

    def verify(
        self, answer: str, fields: dict[str, Any] | None = None, *, call_rule: bool = True
    ) -> Verification:
        """Run the task's verifier on the episode so far (the env calls it at the end);
        ``fields``: the named answer values submitted with it. ``call_rule=False`` leaves out
        the rules on the episode's calls — one must have succeeded (``answer_needs_call``) and
        they must have returned what the answer is about (``answer_needs_evidence``) — which
        :func:`agentworld_gym.replay.score_answer` uses to measure the answer checks alone."""
        task = self._task
        if task is None or self._db is None:
            raise EpisodeOver("no episode to verify: call reset() first")
        key = (task.id, id(self.judge))
        verifier = self._shared.verifiers.get(key)
        if verifier is None:
            verifier = self._shared.verifiers[key] = build_verifier(task.verifier, self.judge)
        answer = clean_text(answer) if isinstance(answer, str) else ""
        episode = Episode(
            self._base,
            self._db,
            answer,
            [CallRecord(*call) for call in self._calls],
            task.instruction,
            dict(fields or {}),
            [*self._answers, answer] if task.turns or task.user else [],
        )
        result = verifier.verify(episode)
        if result.reward <= 0 or not call_rule:
            return result
        runtime = self.spec_data.runtime
        unpaid = None
        if runtime.answer_needs_call and _needs_a_call(task):
            if not any(c.ok for c in episode.calls):
                # a rubric's answer checks would otherwise pay a guess ("2" for a count): a
                # task whose solution calls a tool pays nothing to an episode without one
                unpaid = NO_CALL
        if unpaid is None and runtime.answer_needs_evidence:
            missing = unseen(self._evidence(task), episode.calls, self._shared.keys)
            if missing is not None:  # a working call, then a constant that happens to be right
                arguments = preview(missing.arguments, 120)
                unpaid = UNSEEN.format(name=missing.name, arguments=arguments)
        if unpaid is None:
            return result
        details = {**result.details, "unpaid": unpaid}
        return Verification(0.0, result.breakdown, details, success=False)

    def _evidence(self, task: TaskSpec) -> list[GoldRead]:
        """The gold reads an answer of ``task`` must have seen (none if no answer is checked)."""
        reads = self._shared.evidence.get(task.id)
        if reads is None:
            reads = []
            if answer_checked(task.verifier):
                shared = self._shared
                reads = gold_reads(self.spec_data, shared.toolbox, self._base, task, shared.clock)
            self._shared.evidence[task.id] = reads
        return reads

    # -- read-only views for wrappers, tests and tools --------------------------------------
    @property
    def task(self) -> TaskSpec | None:
        return self._task

    @property
    def db(self) -> Database | None:
        """The episode's database (read it, do not write it: use tools)."""
        return self._db

    @property
    def messages(self) -> list[Message]:
        """The chat so far, as a list of your own (a copy: O(history), off the step path)."""
        return list(self._messages)
