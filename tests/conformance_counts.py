"""The conformance suite's end-of-run counts and the seed of its random runs, kept
apart from the harness so that the summary can be printed where the tests did not run
(the controller of a pytest-xdist run; see tests/conftest.py).

Rules kept here:
- `STATS` is the one process-wide counter; tests only add to it.
- The random generated runs draw from `random_seed()`: $CONFORMANCE_SEED if set (to
  reproduce a run), else a fresh one per run. Under pytest-xdist the controller sets
  the variable before it starts its workers, so all of them draw from one seed.
"""

from __future__ import annotations

import os
import secrets
from collections import Counter

import pytest

STATS: Counter[str] = Counter()

SEED_VARIABLE = "CONFORMANCE_SEED"
_SEED: list[int] = []


def random_seed() -> int:
    """The seed of the generated tests' random (not derandomized) runs in this process:
    $CONFORMANCE_SEED if set (to reproduce a run), else a fresh one."""
    if not _SEED:
        env = os.environ.get(SEED_VARIABLE, "")
        _SEED.append(int(env) if env else secrets.randbelow(2**32))
    return _SEED[0]


def seed_hint() -> str:
    """How to run the random generated tests again with the same draws."""
    return f"random seed {random_seed()}: rerun with {SEED_VARIABLE}={random_seed()}"


def summary(tr: pytest.TerminalReporter) -> None:
    if not (STATS["corpus cases"] or STATS["generated transactions"]
            or STATS["generated condition steps"]):
        return
    tr.section("conformance against ovsdb-server 3.1")
    tr.write_line(f"corpus cases compared:           {STATS['corpus cases']} of "
                  f"{STATS['corpus size']} ({STATS['corpus steps']} steps)")
    if STATS["recorded cases"]:
        tr.write_line(f"recorded real-client cases:      {STATS['recorded cases']} "
                      f"({STATS['replayed client messages']} client messages replayed)")
    tr.write_line(f"generated transactions compared: {STATS['generated transactions']}")
    tr.write_line(f"generated condition steps:       {STATS['generated condition steps']}")
    tr.write_line(f"differences:                     {STATS['differences']}")
    if STATS["known bug cases"]:
        tr.write_line(f"known bugs (xfail cases):        {STATS['known bug cases']} "
                      f"({STATS['known bug differences']} differences)")
    if STATS["random examples"]:
        tr.write_line(f"random generated examples:       {STATS['random examples']} "
                      f"({seed_hint()})")
    intended = sorted((k[len("intended:"):], v) for k, v in STATS.items()
                      if k.startswith("intended:"))
    tr.write_line(f"intended differences seen:       {sum(v for _, v in intended)}"
                  + "".join(f"\n  {k}: {v}" for k, v in intended))
