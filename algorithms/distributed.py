"""Data parallelism with ``torch.distributed``: one process per device, started by ``torchrun``.

Why ``torchrun`` (and not ``accelerate launch``): it ships with torch (no extra dependency or
config file), it is what ``accelerate launch`` runs underneath for multi-GPU jobs anyway, and
its contract is five environment variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``) that this module reads; the same script runs unchanged in one
process (``python experiments/train.py``), on one node (``torchrun --nproc_per_node 8``) and on
several (``torchrun --nnodes 2 --node_rank ... --rdzv_endpoint host:port``). The model wrapping
is plain torch: :class:`~torch.nn.parallel.DistributedDataParallel` or FSDP2
(:func:`torch.distributed.fsdp.fully_shard`), so nothing is hidden in a launcher's plugin.

Exactness. A GRPO loss is a sum over policy tokens divided by a normaliser (tokens, sequences,
or sequences × a constant, see :func:`algorithms.grpo.objective.aggregate`). Each rank divides
its *local* sum by the *global* normaliser (all-reduced before the first backward) and scales
by the world size, because DDP and FSDP average gradients over ranks; the averaged gradient is
then exactly the one-process gradient of the whole batch, with any gradient accumulation.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import torch

from agentworld_gym.errors import ConfigError


class Strategy(StrEnum):
    """How the model is laid out over ranks."""

    ddp = "ddp"
    """Every rank holds the whole model and optimizer; gradients are all-reduced."""
    fsdp = "fsdp"
    """FSDP2: parameters, gradients and optimizer states sharded over ranks (each decoder
    layer its own unit); for models whose training state does not fit one device."""


@dataclass
class DistributedConfig:
    """Data-parallel settings (the Hydra ``distributed`` group); used only when the job runs
    under a launcher with ``WORLD_SIZE > 1``."""

    strategy: Strategy = Strategy.ddp
    """``ddp`` or ``fsdp`` (FSDP2)."""
    backend: str = "auto"
    """Process-group backend: ``auto`` (``nccl`` on CUDA, ``gloo`` on CPU), ``nccl``, ``gloo``."""
    timeout_s: int = 1800
    """Collective timeout; a rank that waits longer (a dead peer) fails instead of hanging."""


@dataclass
class Dist:
    """Where this process sits in the job. ``Dist()`` is the one-process job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    strategy: Strategy = Strategy.ddp

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def device(self) -> torch.device:
        """``cuda:<local_rank>`` when CUDA is there, else the CPU."""
        if torch.cuda.is_available():
            return torch.device("cuda", self.local_rank)
        return torch.device("cpu")

    def shard(self, items: list[Any]) -> list[Any]:
        """This rank's items, round-robin (``items[rank::world_size]``)."""
        return items[self.rank :: self.world_size]

    def all_reduce_sum(self, values: list[float]) -> list[float]:
        """Sum each value over ranks (float64, so counts stay exact)."""
        if not self.enabled:
            return list(values)
        import torch.distributed as dist

        tensor = torch.tensor(values, dtype=torch.float64, device=self._comm_device())
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor.cpu().tolist()

    def all_reduce_max(self, value: int) -> int:
        if not self.enabled:
            return value
        import torch.distributed as dist

        tensor = torch.tensor([value], dtype=torch.int64, device=self._comm_device())
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return int(tensor.item())

    def gather_objects(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order, on every rank."""
        if not self.enabled:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def broadcast_object(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank."""
        if not self.enabled:
            return obj
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def _comm_device(self) -> torch.device:
        import torch.distributed as dist

        return self.device() if dist.get_backend() == "nccl" else torch.device("cpu")


def init(config: DistributedConfig | None = None) -> Dist:
    """Join the job described by the launcher's environment (``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK``), initialising the default process group once; one process without them."""
    config = config or DistributedConfig()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist(strategy=config.strategy)
    import torch.distributed as dist

    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = config.backend
        if backend == "auto":
            backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local)
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=config.timeout_s))
    return Dist(rank, world, local, config.strategy)


def shutdown() -> None:
    """Leave the process group (no-op in one process)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


class LogprobModel(torch.nn.Module):
    """The training forward as one module call, so that DDP and FSDP see it.

    DDP prepares its gradient reduction in ``forward`` and FSDP gathers the root's parameters
    in a forward hook; the GRPO forward (shared prefix, policy positions only) reaches into the
    decoder and the output layer directly, so it runs inside this wrapper's ``forward``.
    """

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, batch: Any, temperature: float = 1.0, with_entropy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        from algorithms.grpo.logprobs import token_logprobs

        return token_logprobs(self.model, batch, temperature, with_entropy=with_entropy)


def wrap(model: Any, dist: Dist) -> torch.nn.Module:
    """The training module: :class:`LogprobModel` around ``model``, under DDP or FSDP2 when
    the job has several ranks. FSDP2 shards ``model`` in place (its parameters become
    ``DTensor`` shards): build the optimizer from the returned module's parameters, and give
    generators a replica (:func:`full_state_dict`)."""
    module = LogprobModel(model)
    if not dist.enabled:
        return module
    if dist.strategy is Strategy.ddp:
        from torch.nn.parallel import DistributedDataParallel

        ids = [dist.local_rank] if torch.cuda.is_available() else None
        return DistributedDataParallel(module, device_ids=ids)
    if dist.strategy is Strategy.fsdp:
        from torch.distributed.fsdp import fully_shard

        _broadcast_from_rank0(model)  # DDP does this itself; FSDP shards what each rank has
        for layer in decoder_layers(model):
            fully_shard(layer)
        fully_shard(module)
        return module
    raise ConfigError(f"distributed.strategy must be ddp or fsdp, got {dist.strategy!r}")


def _broadcast_from_rank0(model: torch.nn.Module) -> None:
    """Every rank starts from rank 0's tensors (e.g. LoRA adapters drawn from each rank's RNG)."""
    import torch.distributed as dist

    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            dist.broadcast(tensor.data, src=0)


def decoder_layers(model: Any) -> list[torch.nn.Module]:
    """The transformer blocks of a (peft-wrapped or plain) causal LM: FSDP's units."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    layers = getattr(base.get_decoder(), "layers", None)
    if layers is None:
        raise ConfigError(
            f"FSDP needs the decoder's blocks at .layers; {type(base).__name__} has none"
        )
    return list(layers)


@contextmanager
def accumulate(module: torch.nn.Module, sync: bool) -> Iterator[None]:
    """Backward passes inside skip the gradient reduction unless ``sync`` (the last
    micro-batch of an optimizer step): DDP's ``no_sync``, FSDP2's gradient-sync switch."""
    if sync:
        yield
        return
    if hasattr(module, "no_sync"):
        with module.no_sync():
            yield
        return
    if hasattr(module, "set_requires_gradient_sync"):
        module.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            module.set_requires_gradient_sync(True)
        return
    yield  # one process: gradients accumulate locally anyway


def _inner(module: torch.nn.Module) -> torch.nn.Module:
    """The model inside a (possibly DDP-wrapped) :class:`LogprobModel`."""
    return getattr(module, "module", module).model


def full_state_dict(module: torch.nn.Module, trainable_only: bool = False) -> dict[str, Any]:
    """The model's whole (unsharded) state on CPU, on every rank, keyed like the unwrapped
    model's ``state_dict``. A collective under FSDP: every rank must call it."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    inner = _inner(module)
    if _is_fsdp(module):
        state = get_model_state_dict(module, options=StateDictOptions(full_state_dict=True))
        state = {k.removeprefix("model."): v for k, v in state.items()}
    else:
        state = dict(inner.state_dict())
    if trainable_only:
        keep = {n for n, p in inner.named_parameters() if p.requires_grad}
        state = {k: v for k, v in state.items() if k in keep}
    return {k: _full(v).detach().cpu() for k, v in state.items()}


def full_optimizer_state(module: torch.nn.Module, optimizer: torch.optim.Optimizer) -> Any:
    """The optimizer's state as one process would hold it (a collective under FSDP)."""
    if not _is_fsdp(module):
        return optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    return get_optimizer_state_dict(
        module, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
    )


def load_full_state(
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None,
    trainable: dict[str, torch.Tensor],
    optimizer_state: Any,
    saved_by_fsdp: bool,
) -> None:
    """Load a checkpoint written by any number of ranks (full, unsharded tensors) into a model
    laid out for this job: N ranks to M ranks, DDP to FSDP and back."""
    inner = _inner(module)
    if not _is_fsdp(module):
        params = dict(inner.named_parameters())
        with torch.no_grad():
            for name, value in trainable.items():
                params[name].copy_(value.to(params[name].device))
        if optimizer is not None and optimizer_state is not None:
            if saved_by_fsdp:
                optimizer_state = _by_index(optimizer_state, inner, optimizer)
            optimizer.load_state_dict(optimizer_state)
        return
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, strict=False)
    set_model_state_dict(module, {f"model.{k}": v for k, v in trainable.items()}, options=options)
    if optimizer is not None and optimizer_state is not None:
        if not saved_by_fsdp:
            optimizer_state = _by_name(optimizer_state, inner)
        set_optimizer_state_dict(module, optimizer, optimizer_state, options=options)


def _trainable_names(model: torch.nn.Module) -> list[str]:
    return [n for n, p in model.named_parameters() if p.requires_grad]


def _by_name(state: dict[str, Any], model: torch.nn.Module) -> dict[str, Any]:
    """A ``torch.optim`` state dict keyed by parameter index → keyed by FQN (FSDP's form)."""
    names = [f"model.{n}" for n in _trainable_names(model)]
    out_state = {names[i]: v for i, v in state["state"].items()}
    groups = [{**g, "params": [names[i] for i in g["params"]]} for g in state["param_groups"]]
    return {"state": out_state, "param_groups": groups}


def _by_index(state: dict[str, Any], model: torch.nn.Module, optimizer: Any) -> dict[str, Any]:
    """FSDP's FQN-keyed optimizer state → ``torch.optim``'s index-keyed form."""
    index = {f"model.{n}": i for i, n in enumerate(_trainable_names(model))}
    out_state = {index[k]: v for k, v in state["state"].items()}
    groups = [{**g, "params": [index[k] for k in g["params"]]} for g in state["param_groups"]]
    return {"state": out_state, "param_groups": groups}


def _is_fsdp(module: torch.nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(module, FSDPModule)


def _full(value: Any) -> Any:
    return value.full_tensor() if hasattr(value, "full_tensor") else value
