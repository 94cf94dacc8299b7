"""Giving memory back to the system, as the real server does with glibc's
`malloc_trim()` after a compaction.

A Python server holds freed memory in two places the C server does not: objects kept
alive only by reference cycles (an exception and the frames of a failed request that
quoted a large message) until the cycle collector runs, which our raised thresholds
(gctune) make rare; and the C heap's free pages, which glibc keeps unless trimmed.

Rules kept here:
- `supported()` says whether the C library has `malloc_trim` (glibc); elsewhere
  trimming does nothing and the server's command says it is not supported.
- `trim()` returns the heap's free pages; `give_back()` first collects the cycles
  among the younger objects (generations 0 and 1: what a large message just made),
  then trims. A full collection would walk every object the collector tracks, every
  row committed since start-up among them: hundreds of milliseconds on a large
  database, a stall no client should see after each large message.
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
    gc.collect(1)
    trim()
