"""SkyRL: any AgentWorld environment as a ``skyrl_gym`` text environment.

SkyRL's generator (``skyrl.train.generators.SkyRLGymGenerator``) reads parquet rows with
``prompt`` (OpenAI messages) and ``env_class``; every other column reaches the environment as
``extras``. Per rollout it calls ``skyrl_gym.make(env_class, env_config=..., extras=row)``,
``init(prompt)``, then ``step(generated_text)`` until ``done``, appending the returned
``observations`` to the chat, and finally ``get_metrics()`` and ``close()``.

:class:`AgentWorldTextEnv` (registered as ``"agentworld"`` by :func:`register`) plays one
task per instance on its own ``gym.make`` environment (:class:`EngineEpisode`): the generated
text goes to ``env.step`` as it is, so a ``<tool_call>`` block calls a tool and text without
a tool-call marker is the final answer; the reward, returned on the last step, is the
verifier's, the one ``gym.make`` gives. SkyRL renders the chat with the tokenizer's template
and no ``tools=`` argument, so :func:`dataset_rows` writes the tool schemas into the system
prompt in the Hermes convention (``<tools>`` block, ``<tool_call>`` replies), which Qwen-style
templates use natively.

Columns read from ``extras``: ``env`` and ``task_id`` (required), ``seed``, and
``max_turns`` (the generator sets it from ``generator.max_turns``; set that at least as high
as the environment's budget, 30 for notion, or episodes end early and are scored on the
state reached). ``env_config.observation_role`` (default ``"tool"``) is the role of tool
results; ``"user"`` wraps them in ``<tool_response>`` blocks for templates without a tool role.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from agentworld_gym.integrations.engine_episode import EngineEpisode, task_rows, write_parquet
from agentworld_gym.llm.chat_format import hermes_tools_prompt

ENV_CLASS = "agentworld"
"""The id :func:`register` gives the environment in SkyRL's registry."""


class AgentWorldTextEnv(BaseTextEnv):
    """One AgentWorld task as a SkyRL text environment (see the module docstring).

    Args:
        env_config: SkyRL's per-class config (``skyrl_gym_cfg.agentworld``); reads
            ``observation_role``.
        extras: the dataset row's other columns: ``env``, ``task_id``, ``seed``, ``max_turns``.
    """

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        for key in ("env", "task_id"):
            if not extras.get(key):
                raise ValueError(f"AgentWorld rows need an {key!r} column; got {sorted(extras)}")
        seed = extras.get("seed")
        max_turns = extras.get("max_turns")
        self.episode = EngineEpisode(
            extras["env"],
            extras["task_id"],
            seed=None if seed is None else int(seed),
            max_turns=None if max_turns is None else int(max_turns),
        )
        self.observation_role = _config_get(env_config, "observation_role", "tool")
        if self.observation_role not in ("tool", "user"):
            raise ValueError(
                f"observation_role must be 'tool' or 'user', got {self.observation_role!r}"
            )

    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Reset on the row's task; the row's prompt is the conversation (its own system
        prompt with the tools, see :func:`dataset_rows`), else the environment's opening."""
        messages, tools = self.episode.start()
        self.max_turns = self.episode.env.unwrapped.max_turns
        if prompt:
            return list(prompt), {}
        return hermes_prompt(messages, tools), {}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        step = self.episode.act(action)
        observations = [self._observation(m) for m in step.observations]
        metadata = {"tool_results": step.info.get("tool_results", [])}
        if step.done:
            metadata["verification"] = self.episode.verification
        return BaseTextEnvStepOutput(
            observations=observations, reward=step.reward, done=step.done, metadata=metadata
        )

    def _observation(self, message: dict[str, Any]) -> dict[str, Any]:
        if message["role"] != "tool":
            return {"role": message["role"], "content": message.get("content") or ""}
        content = message.get("content") or ""
        if self.observation_role == "user":
            return {"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"}
        return {"role": "tool", "content": content}

    def get_metrics(self) -> dict[str, Any]:
        """``reward``, ``success``, ``turns`` and ``truncated`` (SkyRL averages them per class)."""
        return self.episode.metrics()

    def close(self) -> None:
        self.episode.close()


def _config_get(config: Any, key: str, default: Any) -> Any:
    getter = getattr(config, "get", None)  # a dict or an OmegaConf node
    return getter(key, default) if callable(getter) else getattr(config, key, default)


def hermes_prompt(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The opening messages with the Hermes tool block appended to the system prompt."""
    out = [dict(m) for m in messages]
    block = hermes_tools_prompt(tools)
    if out and out[0]["role"] == "system":
        out[0]["content"] = f"{out[0]['content']}\n\n{block}"
    else:
        out.insert(0, {"role": "system", "content": block})
    return out


def register(env_id: str = ENV_CLASS) -> str:
    """Register :class:`AgentWorldTextEnv` in ``skyrl_gym``'s registry (idempotent)."""
    import skyrl_gym

    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:AgentWorldTextEnv")
    return env_id


def dataset_rows(envs: list[str], split: str = "train") -> list[dict[str, Any]]:
    """SkyRL dataset rows, one per task: ``prompt``, ``env_class``, ``env``, ``task_id``, ...

    ``reward_spec`` names the task (SkyRL's convention for where the ground truth lives; the
    verifier itself runs inside the environment).
    """
    return [
        {
            "data_source": f"agentworld/{row.env}",
            "prompt": hermes_prompt(row.messages, row.tools),
            "env_class": ENV_CLASS,
            "env": row.env,
            "task_id": row.task_id,
            "split": row.split,
            "category": row.category,
            "reward_spec": {"method": "agentworld_verifier", "ground_truth": row.task_id},
        }
        for row in task_rows(envs, split)
    ]


def write_dataset(envs: list[str], path: str | Path, split: str = "train") -> Path:
    """:func:`dataset_rows` as the parquet file SkyRL's ``data.train_data`` points at."""
    return write_parquet(dataset_rows(envs, split), path)
