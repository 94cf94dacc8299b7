"""Giving memory back to the system, as the real server does with glibc's
`malloc_trim()` after a compaction.

A Python server holds freed memory in two places the C server does not: objects kept
alive only by reference cycles (an exception and the frames of a failed request that
quoted a large message) until the cycle collector runs, which our raised thresholds
(gctune) make rare; and the C heap's free pages, which glibc keeps unless trimmed.

Rules kept here:
- `supported()` says whether the C library has `malloc_trim` (glibc); elsewhere
  trimming does nothing and the server's command says it is not supported.
- `trim()` returns the heap's free pages; `give_back()` first collects cycles, then
  trims. Both are for rare moments (after a large message, after a compaction): a full
  collection walks every object the collector tracks.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable

_trim: Callable[[int], int] | None
try:
    _trim = ctypes.CDLL(None).malloc_trim
except (OSError, AttributeError):  # not glibc
    _trim = None


def supported() -> bool:
    return _trim is not None


def trim() -> None:
    if _trim is not None:
        _trim(0)


def give_back() -> None:
    gc.collect()
    trim()
