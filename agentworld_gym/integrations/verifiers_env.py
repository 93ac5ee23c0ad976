"""verifiers: AgentWorld environments as a verifiers multi-turn tool environment.

``load_environment(envs=[...], split=...)`` returns an :class:`AgentWorldVerifiersEnv`, a
``verifiers.MultiTurnEnv`` (the classic environment API of verifiers 0.3: ``evaluate``,
``generate``, ``vf-eval``, and the rollouts trainers such as prime-rl drive). The module is
its own environment id::

    vf-eval agentworld_gym.integrations.verifiers_env -a '{"envs": ["notion"]}' \\
        -b http://localhost:8000/v1 -m Qwen/Qwen3-8B -n 12

or ``verifiers.load_environment("agentworld_gym.integrations.verifiers_env", envs=[...])``.

Episode semantics are the Gymnasium environment's (:class:`EngineEpisode`: one task per
rollout, a fresh ``gym.make`` environment in ``setup_state``, so rollouts never share a
database):

- each row's tools are its environment's own schemas (``submit`` included), set per rollout
  in ``state["tool_defs"]``, so a pool can mix environments;
- every assistant turn goes to ``env.step`` as the OpenAI message it is: ``tool_calls`` (or
  Hermes ``<tool_call>`` text, for servers without a tool parser) call tools, a reply with no
  tool-call marker is the final answer; tool results come back as ``tool`` messages, the next
  user turn of a multi-turn task as a ``user`` message;
- the rubric's reward is the verifier's (``agentworld_reward``, weight 1), with
  ``agentworld_success`` and ``agentworld_turns`` as metrics. A rollout verifiers stops first
  (its ``max_turns``, a prompt too long, an error) is scored on the state reached with an
  empty answer, as the environment does at its turn budget.
"""

from __future__ import annotations

from typing import Any

import verifiers as vf
from datasets import Dataset

from agentworld_gym.integrations.engine_episode import EngineEpisode, task_rows

_EPISODE = "agentworld_episode"
"""State key of the live episode (removed at cleanup: states are saved as JSON)."""
RESULT = "agentworld"
"""State key of the episode's outcome: ``reward``, ``success``, ``turns``, ``verification``."""


def dataset(envs: list[str], split: str = "train") -> Dataset:
    """One row per task: ``prompt`` (system + user), ``info`` (``env``, ``task_id``,
    ``split``), ``answer`` (empty: the verifier checks the episode)."""
    rows = [
        {
            "prompt": row.messages,
            "answer": "",
            "info": {"env": row.env, "task_id": row.task_id, "split": row.split},
        }
        for row in task_rows(envs, split)
    ]
    return Dataset.from_list(rows)


class AgentWorldVerifiersEnv(vf.MultiTurnEnv):
    """A verifiers multi-turn environment over AgentWorld tasks (see the module docstring).

    Args:
        envs: registered environment names (``"notion"``, catalog names).
        split: tasks of the training ``dataset``.
        eval_split: tasks of ``eval_dataset`` (what ``evaluate`` and ``vf-eval`` run).
        max_turns: verifiers' own cap on model turns (default none: the environment's budget
            ends the episode).
        **kwargs: passed to ``vf.MultiTurnEnv``.
    """

    def __init__(
        self,
        envs: list[str],
        split: str = "train",
        eval_split: str = "test",
        max_turns: int = -1,
        **kwargs: Any,
    ) -> None:
        rubric = vf.Rubric(funcs=[agentworld_reward], weights=[1.0])
        rubric.add_metric(agentworld_success)
        rubric.add_metric(agentworld_turns)
        super().__init__(
            dataset=dataset(envs, split),
            eval_dataset=dataset(envs, eval_split),
            rubric=rubric,
            max_turns=max_turns,
            **kwargs,
        )

    async def setup_state(self, state: vf.State) -> vf.State:
        info = state["info"]
        episode = EngineEpisode(info["env"], info["task_id"], seed=info.get("seed"))
        _, tools = episode.start()
        state[_EPISODE] = episode
        state["tool_defs"] = [vf.Tool(**_tool_def(t)) for t in tools]
        return state

    async def env_response(
        self, messages: vf.Messages, state: vf.State, **kwargs: Any
    ) -> vf.Messages:
        episode: EngineEpisode = state[_EPISODE]
        step = episode.act(_openai_message(messages[-1]))
        if step.done:
            state["final_env_response"] = []
            return []
        return [_vf_message(m) for m in step.observations]

    @vf.stop
    async def agentworld_episode_over(self, state: vf.State) -> bool:
        episode = state.get(_EPISODE)
        return episode is not None and episode.done

    @vf.cleanup
    async def close_episode(self, state: vf.State) -> None:
        episode: EngineEpisode | None = state.pop(_EPISODE, None)
        if episode is None:
            return
        trajectory = state.get("trajectory") or []
        if not episode.done and len(trajectory) > episode.turns and trajectory[-1]["completion"]:
            # verifiers stopped (its max_turns) before env_response saw the last reply: play it,
            # as gym.make plays the action that exhausts the turn budget.
            episode.act(_openai_message(trajectory[-1]["completion"][-1]))
        episode.finish()
        state[RESULT] = {
            "reward": episode.reward,
            "success": episode.success,
            "turns": episode.turns,
            "truncated": episode.truncated,
            "verification": episode.verification,
        }
        episode.close()


async def agentworld_reward(state: vf.State) -> float:
    """The task verifier's reward (weighted partial credit)."""
    return float(state.get(RESULT, {}).get("reward", 0.0))


async def agentworld_success(state: vf.State) -> float:
    """1.0 when every criterion of the task's verifier was met."""
    return float(state.get(RESULT, {}).get("success", False))


async def agentworld_turns(state: vf.State) -> float:
    """Agent turns the environment saw."""
    return float(state.get(RESULT, {}).get("turns", 0))


def _tool_def(schema: dict[str, Any]) -> dict[str, Any]:
    function = schema.get("function", schema)
    return {
        "name": function["name"],
        "description": function.get("description") or "",
        "parameters": function.get("parameters") or {"type": "object", "properties": {}},
    }


def _openai_message(message: Any) -> dict[str, Any]:
    """A verifiers assistant message as the OpenAI dict ``env.step`` reads."""
    out: dict[str, Any] = {"role": "assistant", "content": _text(getattr(message, "content", None))}
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return out


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    parts = [
        getattr(p, "text", None) or (p.get("text") if isinstance(p, dict) else None)
        for p in content
    ]
    return "".join(p for p in parts if p)


def _vf_message(message: dict[str, Any]) -> vf.Message:
    if message["role"] == "tool":
        return vf.ToolMessage(
            tool_call_id=message["tool_call_id"], content=message.get("content") or ""
        )
    return vf.UserMessage(content=message.get("content") or "")


def load_environment(
    envs: list[str] | str = "notion",
    split: str = "train",
    eval_split: str = "test",
    max_turns: int = -1,
    **kwargs: Any,
) -> AgentWorldVerifiersEnv:
    """verifiers' entry point: ``envs`` as a list or comma-separated names."""
    names = envs.split(",") if isinstance(envs, str) else list(envs)
    return AgentWorldVerifiersEnv(
        names, split=split, eval_split=eval_split, max_turns=max_turns, **kwargs
    )
