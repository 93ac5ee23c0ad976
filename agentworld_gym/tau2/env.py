"""``Tau2Env``: a τ²-bench domain as a Gymnasium environment, on tau2's own code.

One episode is one tau2 task, run as tau2's half-duplex orchestrator runs it: the agent
greets ("Hi! How can I help you today?"), the simulated user answers (the first
observation), and from then on each action of the agent is either **tool calls** — run on the
episode's tau2 ``Environment`` exactly as tau2 runs them (``Environment.get_response``), the
results being the observation — or a **message to the user** (text with no tool-call marker,
or a ``submit`` call): the user's reply is the observation. The conversation ends when the
user stops (``###STOP###``, a transfer, out of scope) or the agent says ``###STOP###``
(``terminated=True``), or at the turn budget (``truncated=True``, reward 0 as tau2's
``max_steps``). The reward is tau2's own evaluation (:mod:`agentworld_gym.tau2.evaluation`);
``info["verification"]`` holds it with ``success`` (reward 1, nothing left unjudged).

The agent sees tau2's agent system prompt with the domain's policy (``info["messages"][0]``)
and the domain's tools as OpenAI function schemas (``info["tools"]``). What tau2 would have
run and we refuse, so that a bad action never reaches the domain's code: a malformed call,
an unknown tool (the closest names are suggested), arguments that fail the tool's own
pydantic parameter model. Those calls are not part of the trajectory tau2 evaluates (tau2's
replay skips unknown tools; a refused call ran nothing). A tool that raises answers with its
error, as in tau2; if it could write, the episode's state is rebuilt from the calls that
succeeded, so a failed call never leaves a partial write behind.
"""

from __future__ import annotations

import difflib
import os
from typing import Any, SupportsFloat

import gymnasium as gym

from agentworld_gym.actions import ParsedAction, parse_action
from agentworld_gym.env import EpisodeOver, MessagesView, dumps
from agentworld_gym.errors import (
    ActionParseError,
    ConfigError,
    ToolArgumentError,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
    TooManyCalls,
)
from agentworld_gym.jsonsafe import clean_text, preview
from agentworld_gym.spaces import TextSpace
from agentworld_gym.tau2.checkout import Tau2Checkout
from agentworld_gym.tau2.evaluation import Tau2Verification, evaluate
from agentworld_gym.tau2.prompts import (
    AGENT_INSTRUCTION,
    AGENT_SYSTEM_PROMPT,
    GREETING,
    USER_SYSTEM_PROMPT,
)
from agentworld_gym.tau2.users import STOP_TOKENS, is_stop

__all__ = ["MAX_TURNS", "Tau2Env", "default_user", "make_env"]

MAX_TURNS = 50
"""Default turn budget of the agent (tool calls and messages), as ``max_turns``."""


def default_user() -> Any:
    """The user simulator ``AGENTWORLD_TAU2_USER_MODEL`` names (an OpenAI-compatible server at
    ``AGENTWORLD_TAU2_USER_BASE_URL``, key ``AGENTWORLD_TAU2_USER_API_KEY``), else ``None``.

    ``agentworld eval --suite tau2-*`` makes its environments without a ``user`` argument:
    this is how its customers are configured.
    """
    model = os.environ.get("AGENTWORLD_TAU2_USER_MODEL")
    if not model:
        return None
    from agentworld_gym.llm import LLMConfig, make_backend
    from agentworld_gym.tau2.users import Tau2LLMUser

    config = LLMConfig(
        model=model,
        base_url=os.environ.get("AGENTWORLD_TAU2_USER_BASE_URL"),
        api_key=os.environ.get("AGENTWORLD_TAU2_USER_API_KEY"),
    )
    return Tau2LLMUser(make_backend(config))


def make_env(env_id: str, **kwargs: Any) -> Tau2Env:
    """Gymnasium entry point of the registered ``AgentWorld/tau2-*`` environments."""
    from agentworld_gym.tau2 import checkout_of

    checkout, domain = checkout_of(env_id)
    if kwargs.get("user") is None:
        kwargs["user"] = default_user()
    return Tau2Env(checkout, domain, **kwargs)


class Tau2Env(gym.Env[str, str]):
    """A τ²-bench domain (``retail``, ``airline``, ``telecom``, ...) of a local checkout.

    Args:
        checkout: the tau2-bench checkout folder.
        domain: the domain's name.
        split: which tasks ``reset`` draws from: one of the domain's splits (``"base"``,
            ``"train"``, ``"test"``, ...) or ``"all"``.
        user: the simulated user (required): ``LLMUser(backend)``,
            :class:`~agentworld_gym.tau2.users.Tau2LLMUser` (tau2's prompt, user tools) or
            :class:`~agentworld_gym.tau2.users.Tau2ScriptedUser`.
        judge: an LLM backend judging NL assertions with tau2's judge prompt; without one a
            task whose reward needs them gets ``needs_judge`` and no success.
        max_turns: the agent's turn budget per episode (default :data:`MAX_TURNS`).
        max_action_chars: longer actions are refused with an error observation.
        max_calls_per_action: calls past this many in one action are refused unrun.
        render_mode: ``"ansi"`` renders the chat so far.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        checkout: str,
        domain: str,
        split: str = "base",
        user: Any = None,
        judge: Any = None,
        max_turns: int | None = None,
        max_action_chars: int = 100_000,
        max_calls_per_action: int = 32,
        render_mode: str | None = None,
    ) -> None:
        self.checkout = Tau2Checkout.open(checkout)
        self.domain = self.checkout.domain(domain)
        no_splits = split == "base" and "base" not in self.domain.splits
        self.tasks = self.domain.tasks_in("all" if no_splits else split)
        if not self.tasks:
            raise ConfigError(f"tau2 domain {domain!r} has no tasks in split {split!r}")
        self.split, self.user, self.judge = split, user, judge
        self.max_turns, self.max_action_chars = max_turns or MAX_TURNS, max_action_chars
        self.max_calls_per_action, self.render_mode = max_calls_per_action, render_mode
        self.env_id = f"AgentWorld/tau2-{domain}-v0"
        self.observation_space = TextSpace()
        self.action_space = TextSpace(max_length=max_action_chars)
        probe = self.domain.new_environment()
        tools = probe.get_tools()
        user_tools = probe.get_user_tools() if probe.user_tools is not None else []
        self._tool_schemas = [t.openai_schema for t in tools]
        self._user_schemas = [t.openai_schema for t in user_tools]
        # each tool's own pydantic parameter model, kept: tau2 builds it from docstrings
        self._params = {
            "assistant": {t.name: t.params for t in tools},
            "user": {t.name: t.params for t in user_tools},
        }
        from tau2.environment.toolkit import get_tool_types

        self._tool_types = get_tool_types(probe.tools)
        if probe.user_tools is not None:
            self._tool_types.update(get_tool_types(probe.user_tools))
        self._system = AGENT_SYSTEM_PROMPT.format(
            agent_instruction=AGENT_INSTRUCTION, domain_policy=probe.get_policy()
        )
        guidelines = self.checkout.user_guidelines(use_tools=bool(self._user_schemas))
        self._user_prompt = USER_SYSTEM_PROMPT.replace(
            "{global_user_sim_guidelines_with_persona}", guidelines
        )
        self._env: Any = None
        self._task: Any = None
        self._messages: list[dict[str, Any]] = []
        self._trajectory: list[Any] = []
        self._succeeded: list[Any] = []  # tau2 ToolCalls that ran without error, in order
        self._dialogue: list[dict[str, Any]] = []
        self._turn = 0
        self._done = True
        self._user_error = None

    # -- gymnasium API ------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        from tau2.data_model.message import AssistantMessage, UserMessage

        task_id = (options or {}).get("task_id")
        if task_id is not None:
            by_id = {t.id: t for t in self.domain.tasks}
            if str(task_id) not in by_id:
                close = difflib.get_close_matches(str(task_id), list(by_id), n=3)
                hint = f" Did you mean {', '.join(close)}?" if close else ""
                raise ConfigError(f"tau2 {self.domain.name} has no task {task_id!r}.{hint}")
            self._task = by_id[str(task_id)]
        else:
            self._task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        if self.user is None:
            raise ConfigError(
                "a tau2 episode needs a simulated user: pass user=... (for example "
                "agentworld_gym.tau2.Tau2LLMUser(backend) or agentworld_gym.users.LLMUser(backend))"
            )
        self._env = self._fresh_environment(calls=[])
        history = list(self._initial("message_history") or [])
        self._trajectory = [*history, AssistantMessage(role="assistant", content=GREETING)]
        self._succeeded = []
        self._messages = [
            {"role": "system", "content": self._system},
            {"role": "assistant", "content": GREETING},
        ]
        self._dialogue = [{"role": "assistant", "content": GREETING}]
        self._turn = 0
        self._done = False
        self._user_error: str | None = None
        first = self._user_says()
        if first is None:
            raise ConfigError(f"the simulated user said nothing on task {self._task.id!r}")
        self._trajectory.append(UserMessage(role="user", content=first))
        self._messages.append({"role": "user", "content": first})
        info = {
            "env_id": self.env_id,
            "task_id": self._task.id,
            "split": self.split,
            "tools": list(self._tool_schemas),
            "messages": MessagesView(self._messages),
            "max_turns": self.max_turns,
            "user_turn": 1,
        }
        if self._needs_judge():
            info["needs_judge"] = True
        return first, info

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._done:
            raise EpisodeOver("the episode has ended (or never started): call reset() first")
        self._turn += 1
        termination: str | None = None
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
            if parsed.final_answer is not None:
                said, termination = self._talk(parsed.final_answer)
                outputs = [*outputs, said] if said is not None else outputs
        info: dict[str, Any] = {
            "turn": self._turn,
            "tool_results": results,
            "messages": MessagesView(self._messages),
            "user_turn": sum(1 for m in self._dialogue if m["role"] == "user"),
        }
        if self._user_error is not None:
            info["user_error"] = self._user_error
        terminated = termination is not None
        truncated = not terminated and self._turn >= self.max_turns
        reward = 0.0
        if terminated or truncated:
            self._done = True
            verification = self.verify(termination or "max_steps")
            reward = verification.reward
            info["verification"] = verification.to_info()
            if not outputs:
                outputs = [f"[conversation over] reward={reward:.3f}"]
        if len(outputs) == 1:
            observation = outputs[0]
        else:
            observation = "\n".join(f"<tool_response>\n{o}\n</tool_response>" for o in outputs)
        return observation, reward, terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        lines = []
        for m in self._messages:
            text = m.get("content") or ""
            for call in m.get("tool_calls", []):
                text += f"\n→ {call['function']['name']}({call['function']['arguments']})"
            lines.append(f"[{m['role']}] {text}")
        return "\n".join(lines)

    def verify(self, termination: str) -> Tau2Verification:
        """tau2's evaluation of the episode so far, as if it ended by ``termination``
        (``"user_stop"``, ``"agent_stop"`` or ``"max_steps"``)."""
        if self._task is None:
            raise EpisodeOver("no episode to verify: call reset() first")
        return evaluate(
            self.domain,
            self._task,
            list(self._trajectory),
            termination,
            tool_types=self._tool_types,
            judge=self.judge,
            nl_prompt=self.checkout.nl_assertion_prompt() if self.judge is not None else None,
        )

    # -- read-only views ------------------------------------------------------------------
    @property
    def task(self) -> Any:
        """The episode's tau2 ``Task``."""
        return self._task

    @property
    def spec_data(self) -> Any:
        """The domain as an :class:`~agentworld_gym.spec.EnvSpec` (ids, splits, tool schemas):
        what the package's runners (``agentworld eval``, rollouts) read from an env."""
        if self.domain.spec is None:
            from agentworld_gym.tau2.spec import build_spec

            self.domain.spec = build_spec(str(self.checkout.path), self.domain.name)
        return self.domain.spec

    @property
    def environment(self) -> Any:
        """The episode's tau2 ``Environment`` (read it; act through ``step``)."""
        return self._env

    @property
    def trajectory(self) -> list[Any]:
        """The episode as tau2 messages (what tau2's evaluators read)."""
        return list(self._trajectory)

    # -- internals ----------------------------------------------------------------------
    def _initial(self, name: str) -> Any:
        state = self._task.initial_state
        return getattr(state, name, None) if state is not None else None

    def _fresh_environment(self, calls: list[Any]) -> Any:
        """A new environment in the task's initial state, with ``calls`` replayed on it."""
        env = self.domain.new_environment()
        env.set_state(
            initialization_data=self._initial("initialization_data"),
            initialization_actions=self._initial("initialization_actions"),
            message_history=list(self._initial("message_history") or []),
        )
        for call in calls:
            env.get_response(call)
        return env

    def _needs_judge(self) -> bool:
        criteria = self._task.evaluation_criteria
        return (
            self.judge is None
            and criteria is not None
            and any(b.value == "NL_ASSERTION" for b in criteria.reward_basis)
            and bool(criteria.nl_assertions)
        )

    def _run_calls(self, parsed: ParsedAction) -> tuple[list[str], list[dict[str, Any]]]:
        from tau2.data_model.message import AssistantMessage

        if not parsed.calls:
            return [], []
        assistant = {
            "role": "assistant",
            "content": parsed.content or None,
            "tool_calls": [
                {
                    "id": call.id or f"call_{self._turn}_{i}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": dumps(call.arguments or {})},
                }
                for i, call in enumerate(parsed.calls)
            ],
        }
        self._messages.append(assistant)
        outputs, results, ran = [], [], []
        for i, call in enumerate(parsed.calls):
            call_id = assistant["tool_calls"][i]["id"]
            ok, error = True, None
            try:
                if i >= self.max_calls_per_action:
                    raise TooManyCalls(
                        f"Call {i + 1} of {len(parsed.calls)} was not run: an action may carry "
                        f"at most {self.max_calls_per_action} tool calls; send the rest next turn."
                    )
                if call.error is not None:
                    raise call.error
                ok, text, pair = self._call(call.name, call.arguments, call_id, "assistant")
                ran.append(pair)
                error = None if ok else ToolExecutionError.code
            except ToolError as exc:
                ok, error, text = False, exc.code, dumps(exc.payload())
            results.append({"name": call.name, "ok": ok, "error": error})
            outputs.append(text)
            self._messages.append(
                {"role": "tool", "tool_call_id": call_id, "name": call.name, "content": text}
            )
        if ran:  # tau2's shape: one assistant message with the calls, then their results
            self._trajectory.append(
                AssistantMessage(role="assistant", tool_calls=[tc for tc, _ in ran])
            )
            self._trajectory.extend(tm for _, tm in ran)
        return outputs, results

    def _call(
        self, name: str, arguments: Any, call_id: str, requestor: str
    ) -> tuple[bool, str, tuple[Any, Any]]:
        """Run one call on the episode's environment: ``(ok, observation, (ToolCall,
        ToolMessage))``; a tool that raised is ``ok=False`` (tau2 records such calls too).

        Raises:
            ToolNotFound, ToolArgumentError: refused; nothing ran, nothing is recorded.
        """
        from pydantic import ValidationError
        from tau2.data_model.message import ToolCall

        kit = self._env.tools if requestor == "assistant" else self._env.user_tools
        known = sorted(self._params[requestor])
        if name not in known:
            close = difflib.get_close_matches(str(name), known, n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ToolNotFound(f"Unknown tool {name!r}.{hint} Available: {', '.join(known)}")
        if not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"Expected the arguments of {name} as a JSON object, got {type(arguments).__name__}"
            )
        params = self._params[requestor][name]
        unexpected = sorted(set(arguments) - set(params.model_fields))
        if unexpected:
            close = difflib.get_close_matches(unexpected[0], list(params.model_fields), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ToolArgumentError(
                f"{name} takes no argument {unexpected[0]!r}.{hint} "
                f"Its arguments: {', '.join(params.model_fields) or '(none)'}"
            )
        try:
            params.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolArgumentError(f"Invalid arguments for {name}: {problems}") from None
        call = ToolCall(id=call_id, name=name, arguments=arguments, requestor=requestor)
        message = self._env.get_response(call)  # tau2's own call path (errors caught there)
        if not message.error:
            self._succeeded.append(call)
            return True, message.content, (call, message)
        if kit.tool_mutates_state(name):  # drop whatever the failed call wrote
            self._env = self._fresh_environment(self._succeeded)
        return False, dumps(ToolExecutionError(str(message.content)).payload()), (call, message)

    def _talk(self, text: str) -> tuple[str | None, str | None]:
        """The agent says ``text`` to the user: ``(the user's reply, termination)``."""
        from tau2.data_model.message import AssistantMessage, UserMessage

        text = clean_text(text)
        self._trajectory.append(AssistantMessage(role="assistant", content=text))
        self._messages.append({"role": "assistant", "content": text})
        self._dialogue.append({"role": "assistant", "content": text})
        if STOP_TOKENS[0] in text:
            return None, "agent_stop"
        reply = self._user_says()
        if reply is None:
            self._trajectory.append(UserMessage(role="user", content=STOP_TOKENS[0]))
            return None, "user_stop"
        self._trajectory.append(UserMessage(role="user", content=reply))
        self._messages.append({"role": "user", "content": reply})
        return reply, None

    def _user_says(self) -> str | None:
        """The simulated user's next message (its tool calls run on the way), or ``None``."""
        scenario = {
            "task_id": self._task.id,
            "instructions": self._user_prompt.replace(
                "{instructions}", str(self._task.user_scenario)
            ),
            "tools": list(self._user_schemas),
        }
        dialogue = list(self._dialogue)
        act = getattr(self.user, "act", None)
        try:
            if act is not None:
                reply = act(scenario, dialogue, self._user_tool)
            else:
                reply = self.user.reply(scenario, dialogue)
        except Exception as exc:  # a failing simulator ends the conversation, not the run
            self._user_error = f"{type(exc).__name__}: {exc}"
            reply = None
        if reply is None or is_stop(reply):
            return None
        reply = clean_text(str(reply))
        self._dialogue.append({"role": "user", "content": reply})
        return reply

    def _user_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one of the user's own tools (telecom's phone), recorded as tau2 records it."""
        from tau2.data_model.message import UserMessage

        call_id = f"user_call_{len(self._trajectory)}"
        try:
            _, text, (call, message) = self._call(name, arguments, call_id, "user")
        except ToolError as exc:
            return dumps(exc.payload())
        self._trajectory.append(UserMessage(role="user", tool_calls=[call]))
        self._trajectory.append(message)
        return text
