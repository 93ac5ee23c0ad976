"""verl: AgentWorld episodes as a verl agent loop, and verl's parquet task files from any pool.

verl's multi-turn rollouts run through agent loops (``verl.experimental.agent_loop``): for
each dataset row, ``AgentLoopWorker`` instantiates the loop registered under the row's
``agent_name`` and awaits ``run(sampling_params, **row)``, which talks to the rollout servers
(``server_manager.generate(prompt_ids) -> token ids``) and returns the token sequence with a
mask of the model's own tokens and, optionally, the reward. verl's Ray trainer
(``verl.trainer.main_ppo``) is the distributed engine around it.

:class:`AgentWorldAgentLoop`, registered as ``"agentworld_agent"``, runs one AgentWorld episode
per row (:class:`EngineEpisode`, a fresh ``gym.make`` environment: one task, isolated state):

- the prompt is rendered with the environment's tools (``tools=`` to the chat template, so
  the model sees the same schemas as through ``gym.make``);
- each generation is decoded and given to ``env.step`` as text: ``<tool_call>`` blocks (or a
  JSON object with ``"name"``) are tool calls, text without a marker is the final answer (the
  environment's marker rule, not verl's tool parser);
- tool results (and a multi-turn task's next user message) are appended through verl's
  continuous-token merge, with response mask 0;
- the verifier's reward is ``reward_score`` (verl's ``rm_scores``, so no reward function is
  needed), and ``reward``/``success``/``turns`` go to ``reward_extra_info``, which verl logs.

An episode verl cuts short (``response_length``, ``multi_turn.max_assistant_turns``) is scored
on the state reached with an empty answer, as the environment does at its turn budget.

:func:`dataset_rows` / :func:`write_dataset` write verl's task files: ``prompt``,
``data_source``, ``ability``, ``reward_model``, ``extra_info`` (with ``env`` and ``task_id``,
which the loop reads) and ``agent_name``. Train with::

    python -m verl.trainer.main_ppo data.train_files=train.parquet data.val_files=test.parquet \\
        actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.multi_turn.enable=true \\
        actor_rollout_ref.rollout.agent.agent_loop_config_path=agentworld_agent_loop.yaml ...

where the YAML (:func:`write_agent_loop_config`) names this class, so verl's workers import it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)
from verl.workers.rollout.replica import TokenOutput

from agentworld_gym.integrations.engine_episode import EngineEpisode, task_rows, write_parquet
from agentworld_gym.integrations.scripted import action_text, chatml_messages

AGENT_NAME = "agentworld_agent"
"""The name the loop is registered under (the rows' ``agent_name``)."""


@register(AGENT_NAME)
class AgentWorldAgentLoop(AgentLoopBase):
    """One AgentWorld episode per dataset row (see the module docstring).

    ``tools`` (verl's own configured tools) are not used: an AgentWorld episode offers its
    environment's tools, and runs them through ``env.step``.
    """

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        multi_turn = self.rollout_config.multi_turn
        self.max_assistant_turns: int | None = multi_turn.get("max_assistant_turns")
        self.response_length: int = self.rollout_config.response_length

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra = dict(kwargs.get("extra_info") or {})
        for key in ("env", "task_id"):
            if not extra.get(key):
                raise ValueError(f"AgentWorld rows need extra_info[{key!r}]; got {sorted(extra)}")
        seed, max_turns = extra.get("seed"), extra.get("max_turns")
        episode = EngineEpisode(
            extra["env"],
            extra["task_id"],
            seed=None if seed is None else int(seed),
            max_turns=None if max_turns is None else int(max_turns),
        )
        try:
            return await self._play(episode, kwargs, sampling_params)
        finally:
            episode.close()

    async def _play(
        self, episode: EngineEpisode, row: dict[str, Any], sampling_params: dict[str, Any]
    ) -> AgentLoopOutput:
        opening, tools = episode.start()
        messages = list(row.get("raw_prompt") or opening)
        metrics: dict[str, float] = {"generate_sequences": 0.0, "tool_calls": 0.0}
        request_id = uuid4().hex
        runtime_ids = await self.ct_build_initial_tokens(messages, tools=tools)
        prompt_length = len(runtime_ids)
        mask: list[int] = []
        logprobs: list[float] = []
        loop = asyncio.get_running_loop()
        assistant_turns = 0
        while True:
            start = loop.time()
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=runtime_ids, sampling_params=sampling_params
            )
            metrics["generate_sequences"] += loop.time() - start
            assistant_turns += 1
            merged, mask, merged_logprobs = await self.ct_merge_assistant_token(
                runtime_ids,
                list(output.token_ids),
                mask,
                logprobs if (logprobs or output.log_probs) else None,
                assistant_logprobs=output.log_probs or None,
            )
            runtime_ids = merged.token_ids
            logprobs = merged_logprobs or []
            text = self._decode(output.token_ids)
            start = loop.time()
            step = await loop.run_in_executor(None, episode.act, text)
            metrics["tool_calls"] += loop.time() - start
            messages.append(episode.assistant_message() or {"role": "assistant", "content": text})
            if step.done or len(mask) >= self.response_length:
                break
            if self.max_assistant_turns and assistant_turns >= self.max_assistant_turns:
                break
            previous = list(messages)
            messages.extend(step.observations)
            merged, new_mask, new_logprobs = await self.ct_merge_context_msg(
                previous, messages, runtime_ids, mask, logprobs or None, tools=tools
            )
            if len(new_mask) >= self.response_length:
                break
            runtime_ids, mask = merged.token_ids, new_mask
            logprobs = (new_logprobs or []) if logprobs else []
        reward = episode.finish()
        response_ids = runtime_ids[prompt_length:]
        result = episode.metrics()
        return AgentLoopOutput(
            prompt_ids=runtime_ids[:prompt_length],
            response_ids=response_ids[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=reward,
            num_turns=2 * assistant_turns + 1,
            metrics=AgentLoopMetrics(**metrics),
            extra_fields={
                "reward_extra_info": result,
                "agentworld": {
                    "env": row["extra_info"]["env"],
                    "task_id": episode.task_id,
                    "verification": episode.verification,
                },
            },
        )

    def _decode(self, token_ids: list[int]) -> str:
        """The generated text without its trailing end-of-turn/padding tokens. Special tokens
        inside are kept: some tokenizers mark ``<tool_call>`` itself special."""
        ids = list(token_ids)
        special = set(self.tokenizer.all_special_ids)
        while ids and ids[-1] in special:
            ids.pop()
        return self.tokenizer.decode(ids)


def dataset_rows(envs: list[str], split: str = "train") -> list[dict[str, Any]]:
    """verl task rows, one per task of ``envs`` in ``split`` (see the module docstring)."""
    rows = []
    for index, row in enumerate(task_rows(envs, split)):
        rows.append(
            {
                "data_source": f"agentworld/{row.env}",
                "prompt": row.messages,
                "ability": "agent",
                "reward_model": {"style": "agentworld_verifier", "ground_truth": row.task_id},
                "extra_info": {
                    "index": index,
                    "split": row.split,
                    "env": row.env,
                    "task_id": row.task_id,
                    "category": row.category,
                },
                "agent_name": AGENT_NAME,
            }
        )
    return rows


def write_dataset(envs: list[str], path: str | Path, split: str = "train") -> Path:
    """:func:`dataset_rows` as a parquet file for ``data.train_files`` / ``data.val_files``."""
    return write_parquet(dataset_rows(envs, split), path)


def write_agent_loop_config(path: str | Path) -> Path:
    """The YAML for ``actor_rollout_ref.rollout.agent.agent_loop_config_path``: it makes verl's
    workers import :class:`AgentWorldAgentLoop` under :data:`AGENT_NAME`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"- name: {AGENT_NAME}\n  _target_: {__name__}.AgentWorldAgentLoop\n")
    return path


def local_worker_config(
    model_path: str,
    train_files: str | Path,
    agent_loop_config_path: str | Path,
    *,
    chat_template: str | None = None,
    max_prompt_length: int = 8192,
    max_response_length: int = 8192,
) -> Any:
    """verl's full PPO trainer config (its generated defaults) with what an
    ``AgentLoopWorker`` needs to play AgentWorld rows in this process: the model (for its
    tokenizer and config), the data files, this loop's YAML, multi-turn on, and lengths.

    For CPU smoke runs and debugging without Ray or GPUs (see ``examples/verl_agent_loop.py``);
    a training run composes its config with ``python -m verl.trainer.main_ppo`` instead.
    """
    import verl
    from omegaconf import OmegaConf

    generated = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    config = OmegaConf.load(generated)
    config.actor_rollout_ref.model.path = str(model_path)
    config.actor_rollout_ref.model.custom_chat_template = chat_template
    rollout = config.actor_rollout_ref.rollout
    rollout.name = "vllm"  # the server kind verl would start; a local run passes its own client
    rollout.multi_turn.enable = True
    rollout.agent.agent_loop_config_path = str(agent_loop_config_path)
    config.data.train_files = str(train_files)
    config.data.max_prompt_length = max_prompt_length
    config.data.max_response_length = max_response_length
    return config


class ScriptedServer:
    """A stand-in for verl's ``LLMServerClient`` whose model is a policy (CPU smoke runs, tests).

    It decodes the prompt tokens, reads the chat back from its ChatML rendering, asks
    ``policy(messages, tools)`` for the next action and returns it as the Hermes text a model
    would generate, tokenized and closed by ``end_token``.
    """

    def __init__(self, tokenizer: Any, policy: Any, end_token: str = "<|im_end|>") -> None:
        self.tokenizer = tokenizer
        self.policy = policy
        self.end_id = tokenizer.convert_tokens_to_ids(end_token)

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any
    ) -> TokenOutput:
        messages = chatml_messages(self.tokenizer.decode(prompt_ids))
        text = action_text(self.policy(messages, []))
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.end_id]
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids), stop_reason="completed")
