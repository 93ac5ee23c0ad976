"""BFCL multi-turn episodes: BFCL's API classes as tools, BFCL's checker as the verifier.

An episode follows BFCL's own inference loop (``BaseHandler.inference_multi_turn_FC``):

- ``reset`` builds fresh instances of the task's API classes from its ``initial_config``
  (BFCL's ``_load_scenario``); ``info["tools"]`` lists the task's functions as BFCL's OpenAI
  handler sends them; the observation is the first user message.
- A step with tool calls is one BFCL step: each call runs on the instances and its
  observation is BFCL's execution result (a string as is, a dict as JSON, else ``str``).
- A message without a tool call ends the user turn (BFCL: a response that decodes to no
  call). The next user message is the observation (``info["user_turn"]``); the answer to
  the last one ends the episode and BFCL's checker scores it.
- ``miss_func``: a held-out turn's message is BFCL's "I have updated some more functions
  you can choose from. What about now?", and that step's ``info["tools"]`` lists the
  revealed functions (appended, as BFCL appends them). Until then they are unknown tools.
- ``miss_param``: nothing special, as in BFCL: the turn lacks a value, its ground truth is
  empty, and the agent is expected to ask; the next user message gives the value.
- BFCL force-quits a turn after ``MAXIMUM_STEP_LIMIT`` (20) further steps with calls; the
  whole entry then fails. Here the episode ends ``truncated`` with success ``False``.
- Scoring: ``multi_turn_checker`` (state and execution-response checks per turn) on the
  calls this episode executed, grouped by turn and step as BFCL's evaluation runner groups a
  model's decoded responses. ``reward`` and ``success`` are its verdict (1 or 0), so a
  suite's success rate is BFCL's multi-turn accuracy.

Where our contract differs from BFCL's runner: an action that cannot be executed (unknown
or not yet revealed tool, arguments that fail the schema, a malformed call) is refused with
an error observation and is not executed, so BFCL's checker does not see it either (BFCL
would run it through ``eval``). A call that raises inside BFCL's code is shown as an error
(BFCL's text, ``Error during execution: ...``) and given to the checker; if it changed the
state before raising, the state is rolled back and the call is kept from the checker, so
that what the checker replays is what the agent saw.

BFCL's classes are trusted benchmark code and run in this process, as in BFCL (no sandbox);
each reset builds new instances, and the checker's own instances (which BFCL keeps in
module globals) are deleted after each verdict. One lock serialises BFCL code across
threads (its classes and checker share module-level state).
"""

from __future__ import annotations

import copy
import difflib
import importlib
import inspect
import json
import threading
import uuid
from typing import Any, SupportsFloat

from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT
from bfcl_eval.constants.executable_backend_config import (
    CLASS_FILE_PATH_MAPPING,
    STATELESS_CLASSES,
)
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

from agentworld_gym.benchmarks_ext.bfcl.data import BFCLTask, call_text, load_category, task_tools
from agentworld_gym.env import AgentWorldEnv, EpisodeOver
from agentworld_gym.errors import AgentWorldError, ToolExecutionError, ToolNotFound, VerifierError
from agentworld_gym.registry import load_spec
from agentworld_gym.spec import EnvSpec, ToolSpec
from agentworld_gym.tools import ToolContext, ToolFn, register_implementation
from agentworld_gym.verifiers import Verification, register_verifier

__all__ = ["BFCLEnv", "BFCLEpisode", "bfcl_verdict", "make_env"]

ISOLATION = {
    "process": "in-process",
    "why": "BFCL's own API classes: trusted benchmark code, run as BFCL runs them",
}

_LOCK = threading.RLock()
"""BFCL's classes and checker keep state in module globals: one thread at a time."""


def result_text(result: Any) -> str:
    """An execution result as BFCL shows it (``execute_multi_turn_func_call``)."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


def _public(state: dict[str, Any]) -> dict[str, Any]:
    """The attributes BFCL's state checker compares (those not starting with ``_``)."""
    return {k: v for k, v in state.items() if not k.startswith("_")}


def _new_instance(class_name: str, task: BFCLTask) -> Any:
    """A fresh instance loaded from the task's initial config, as BFCL builds one."""
    module = importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name])
    instance = getattr(module, class_name)()
    if class_name not in STATELESS_CLASSES:
        config = copy.deepcopy(task.entry["initial_config"].get(class_name, {}))
        instance._load_scenario(config, long_context=task.long_context)
    return instance


class BFCLEpisode:
    """One episode's BFCL state: the class instances, the tools listed so far, and the
    executed calls per turn and step (what BFCL's checker replays)."""

    def __init__(self, task: BFCLTask) -> None:
        self.task = task
        self.instances: dict[str, Any] = {}
        self.owner: dict[str, str] = {}
        """Method name → class name (a later class wins a clash, as in BFCL)."""
        with _LOCK:
            for class_name in task.entry["involved_classes"]:
                instance = self.instances[class_name] = _new_instance(class_name, task)
                for name, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
                    if not name.startswith("_"):
                        self.owner[name] = class_name
        tools, self.reveals = task_tools(task)
        self.tools: list[dict[str, Any]] = tools
        self.visible = {t["function"]["name"] for t in tools}
        self.turn = 0
        self.steps: list[list[list[str]]] = [[]]
        """Per user turn, per step, the executed calls as BFCL writes them."""
        self.turn_steps = 0
        """Steps with calls in the current turn (BFCL force-quits past MAXIMUM_STEP_LIMIT)."""

    # -- the agent's calls ----------------------------------------------------------------
    def begin_step(self) -> None:
        """A new agent message: its calls form one step."""
        self.steps[self.turn].append([])

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one (schema-valid) call on the instances; BFCL's result text."""
        if name not in self.visible or name not in self.owner:
            close = difflib.get_close_matches(str(name), sorted(self.visible), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ToolNotFound(f"Unknown tool {name!r}.{hint}")
        instance = self.instances[self.owner[name]]
        with _LOCK:
            saved = copy.deepcopy(vars(instance))
            try:
                result = getattr(instance, name)(**arguments)
            except Exception as exc:
                if _public(vars(instance)) != _public(saved):
                    instance.__dict__.clear()
                    instance.__dict__.update(saved)
                else:
                    self._record(name, arguments)
                raise ToolExecutionError(f"Error during execution: {exc}") from exc
            self._record(name, arguments)
            return result_text(result)

    def _record(self, name: str, arguments: dict[str, Any]) -> None:
        if not self.steps[self.turn]:
            self.steps[self.turn].append([])
        self.steps[self.turn][-1].append(call_text(name, arguments))

    def advance(self, turn: int) -> bool:
        """User turn ``turn`` begins; whether it revealed functions (``miss_func``)."""
        while len(self.steps) <= turn:
            self.steps.append([])
        self.turn, self.turn_steps = turn, 0
        revealed = self.reveals.get(turn, [])
        self.tools = [*self.tools, *revealed]
        self.visible |= {t["function"]["name"] for t in revealed}
        return bool(revealed)

    # -- the verdict ----------------------------------------------------------------------
    def decoded(self) -> list[list[list[str]]]:
        """The calls per turn and step, empty steps dropped (as BFCL's eval runner drops
        responses that decode to no call)."""
        return [[step for step in turn if step] for turn in self.steps]

    def verify(self, force_quit: bool = False) -> Verification:
        """BFCL's verdict on the calls so far (a verdict of failure unless every turn was
        reached; ``force_quit``: BFCL's step limit ended the episode)."""
        verdict = bfcl_verdict(self.task, self.decoded(), force_quit=force_quit)
        valid = bool(verdict["valid"])
        reason = verdict.get("error_message", "") if not valid else "BFCL's checker passed"
        breakdown = [
            {
                "criterion": "BFCL multi-turn checker (state and execution-response checks)",
                "weight": 1.0,
                "met": valid,
                "score": float(valid),
                "by": "bfcl",
                "reason": reason,
            }
        ]
        details = {"bfcl": {k: v for k, v in verdict.items() if k != "details"}}
        return Verification(float(valid), breakdown, details, success=valid)


def bfcl_verdict(
    task: BFCLTask, decoded: list[list[list[str]]], force_quit: bool = False
) -> dict[str, Any]:
    """BFCL's multi-turn verdict for a model's decoded calls (per turn, per step), as BFCL's
    ``_evaluate_single_multi_turn_entry`` gives it: ``{"valid": bool, "error_type": ...}``.

    Runs ``multi_turn_checker`` under a fresh model name and deletes the instances it left
    in BFCL's module globals, so no state carries to the next verdict.
    """
    if force_quit or len(decoded) != len(task.ground_truth):
        return {
            "valid": False,
            "error_type": "multi_turn:force_terminated",
            "error_message": (
                f"Model was force-terminated: {len(decoded)} of {len(task.ground_truth)} "
                "turns answered"
                + (f" (more than {MAXIMUM_STEP_LIMIT} steps in a turn)" if force_quit else "")
            ),
        }
    model_name = f"agentworld_{uuid.uuid4().hex}"
    with _LOCK:
        try:
            result = multi_turn_checker(
                copy.deepcopy(decoded),
                task.ground_truth,
                copy.deepcopy(task.entry),
                f"multi_turn_{task.category}",
                model_name,
            )
        finally:
            names = vars(multi_turn_utils)
            for key in [k for k in names if k.startswith(model_name)]:
                del names[key]
    return result


# -- the tool runtime --------------------------------------------------------------------
def episode_of(ctx: ToolContext) -> BFCLEpisode:
    """The BFCL state of the episode ``ctx`` belongs to."""
    episode = getattr(ctx, "bfcl", None)
    if episode is None:
        raise AgentWorldError("no BFCL episode on this context: call Toolbox.begin(ctx) first")
    return episode


class _EpisodeHooks:
    """Builds each episode's BFCL state when the toolbox begins it (fresh instances)."""

    def __init__(self, category: str) -> None:
        self.category = category

    def begin(self, ctx: ToolContext) -> None:
        ctx.bfcl = BFCLEpisode(load_category(self.category)[ctx.task_id])  # type: ignore[attr-defined]

    def end(self, ctx: ToolContext, *, close: bool = False) -> None:
        ctx.__dict__.pop("bfcl", None)

    @property
    def isolation(self) -> dict[str, Any]:
        return dict(ISOLATION)


def _category(env: EnvSpec) -> str:
    for task in env.tasks:
        return str(task.verifier.get("category", ""))
    raise AgentWorldError(f"environment {env.id!r} has no BFCL task")


def _bfcl_factory(tool: ToolSpec, env: EnvSpec) -> ToolFn:
    hooks = env.__dict__.get("_bfcl_hooks")
    if hooks is None:
        hooks = env.__dict__["_bfcl_hooks"] = _EpisodeHooks(_category(env))
    name = tool.name

    def run(ctx: ToolContext, **arguments: Any) -> str:
        return episode_of(ctx).call(name, arguments)

    run.episode = hooks  # type: ignore[attr-defined]
    return run


class _NotHere:
    """The ``bfcl`` verifier outside :class:`BFCLEnv`: a clear error, not a wrong score."""

    def __init__(self, definition: dict[str, Any], judge: Any = None) -> None:
        raise VerifierError(
            "BFCL tasks are scored by BFCLEnv: make the environment with "
            "gym.make('AgentWorld/bfcl-multi-turn-<category>-v0')"
        )


register_implementation("bfcl", _bfcl_factory)
register_verifier("bfcl", _NotHere)  # type: ignore[arg-type]


# -- the environment ---------------------------------------------------------------------
class BFCLEnv(AgentWorldEnv):
    """:class:`AgentWorldEnv` over a BFCL multi-turn category (see the module docstring).

    Args:
        spec: the category's EnvSpec (``load_spec("bfcl-multi-turn-base")``).
        split: ``test`` (every BFCL task is held out) or ``all``.
        **kwargs: as :class:`AgentWorldEnv` (``max_turns`` caps the whole episode; the
            default leaves BFCL's per-turn step limit as the only bound).
    """

    def __init__(self, spec: EnvSpec | str, split: str = "test", **kwargs: Any) -> None:
        super().__init__(spec, split=split, **kwargs)

    @property
    def episode(self) -> BFCLEpisode:
        """The current episode's BFCL state (instances, tools, calls)."""
        if self._ctx is None:
            raise EpisodeOver("no episode: call reset() first")
        return episode_of(self._ctx)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        observation, info = super().reset(seed=seed, options=options)
        info["tools"] = list(self.episode.tools)
        return observation, info

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._done:
            return super().step(action)  # raises EpisodeOver
        episode = self.episode
        episode.begin_step()
        observation, reward, terminated, truncated, info = super().step(action)
        if "user_turn" in info:
            if episode.advance(info["user_turn"]):
                info["tools"] = list(episode.tools)
        elif not (terminated or truncated) and info["tool_results"]:
            episode.turn_steps += 1
            if episode.turn_steps > MAXIMUM_STEP_LIMIT:
                self._done, truncated = True, True
                verification = episode.verify(force_quit=True)
                reward = verification.reward
                info["final_answer"] = None
                info["verification"] = verification.to_info()
        return observation, reward, terminated, truncated, info

    def verify(self, answer: str = "", fields: dict[str, Any] | None = None) -> Verification:
        """BFCL's checker on the calls of the episode so far (``answer`` is not scored:
        BFCL's multi-turn accuracy reads state and execution results only)."""
        return self.episode.verify()


def make_env(env_id: str, **kwargs: Any) -> BFCLEnv:
    """Gymnasium entry point of the ``AgentWorld/bfcl-*`` environments."""
    return BFCLEnv(load_spec(env_id), **kwargs)


def episode_state(env: Any) -> dict[str, dict[str, Any]]:
    """A copy of the public attributes of each instance (what BFCL's state checker compares)."""
    instances = env.unwrapped.episode.instances
    with _LOCK:
        return {name: copy.deepcopy(_public(vars(obj))) for name, obj in instances.items()}
