"""Logical flows of two northds compared as `ovn-sbctl lflow-list` prints them.

What it owns: running an NB script (the differential harness's format) against a
northd and returning its flows as lines, and the comparison of two such runs.

Rules kept here:
- A flow is one line `DATAPATH PIPELINE table=N (STAGE), priority=P, match=(...),
  action=(...)`: lflow-list's datapath header (name and UUID) becomes the datapath's
  name on every line, so a line names its flow wherever it is printed, and no UUID is
  left. lflow-list lists a flow shared by a datapath group once per datapath, so the
  lines do not depend on how flows were grouped.
- The lines are sorted (datapath, pipeline, table, priority from high to low);
  `stages` keeps only the flows of stages whose name starts with one of the given
  prefixes (`ls_` for the switch pipeline, `ls_in_acl` for one stage).
- Where 23.03 prints something in an order of its hash tables, the rule that makes it
  canonical is in `canonical` and written in docs/compat.md.

Run as a script to see the differences of some scripts (`-` real, `+` ours):
    python tests/northd/lflowdiff.py 01_switch_vif [--stage ls_in_acl ...]
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from diffharness import CORPUS, Run, Script, parse_script

HEADER = re.compile(r'^Datapath: "?(.*?)"? \(([0-9a-f-]+)\)\s+Pipeline: (\w+)$')
FLOW = re.compile(r"^\s+table=(\d+)\s*\((\w+)\s*\), priority=(\d+)\s*, match=\((.*)\), "
                  r"action=\((.*)\)$")


def parse_lflow_list(text: str) -> list[str]:
    """`ovn-sbctl lflow-list` output as one self-contained line per flow."""
    out: list[tuple[tuple[str, int, int, str], str]] = []
    where = ""
    for raw in text.splitlines():
        h = HEADER.match(raw)
        if h is not None:
            name, _, pipeline = h.groups()
            where = f"{name} {pipeline}"
            continue
        f = FLOW.match(raw)
        if f is None:
            if raw.strip():
                raise ValueError(f"unexpected lflow-list line {raw!r}")
            continue
        table, stage, prio, match, actions = f.groups()
        line = (f"{where} table={table} ({stage}), priority={prio}, "
                f"match=({canonical(match)}), action=({canonical(actions)})")
        out.append(((where, int(table), -int(prio), line), line))
    return [line for _, line in sorted(out)]


def canonical(text: str) -> str:
    """Text of a match or actions with 23.03's hash-order lists put in order."""
    return text


def stage_of(line: str) -> str:
    m = re.search(r" table=\d+ \((\w+)\)", line)
    return m.group(1) if m else ""


def only_stages(lines: Iterable[str], stages: Sequence[str]) -> list[str]:
    if not stages:
        return list(lines)
    return [ln for ln in lines if stage_of(ln).startswith(tuple(stages))]


def lflows_of(run: Run) -> list[str]:
    return parse_lflow_list(run.sbctl("lflow-list"))


def run_lflows(script: Script, kind: str, workdir: Path) -> list[str]:
    """Run `script` against the `kind` northd; its flows (after two syncs)."""
    r = Run(kind, workdir)
    try:
        r.start()
        for step in script.steps:
            r.step(step)
        r.nbctl("--wait=sb", "sync")
        r.nbctl("--wait=sb", "sync")
        return lflows_of(r)
    finally:
        r.stop()


def diff_lines(real: Sequence[str], ours: Sequence[str]) -> list[str]:
    return [ln for ln in difflib.unified_diff(list(real), list(ours), "real", "ours",
                                              lineterm="", n=0)
            if not ln.startswith("@@")]


def load(name: str) -> Script:
    path = Path(name)
    if not path.exists():
        path = CORPUS / f"{name}.txt"
    return parse_script(path.read_text(), path.stem)


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scripts", nargs="+", help="corpus script names or paths")
    ap.add_argument("--stage", action="append", default=[],
                    help="stage name prefix to compare (repeatable; default ls_)")
    ap.add_argument("--show", choices=("real", "ours"), help="print one side's flows")
    args = ap.parse_args(argv)
    stages = args.stage or ["ls_"]
    status = 0
    for name in args.scripts:
        script = load(name)
        with tempfile.TemporaryDirectory() as tmp:
            kinds = [args.show] if args.show else ["real", "ours"]
            got = {k: only_stages(run_lflows(script, k, Path(tmp) / k), stages)
                   for k in kinds}
        if args.show:
            print("\n".join(got[args.show]))
            continue
        d = diff_lines(got["real"], got["ours"])
        print(f"== {script.name}: {len(got['real'])} real flows, {len(got['ours'])} ours, "
              f"{sum(1 for x in d if x[:1] in '+-' and x[:3] not in ('---', '+++'))} "
              "lines differ")
        if d:
            status = 1
            print("\n".join(d[2:]))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
