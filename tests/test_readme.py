"""The README's examples run as printed: the IDL script, extracted from README.md and
pointed at a temporary Northbound server through `OVN_NB_DB`, commits, prints the
replica, and on a second run reports the failed transaction (exit status 1)."""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

from procs import ServerProcess, run

README = Path(__file__).resolve().parents[1] / "README.md"


def idl_example() -> str:
    text = README.read_text()
    m = re.search(r"### The IDL in a few lines\n.*?```python\n(.*?)```", text, re.S)
    assert m, "README.md has no IDL example"
    return m.group(1)


def test_readme_idl_example_runs(tmp_path: Path, nb_server: ServerProcess) -> None:
    script = tmp_path / "example.py"
    script.write_text(idl_example())
    env = {**os.environ, "OVN_NB_DB": nb_server.unix}
    p = run([sys.executable, str(script)], env=env, timeout=60)
    changes, replica = p.stdout.splitlines()
    assert ast.literal_eval(changes) == {"Logical_Switch": 1, "Logical_Switch_Port": 1}
    assert replica == "sw0 ['p1']"
    # The commit result is checked: a second run's insert of p1 breaks the index on
    # Logical_Switch_Port's name.
    p = run([sys.executable, str(script)], env=env, timeout=60, check=False)
    assert (p.returncode, p.stdout) == (1, "")
    assert p.stderr.startswith("transaction failed: error: ") and \
        "constraint violation" in p.stderr, p.stderr
