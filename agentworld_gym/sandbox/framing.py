"""The wire format both sides speak: an 8-byte big-endian length, then JSON.

Requests and replies travel on dedicated pipes, never stdout, so nothing the sandboxed code
prints can corrupt the protocol.
"""

from __future__ import annotations

import json
import os
import re
import struct
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; json is the fallback
    orjson = None

_HEADER = struct.Struct("!Q")
_REPLY_SLACK = 1024 * 1024  # room for stdout, traceback and metadata beside the value


def _dumps(obj: Any) -> bytes:
    if orjson is not None:
        try:
            return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # big ints, exotic keys: json's semantics decide
            pass
    return _json(obj)


def _json(obj: Any) -> bytes:
    """The child's encoder: under a tight RLIMIT_AS json raises MemoryError where orjson aborts."""
    return json.dumps(obj, separators=(",", ":")).encode()


_LONG_NUMBER = re.compile(rb"\d{19}")


def _loads(data: bytes) -> Any:
    if orjson is not None and not _LONG_NUMBER.search(data):  # orjson turns big ints to floats
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:  # NaN and Infinity: let json decide
            pass
    return json.loads(data)


def _frame(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload)) + payload


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int) -> bytes | None:
    head = _read_exact(fd, _HEADER.size)
    return None if head is None else _read_exact(fd, _HEADER.unpack(head)[0])


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
