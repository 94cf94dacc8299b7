"""Counters kept by the robustness, crash-safety and fuzz tests, printed at the end of the
run by `tests/robustness/conftest.py`.

Rules kept here:
- One process-wide instance, `COUNTS`; tests only add to it.
- `server_crashes` (our server died without being killed by the test) and
  `internal_errors` (a traceback or "internal error" in our server's log) must stay 0:
  every test that sees one also fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
