"""A text space for LLM environments.

``gymnasium.spaces.Text`` checks every character against a charset: its default rejects real
Unicode, and a full-Unicode charset makes ``check_env`` slow and memory-hungry. ``TextSpace``
accepts any ``str`` (optionally up to ``max_length`` characters), samples short printable
strings, and plugs into Gymnasium's vector utilities like ``Text`` does.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array
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
