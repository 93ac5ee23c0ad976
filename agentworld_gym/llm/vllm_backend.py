"""vLLM as an in-process generator on GPU, with the trained weights pushed in after updates.

Implements the same :class:`~agentworld_gym.llm.transformers_backend.TokenGenerator`
interface as the transformers backend — token ids in, token ids and log-probabilities out —
plus :meth:`VLLMBackend.chat` for the :class:`~agentworld_gym.llm.base.LLMBackend` contract.
vLLM is imported when a backend is built, never at module import. Weight sync follows TRL's
colocate mode: every parameter of the trained model (LoRA adapters merged in first) goes
through the vLLM model's ``load_weights``, then the prefix cache is reset so no stale
key/value blocks survive an update.

This module cannot be tested without a GPU; it is written against vLLM's documented ``LLM``
API (``LLM.generate`` with ``{"prompt_token_ids": ...}`` prompts, ``SamplingParams``,
``LLM.reset_prefix_cache``) and TRL's use of the in-process worker.
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from typing import Any

from agentworld_gym.errors import ConfigError
from agentworld_gym.llm.base import LLMConfig, Message, register_backend
from agentworld_gym.llm.chat_format import ChatFormat, ToolFormat
from agentworld_gym.llm.transformers_backend import Generation, Sampling


@dataclass
class VLLMConfig:
    """Engine settings of the in-process vLLM generator."""

    gpu_memory_utilization: float = 0.3
    """Fraction of GPU memory vLLM may take (weights + KV cache); the trainer needs the rest."""
    max_model_len: int | None = None
    """Context length to plan the KV cache for; ``None`` = the model's."""
    tensor_parallel_size: int = 1
    """GPUs per engine."""
    enable_prefix_caching: bool = True
    """Reuse KV blocks of shared prefixes (GRPO groups, multi-turn episodes)."""
    enforce_eager: bool = False
    """Skip CUDA graphs (slower decoding, faster start)."""
    dtype: str = "auto"
    """Weights' dtype in vLLM."""
    seed: int = 0
    """Engine seed; each request also gets its own seed."""


@functools.cache
def _warn_unconstrained() -> None:
    warnings.warn(
        "the vLLM backend does not hold tool calls to the tools (constrain_calls): its calls "
        "are sampled unconstrained; set algo.rollout.constrain_calls=false and "
        "eval.constrain_calls=false to say so in the config",
        stacklevel=3,
    )


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ConfigError(
            "The vllm backend needs vLLM and a GPU: pip install agentworld-gym[vllm]"
        ) from exc
    return vllm


class VLLMBackend:
    """Token-level generation with a ``vllm.LLM`` living in this process.

    Args:
        llm: a ``vllm.LLM``.
        tokenizer: the Hugging Face tokenizer of the same model.
        tool_format: see :class:`~agentworld_gym.llm.chat_format.ToolFormat`.
        chat_template: a Jinja template replacing the tokenizer's.
        sampling: default sampling keywords for :meth:`chat`.
    """

    def __init__(
        self,
        llm: Any,
        tokenizer: Any,
        *,
        tool_format: ToolFormat | str = ToolFormat.auto,
        chat_template: str | None = None,
        sampling: dict[str, Any] | None = None,
    ) -> None:
        self.llm = llm
        self.tokenizer = tokenizer
        self.chat_format = ChatFormat(tokenizer, tool_format, chat_template)
        self.sampling = dict(sampling or {})
        self.pad_token_id = self.chat_format.pad_token_id

    @classmethod
    def from_pretrained(
        cls, path: str, settings: VLLMConfig | None = None, **kwargs: Any
    ) -> VLLMBackend:
        """Start an engine on a hub id or local folder."""
        vllm = _import_vllm()
        from transformers import AutoTokenizer

        settings = settings or VLLMConfig()
        # One process, no torchrun: the worker lives here so that weights can be pushed in.
        for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}.items():
            os.environ.setdefault(key, value)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        llm = vllm.LLM(
            model=str(path),
            tensor_parallel_size=settings.tensor_parallel_size,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            max_model_len=settings.max_model_len,
            enable_prefix_caching=settings.enable_prefix_caching,
            enforce_eager=settings.enforce_eager,
            dtype=settings.dtype,
            seed=settings.seed,
            distributed_executor_backend="external_launcher",
            logprobs_mode="processed_logprobs",
        )
        return cls(llm, AutoTokenizer.from_pretrained(str(path)), **kwargs)

    @classmethod
    def for_policy(
        cls,
        model: Any,
        tokenizer: Any,
        llm_config: LLMConfig,
        model_config: Any,
        settings: VLLMConfig | None = None,
    ) -> VLLMBackend:
        """An engine for a policy being trained: started from the same checkpoint, then given
        the policy's current weights (LoRA merged)."""
        path = getattr(model_config, "name", llm_config.model)
        if path == "embedded":
            from agentworld_gym.llm.embedded import embedded_model_path

            path = embedded_model_path()
        backend = cls.from_pretrained(
            path,
            settings,
            tool_format=getattr(model_config, "tool_format", ToolFormat.auto),
            chat_template=getattr(model_config, "chat_template", None),
            sampling=llm_config.sampling(),
        )
        backend.tokenizer = tokenizer
        backend.sync_weights(model)
        return backend

    @classmethod
    def from_config(cls, config: LLMConfig) -> VLLMBackend:
        """Factory for ``LLMConfig(backend="vllm")`` (``config.model`` = hub id or folder)."""
        return cls.from_pretrained(config.model, sampling=config.sampling())

    constrains_calls = False
    """``generate`` samples calls unconstrained (its ``tools`` are ignored, warned once)."""

    # -- token level ------------------------------------------------------------------------
    def generate(
        self,
        prompts: list[list[int]],
        sampling: Sampling,
        tools: list[list[dict] | None] | None = None,
    ) -> list[Generation]:
        """Continue each prompt; every request gets its own seed so that a GRPO group's
        identical prompts still sample different continuations. ``tools`` is not applied
        here: vLLM samples the model's calls unconstrained (warned once)."""
        vllm = _import_vllm()
        if tools is not None and any(t is not None for t in tools):
            _warn_unconstrained()
        params = []
        for i in range(len(prompts)):
            params.append(
                vllm.SamplingParams(
                    n=1,
                    temperature=max(sampling.temperature, 0.0),
                    top_p=sampling.top_p if sampling.temperature > 0 else 1.0,
                    max_tokens=sampling.max_new_tokens,
                    seed=None if sampling.seed is None else sampling.seed * 100_003 + i,
                    logprobs=0,
                    stop_token_ids=[self.chat_format.eos_token_id],
                    skip_special_tokens=True,
                )
            )
        requests = [{"prompt_token_ids": list(p)} for p in prompts]
        outputs = self.llm.generate(requests, sampling_params=params, use_tqdm=False)
        results = []
        for out in outputs:
            completion = out.outputs[0]
            tokens = list(completion.token_ids)
            logprobs = None
            if completion.logprobs is not None:
                logprobs = [
                    float(step[token].logprob) if token in step else float("nan")
                    for step, token in zip(completion.logprobs, tokens, strict=False)
                ]
            reason = "length" if completion.finish_reason == "length" else "stop"
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            results.append(Generation(tokens, text, reason, logprobs))
        return results

    def sync_weights(self, model: Any) -> None:
        """Push the trained model's weights into the engine and drop cached KV blocks."""
        target = _engine_model(self.llm)
        for name, tensor in _named_weights(model):
            target.load_weights([(name, tensor)])
        self.llm.reset_prefix_cache()

    # -- LLMBackend -------------------------------------------------------------------------
    def chat(
        self, messages: list[Message], tools: list[dict] | None = None, **sampling: Any
    ) -> Message:
        """One assistant message (see :meth:`agentworld_gym.llm.base.LLMBackend.chat`)."""
        merged = {**self.sampling, **{k: v for k, v in sampling.items() if v is not None}}
        params = Sampling(
            max_new_tokens=int(merged.get("max_tokens") or 256),
            temperature=float(merged.get("temperature", 1.0)),
            top_p=float(merged.get("top_p", 1.0)),
            seed=merged.get("seed"),
        )
        generation = self.generate([self.chat_format.prompt_ids(messages, tools)], params)[0]
        return self.chat_format.parse(generation.text)


def _engine_model(llm: Any) -> Any:
    """The ``torch.nn.Module`` inside an in-process vLLM engine (attribute paths differ
    between vLLM versions; TRL's colocate mode uses the first)."""
    executor = llm.llm_engine.model_executor
    for path in ("driver_worker.model_runner.model", "driver_worker.worker.model_runner.model"):
        obj = executor
        try:
            for attr in path.split("."):
                obj = getattr(obj, attr)
        except AttributeError:
            continue
        return obj
    raise ConfigError(
        "Cannot reach the vLLM model in this process to load new weights; this vLLM version "
        "may run its engine in a subprocess (set VLLM_ENABLE_V1_MULTIPROCESSING=0)."
    )


def _named_weights(model: Any):
    """``(vLLM name, tensor)`` of every weight; LoRA adapters are merged for the duration."""
    if hasattr(model, "merge_adapter"):
        model.merge_adapter()
        try:
            for name, param in model.named_parameters():
                name = name.removeprefix("base_model.model.").replace(".base_layer", "")
                if "lora_" in name or "original_module" in name:
                    continue
                yield name.replace("modules_to_save.default.", ""), param.data
        finally:
            model.unmerge_adapter()
    else:
        for name, param in model.named_parameters():
            yield name, param.data


def _make_vllm_backend(config: LLMConfig) -> VLLMBackend:
    return VLLMBackend.from_config(config)


register_backend("vllm", _make_vllm_backend, replace=True)
