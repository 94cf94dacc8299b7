"""Robustness and crash-safety tests: the counts they kept, printed after the run.

The summary says how many bad inputs our server was sent (and the real server, for
reference), how often it crashed or logged an internal error (both must be 0), how many
SIGKILL/restart rounds were run and in how many nothing acknowledged was lost, and how
many inputs the fuzz targets ran.
"""

from __future__ import annotations

import pytest

from robust_counts import COUNTS

pytest.register_assert_rewrite("robust_helpers")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    c = COUNTS
    if not (c.bad_inputs or c.kill_rounds or c.fuzz_execs or c.canary_txns):
        return
    tr = terminalreporter
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
