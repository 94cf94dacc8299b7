"""Counters kept by the robustness, crash-safety and fuzz tests, printed at the end of the
run (`summary`, called by tests/conftest.py).

The summary says how many bad inputs our server was sent (and the real server, for
reference), how often it crashed or logged an internal error (both must be 0), how many
SIGKILL/restart rounds were run and in how many nothing acknowledged was lost, and how
many inputs the fuzz targets ran.

Rules kept here:
- One process-wide instance, `COUNTS`; tests only add to it.
- `server_crashes` (our server died without being killed by the test) and
  `internal_errors` (a traceback or "internal error" in our server's log) must stay 0:
  every test that sees one also fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest


@dataclass
class Counts:
    bad_inputs: int = 0  # bad messages or byte sequences sent to our server
    bad_inputs_real: int = 0  # the same inputs sent to the real ovsdb-server, for reference
    server_crashes: int = 0
    internal_errors: int = 0
    canary_txns: int = 0  # transactions committed by the bystander client between inputs
    kill_rounds: int = 0  # SIGKILL + restart rounds
    kill_rounds_ok: int = 0  # of those, rounds where every acknowledged transaction survived
    acked_txns: int = 0  # acknowledged transactions checked after a kill
    half_present: int = 0  # transactions found partly applied after a kill (must be 0)
    fuzz_execs: dict[str, int] = field(default_factory=dict)

    def fuzzed(self, target: str, n: int) -> None:
        self.fuzz_execs[target] = self.fuzz_execs.get(target, 0) + n


COUNTS = Counts()


def summary(tr: pytest.TerminalReporter) -> None:
    c = COUNTS
    if not (c.bad_inputs or c.kill_rounds or c.fuzz_execs or c.canary_txns):
        return
    tr.section("robustness counts")
    tr.write_line(f"bad inputs sent to our server:        {c.bad_inputs}"
                  f" (and {c.bad_inputs_real} to the real ovsdb-server)")
    tr.write_line(f"crashes of our server:                {c.server_crashes}")
    tr.write_line(f"internal errors in our server's logs: {c.internal_errors}")
    tr.write_line(f"bystander transactions committed:     {c.canary_txns}")
    tr.write_line(f"kill/restart rounds with nothing lost: {c.kill_rounds_ok} of "
                  f"{c.kill_rounds} ({c.acked_txns} acknowledged transactions checked, "
                  f"{c.half_present} half-present)")
    for target, n in sorted(c.fuzz_execs.items()):
        tr.write_line(f"fuzz inputs run, {target + ':':<25}{n}")
