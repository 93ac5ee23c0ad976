"""Self-describing, resumable checkpoints: weights, optimizer, step, RNG states, config.

``<run>/checkpoints/<phase>-<step:06d>/state.pt`` holds everything a resumed run needs; the
model folder beside it (``model/``, ``save_pretrained`` format: LoRA adapters or full weights)
is there for use outside training. Writes go to a temporary folder renamed into place, so a
crash mid-save leaves the previous checkpoint intact.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch


def rng_state() -> dict[str, Any]:
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(
    run_dir: Path,
    phase: str,
    step: int,
    model: Any,
    optimizer: torch.optim.Optimizer,
    config: dict[str, Any],
    extra: dict[str, Any] | None = None,
    keep: int = 2,
    *,
    trainable: dict[str, torch.Tensor] | None = None,
    optimizer_state: Any = None,
) -> Path:
    """Write a checkpoint and delete all but the ``keep`` newest of this phase.

    ``trainable`` and ``optimizer_state`` replace what is read from ``model`` and
    ``optimizer`` when those are sharded over ranks (the caller gathers the full tensors, see
    :mod:`algorithms.distributed`); ``model.save_pretrained`` writes the model folder.
    """
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{phase}-{step:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
    if trainable is None:
        trainable = {n: p.detach().cpu() for n, p in model.named_parameters() if p.requires_grad}
    torch.save(
        {
            "phase": phase,
            "step": step,
            "trainable": trainable,
            "optimizer": optimizer.state_dict() if optimizer_state is None else optimizer_state,
            "rng": rng_state(),
            "config": config,
            "extra": extra or {},
        },
        tmp / "state.pt",
    )
    model.save_pretrained(tmp / "model")
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in sorted(root.glob(f"{phase}-*"))[: -max(keep, 1)]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest(run_dir: Path, phase: str) -> Path | None:
    """The newest complete checkpoint of ``phase`` in ``run_dir``, if any."""
    found = sorted((Path(run_dir) / "checkpoints").glob(f"{phase}-*/state.pt"))
    return found[-1].parent if found else None


def read(path: Path) -> dict[str, Any]:
    """The stored state of a checkpoint folder, applied to nothing."""
    return torch.load(Path(path) / "state.pt", map_location="cpu", weights_only=False)


def load(path: Path, model: Any, optimizer: torch.optim.Optimizer | None) -> dict[str, Any]:
    """Restore weights, optimizer and RNG states; returns the stored state (``step`` etc.)."""
    state = read(path)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in state["trainable"].items():
            params[name].copy_(value.to(params[name].device))
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"])
    return state
