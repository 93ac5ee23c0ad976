"""A text space for LLM environments.

``gymnasium.spaces.Text`` checks every character against a charset: its default rejects real
Unicode, and a full-Unicode charset makes ``check_env`` slow and memory-hungry. ``TextSpace``
accepts any ``str`` (optionally up to ``max_length`` characters), samples short printable
strings, and plugs into Gymnasium's vector utilities like ``Text`` does.
"""

from __future__ import annotations

import multiprocessing
import string
from collections.abc import Sequence as SequenceABC
from typing import Any

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector.utils import (
    batch_space,
    concatenate,
    create_empty_array,
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)
from gymnasium.vector.utils.space_utils import batch_differing_spaces

_ALPHABET = np.array(list(string.ascii_letters + string.digits + " .,"))


class TextSpace(Space[str]):
    """Any Python ``str`` up to ``max_length`` characters (``None``: no cap).

    >>> space = TextSpace(max_length=10, seed=0)
    >>> space.contains("héllo ✓"), space.contains("x" * 11), space.contains(3)
    (True, False, False)
    """

    def __init__(
        self, max_length: int | None = None, seed: int | np.random.Generator | None = None
    ):
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random short alphanumeric string (a valid action: the env reads it as an answer)."""
        upper = 32 if self.max_length is None else min(32, self.max_length)
        length = int(self.np_random.integers(1, upper + 1)) if upper > 0 else 0
        return "".join(self.np_random.choice(_ALPHABET, size=length))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and (self.max_length is None or len(x) <= self.max_length)

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash(("TextSpace", self.max_length))

    def to_jsonable(self, sample_n: Any) -> list[str]:
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        return list(sample_n)


# Batched like Gymnasium's own Text: a Tuple of per-env spaces, tuples of strings as data
# (no `iterate` registration: a Tuple of unregistered spaces iterates its items directly).
batch_space.register(TextSpace)(batch_space.dispatch(Space))
batch_differing_spaces.register(TextSpace)(batch_differing_spaces.dispatch(Space))
concatenate.register(TextSpace)(concatenate.dispatch(Space))


@create_empty_array.register(TextSpace)
def _create_empty_text(space: TextSpace, n: int = 1, fn: Any = np.zeros) -> tuple[str, ...]:
    return tuple("" for _ in range(n))


# AsyncVectorEnv's default ``shared_memory=True``: text has no fixed size, so the "shared
# memory" of a batch of strings is a list held by a multiprocessing manager (each step sends
# the strings once through it). ``gym.make_vec(id, n, vectorization_mode="async")`` then works
# as it does for numeric spaces; ``shared_memory=False`` (what ``agentworld_gym.make_vec``
# passes) skips the manager and sends observations through the worker pipes instead.
@create_shared_memory.register(TextSpace)
def _create_text_shared_memory(space: TextSpace, n: int = 1, ctx: Any = multiprocessing) -> Any:
    manager = ctx.Manager()
    shared = manager.list([""] * n)
    shared._agentworld_manager = manager  # the manager process lives as long as the list
    return shared


class SharedTexts(SequenceABC):
    """The batch of strings in a manager list, read live (as numeric shared memory is read
    through a NumPy view): AsyncVectorEnv reads its observation buffer once and then copies
    it each step, and a copy (``copy.deepcopy``, ``tuple(...)``) is the strings of now."""

    def __init__(self, shared: Any, n: int) -> None:
        self._shared, self._n = shared, n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self._shared[: self._n])[index]
        if not -self._n <= index < self._n:
            raise IndexError("observation index out of range")
        return self._shared[index % self._n]

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self._shared[: self._n])

    def __eq__(self, other: object) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, SequenceABC) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@read_from_shared_memory.register(TextSpace)
def _read_text_from_shared_memory(space: TextSpace, shared: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(shared, n)


@write_to_shared_memory.register(TextSpace)
def _write_text_to_shared_memory(space: TextSpace, index: int, value: str, shared: Any) -> None:
    shared[index] = value
