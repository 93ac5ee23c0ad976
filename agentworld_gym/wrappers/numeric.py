"""Numeric views of a text environment, for libraries that only take Box/Discrete spaces.

Stable-Baselines3, RLlib's default models and most classic RL code expect a fixed-size vector
observation and a ``Discrete`` action. :class:`DiscreteToolActions` turns the admissible-action
menu into ``Discrete(n)`` slots; :class:`HashedBagOfWords` turns the episode's text into a vector.
:func:`make_sb3_env` stacks both on any AgentWorld environment. Nothing here imports SB3.
"""

from __future__ import annotations

import re
import zlib
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agentworld_gym.wrappers.admissible import AdmissibleActions

_WORD = re.compile(r"\w+")


def _has_wrapper(env: gym.Env, kind: type) -> bool:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, kind):
            return True
        env = env.env
    return False


class DiscreteToolActions(gym.ActionWrapper):
    """``Discrete(n)`` over the admissible actions of an :class:`AdmissibleActions`, in slots.

    The index space has a fixed layout so that an index means the same *kind* of action in
    every state, which is what lets a small policy generalise: the first ``max_answers`` slots
    are the ``submit`` actions (slot 0: answer with the first value of the latest result), then
    each tool owns ``slots_per_tool`` slots in schema order (slot ``j`` of ``set_status``: its
    ``j``-th admissible call). An index past the current entries of its block wraps around
    (``j % len``); a tool with no admissible call falls back to the whole menu. So every index
    is a valid call and a plain policy never wastes a turn; algorithms that mask
    (sb3-contrib's ``MaskablePPO``) can call :meth:`action_masks` to use only real entries.

    Args:
        env: an environment wrapped in :class:`AdmissibleActions` (an unwrapped one is wrapped
            with its defaults).
        slots_per_tool: slots of each tool (default: the wrapper's ``max_per_tool``).
    """

    def __init__(self, env: gym.Env, slots_per_tool: int | None = None) -> None:
        spec = getattr(getattr(env, "unwrapped", None), "spec_data", None)
        if spec is None:
            raise TypeError(
                "DiscreteToolActions needs an AgentWorld environment (gym.make('AgentWorld/"
                f"<slug>-v0'), possibly wrapped), got {type(env).__name__} over "
                f"{type(getattr(env, 'unwrapped', env)).__name__}"
            )
        if not _has_wrapper(env, AdmissibleActions):
            env = AdmissibleActions(env)
        super().__init__(env)
        try:
            self.answer_slots = int(env.get_wrapper_attr("max_answers"))
            self.slots_per_tool = int(slots_per_tool or env.get_wrapper_attr("max_per_tool"))
        except AttributeError as exc:  # an AdmissibleActions hidden behind a non-gym wrapper
            raise TypeError(
                "DiscreteToolActions reads the menu of an AdmissibleActions wrapper and found "
                f"none it can reach ({exc}); wrap the environment with AdmissibleActions first: "
                "DiscreteToolActions(AdmissibleActions(env))"
            ) from None
        self.tools = [t.name for t in spec.tools]
        size = self.answer_slots + self.slots_per_tool * len(self.tools)
        self.action_space = spaces.Discrete(size)

    def action(self, action: Any) -> str:
        index = int(action)
        if not 0 <= index < self.action_space.n:
            raise ValueError(f"action {index} is outside {self.action_space}")
        answers: list[str] = self.env.get_wrapper_attr("answer_actions")
        if not answers:
            raise gym.error.ResetNeeded(
                "DiscreteToolActions: call reset() before step(); the menu is built at reset"
            )
        if index < self.answer_slots:
            return answers[index % len(answers)]
        block, slot = divmod(index - self.answer_slots, self.slots_per_tool)
        calls = self.env.get_wrapper_attr("calls_by_tool").get(self.tools[block])
        if calls:
            return calls[slot % len(calls)]
        menu: list[str] = self.env.get_wrapper_attr("admissible_actions")
        return menu[index % len(menu)]

    def action_masks(self) -> np.ndarray:
        """``True`` for the indices that name a distinct admissible action."""
        mask = np.zeros(self.action_space.n, dtype=bool)
        mask[: len(self.env.get_wrapper_attr("answer_actions"))] = True
        calls_by_tool = self.env.get_wrapper_attr("calls_by_tool")
        for block, tool in enumerate(self.tools):
            start = self.answer_slots + block * self.slots_per_tool
            count = min(len(calls_by_tool.get(tool, ())), self.slots_per_tool)
            mask[start : start + count] = True
        return mask


def _bucket(namespace: str, token: str, dim: int) -> int:
    # crc32, not hash(): Python salts str hashes per process, which would scramble features
    # between SubprocVecEnv workers and between training and evaluation.
    return zlib.crc32(f"{namespace}:{token}".encode()) % dim


class HashedBagOfWords(gym.ObservationWrapper):
    """A ``Box(0, 1, (dim,))`` observation: hashed word features of what the agent needs.

    Four namespaces share the vector (feature hashing, so no vocabulary is needed and any
    environment fits): ``task`` (the instruction's words), ``call`` (names and argument values
    of the calls made so far), ``obs`` (the latest observation's words) and ``turn`` (the turn
    number). A feature is 1.0 when present. The history is read from the environment's own
    ``messages``, so this wrapper keeps no state of its own.

    Args:
        env: an AgentWorld environment (possibly wrapped).
        dim: vector size; collisions fall as it grows.
        max_chars: only the first ``max_chars`` characters of each text are read.
    """

    def __init__(self, env: gym.Env, dim: int = 512, max_chars: int = 4000) -> None:
        super().__init__(env)
        if dim < 8:
            raise ValueError(f"dim must be at least 8, got {dim}")
        self.dim = dim
        self.max_chars = max_chars
        self.observation_space = spaces.Box(0.0, 1.0, shape=(dim,), dtype=np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        base = self.env.unwrapped
        task = base.task
        messages = base.messages
        texts = [("task", task.instruction if task is not None else "")]
        turns = 0
        for message in messages:
            if message.get("role") != "assistant":
                continue
            turns += 1
            for call in message.get("tool_calls", []):
                fn = call["function"]
                texts.append(("call", f"{fn['name']} {fn['arguments']}"))
        texts.append(("obs", observation if isinstance(observation, str) else str(observation)))
        for namespace, text in texts:
            for token in _WORD.findall(text[: self.max_chars].lower()):
                vector[_bucket(namespace, token, self.dim)] = 1.0
        vector[_bucket("turn", str(turns), self.dim)] = 1.0
        return vector


class TerminateOnBudget(gym.Wrapper):
    """Report the end of the turn budget as ``terminated``, not ``truncated``.

    An AgentWorld episode that runs out of turns is scored there and then (the verifier runs
    on the state reached), so nothing follows it: it is a terminal state of the task. Learners
    that treat ``truncated`` as a time limit (SB3, CleanRL) bootstrap the value of the state
    after it, which makes stalling until the budget look better than answering.
    """

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated or truncated, False, info


def make_sb3_env(
    env: gym.Env,
    slots_per_tool: int = 8,
    max_answers: int = 8,
    obs_dim: int = 512,
) -> gym.Env:
    """Any AgentWorld environment as ``Box`` observations and ``Discrete`` actions.

    ``HashedBagOfWords(DiscreteToolActions(AdmissibleActions(TerminateOnBudget(env))))``:
    ``max_answers`` submit slots plus ``slots_per_tool`` slots per tool, and an ``obs_dim``
    feature vector.

    >>> import gymnasium as gym, agentworld_gym
    >>> env = make_sb3_env(gym.make("AgentWorld/notion-v0"))
    >>> env.observation_space.shape, env.action_space
    ((512,), Discrete(160))
    """
    env = AdmissibleActions(
        TerminateOnBudget(env), max_per_tool=slots_per_tool, max_answers=max_answers
    )
    return HashedBagOfWords(DiscreteToolActions(env), dim=obs_dim)
