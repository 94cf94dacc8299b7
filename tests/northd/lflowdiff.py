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
- No UUID is left in a match or actions either: one that names an NB row (a load
  balancer in `trigger_event`) becomes that row's label (`@nb.Load_Balancer(lb0)`).
- Where 23.03 prints something in an order of its hash tables, the rule that makes it
  canonical is in `canonical` (for now one: the MAC set of the self-originated ARP/ND
  flood flow) and written in docs/compat.md.
- `ovn-trace` output is compared after `canonical_trace` (no flow UUIDs or sources),
  switch and router pipelines end to end.
- `Outcomes` runs a script once per northd per process, for every module comparing it.

Run as a script to see the differences of some scripts (`-` real, `+` ours):
    python tests/northd/lflowdiff.py 01_switch_vif [--stage ls_in_acl ...] [--traces]
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diffharness import CORPUS, Run, Script, nb_table_names, parse_script, run_script
from normalize import (
    SB_OWNED,
    SB_WITH_FLOWS,
    UUID_RE,
    Snapshot,
    hash_ordered_sorted,
    nb_labels,
)
from traces import TRACES, Probe

HEADER = re.compile(r'^Datapath: "?(.*?)"? \(([0-9a-f-]+)\)\s+Pipeline: (\w+)$')
FLOW = re.compile(r"^\s+table=(\d+)\s*\((\w+)\s*\), priority=(\d+)\s*, match=\((.*)\), "
                  r"action=\((.*)\)$")


def parse_lflow_list(text: str, labels: Mapping[str, str] | None = None) -> list[str]:
    """`ovn-sbctl lflow-list` output as one self-contained line per flow; a UUID in a
    match or actions becomes the label of the NB row it names (`labels`)."""
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
                f"match=({canonical(match, labels)}), action=({canonical(actions, labels)})")
        out.append(((where, int(table), -int(prio), line), line))
    return [line for _, line in sorted(out)]


def canonical(text: str, labels: Mapping[str, str] | None = None) -> str:
    """Text of a match or actions (or a trace) made comparable: its UUIDs named
    (`<uuid>` if `labels` does not know them) and the one list 23.03 prints in hash
    order, an `eth.src == {...}` set, sorted (two real runs of every corpus script
    agree on everything else)."""
    text = hash_ordered_sorted(text)
    if labels is None or not UUID_RE.search(text):
        return text
    return UUID_RE.sub(lambda m: labels.get(m.group(0), "<uuid>"), text)


def stage_of(line: str) -> str:
    m = re.search(r" table=\d+ \((\w+)\)", line)
    return m.group(1) if m else ""


def only_stages(lines: Iterable[str], stages: Sequence[str]) -> list[str]:
    if not stages:
        return list(lines)
    return [ln for ln in lines if stage_of(ln).startswith(tuple(stages))]


def lflows_of(run: Run, labels: Mapping[str, str] | None = None) -> list[str]:
    """The run's flows as lines; `labels` names NB UUIDs (read from the NB if not given)."""
    if labels is None:
        labels = labels_of(run)
    return parse_lflow_list(run.sbctl("lflow-list"), labels)


def labels_of(run: Run) -> dict[str, str]:
    return nb_labels(run.dump("NB", nb_table_names()))


def run_lflows(script: Script, kind: str, workdir: Path,
               probes: Sequence[Probe] = ()) -> tuple[list[str], list[Trace]]:
    """Run `script` against the `kind` northd; its flows (after two syncs) and the
    traces of `probes`."""
    r = Run(kind, workdir)
    try:
        r.start()
        for step in script.steps:
            r.step(step)
        r.nbctl("--wait=sb", "sync")
        r.nbctl("--wait=sb", "sync")
        labels = labels_of(r)
        flows = lflows_of(r, labels)
        return flows, traces_of(r, probes, flows, labels)
    finally:
        r.stop()


# -- ovn-trace ----------------------------------------------------------------------

TRACE_TIMEOUT = 30
# `12. ls_in_acl (northd.c:6789): ip4, priority 2002, uuid 0123abcd`
TRACE_FLOW = re.compile(r"^(\s*)(\d+)\. (\w+)(?: \([^()]*\))?: (.*), priority (\d+), "
                        r"uuid [0-9a-f]{8}$")
TRACE_PIPELINE = re.compile(r'^(ingress|egress|multicast)\(dp="([^"]*)"(?:, inport="([^"]*)")?')
TRACE_LOG_PREFIX = re.compile(r"^\S+\|\d+\|", re.M)  # a log line's time and sequence
LINE = re.compile(r"^(\S+) (\w+) table=(\d+) \((\w+)\), priority=(\d+), "
                  r"match=\((.*)\), action=\((.*)\)$")
ROUTER_CUT = "[router pipeline: not compared]"

FlowIndex = dict[tuple[str, str, int, int], dict[str, str]]


@dataclass(frozen=True)
class Trace:
    probe: str
    text: str  # canonical (`canonical_trace`), or the error ovn-trace printed
    ok: bool = True


def flow_index(lines: Iterable[str]) -> FlowIndex:
    """(datapath, pipeline, table, priority) -> {match: actions}, from lflow lines."""
    out: FlowIndex = {}
    for line in lines:
        m = LINE.match(line)
        if m is not None:
            dp, pipeline, table, _, prio, match, actions = m.groups()
            out.setdefault((dp, pipeline, int(table), int(prio)), {})[match] = actions
    return out


def trace_of(run: Run, probe: Probe, routers: frozenset[str], flows: FlowIndex,
             labels: Mapping[str, str]) -> Trace:
    assert run.sb is not None
    cmd = ["ovn-trace", f"--db={run.sb.unix}", *probe.args()]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TRACE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return Trace(probe.name, "ovn-trace timed out", ok=False)
    if p.returncode != 0:
        err = TRACE_LOG_PREFIX.sub("", p.stderr.strip())
        return Trace(probe.name, f"ovn-trace exited {p.returncode}: {err}", ok=False)
    return Trace(probe.name, canonical_trace(canonical(p.stdout, labels), routers, flows))


def traces_of(run: Run, probes: Sequence[Probe], lflows: Sequence[str],
              labels: Mapping[str, str]) -> list[Trace]:
    if not probes:
        return []
    flows = flow_index(lflows)
    # Router pipelines are compared end to end (no router's section is cut).
    return [trace_of(run, p, frozenset(), flows, labels) for p in probes]


def canonical_trace(text: str, routers: frozenset[str] = frozenset(),
                    flows: FlowIndex | None = None) -> str:
    """A detailed `ovn-trace` without what names a run rather than a flow.

    - Each flow line loses its `uuid` prefix and its `source` (a C file and line in
      23.03, a module of ours); blank lines go. (The caller names the NB UUIDs the
      trace prints, as `canonical` does for lflow-list.)
    - ovn-trace tries the flows of one table and priority in the order it read them
      (the IDL's hash order), so where several such flows match a packet either may be
      printed. A matched flow that has siblings (same datapath, pipeline, table and
      priority) with the same actions prints the sorted matches of all of them
      (`flows`, the run's lflow-list lines): the packet goes on the same way whichever
      of them matched.
    - What happens inside a router datapath is not compared (the switch pipeline is): a
      router's pipeline section becomes one line marked `ROUTER_CUT`, and the lines it
      leads to are dropped up to the next line of the enclosing section or the next
      sibling of a multicast fan-out (an egress section of the same datapath and inport
      as the one that led into the router)."""
    out: list[str] = []
    last_egress: dict[int, tuple[str, str]] = {}
    cut: tuple[int, tuple[str, str] | None] | None = None
    sections: list[tuple[int, str, str]] = []  # (indent, datapath, pipeline)
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line:
            continue
        indent = len(line) - len(line.lstrip())
        head = TRACE_PIPELINE.match(line.lstrip())
        if cut is not None:
            at, resume = cut
            sibling = (head is not None and head.group(1) == "egress" and indent == at
                       and (head.group(2), head.group(3) or "") == resume)
            if indent >= at and not sibling:
                continue
            cut = None
        if head is not None:
            kind, dp, inport = head.group(1), head.group(2), head.group(3) or ""
            if dp in routers:
                out.append(f"{line} {ROUTER_CUT}")
                cut = (indent, last_egress.get(indent))
                continue
            while sections and sections[-1][0] >= indent:
                sections.pop()
            sections.append((indent, dp, kind))
            if kind == "egress":
                last_egress[indent] = (dp, inport)
            out.append(line)
            continue
        flow = TRACE_FLOW.match(line)
        if flow is None:
            out.append(line)
            continue
        lead, table, stage, match, prio = flow.groups()
        owner = [s for s in sections if s[0] <= len(lead)]
        if owner and flows is not None:
            _, dp, pipeline = owner[-1]
            peers = flows.get((dp, pipeline, int(table), int(prio)), {})
            actions = peers.get(match)
            same = sorted(m for m, a in peers.items() if a == actions)
            if actions is not None and len(same) > 1:
                match = "one of " + " | ".join(f"({m})" for m in same)
        out.append(f"{lead}{table}. {stage}: {match}, priority {prio}")
    return "\n".join(out)


# -- one run, everything it is compared by ----------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one run of a script gives: the normalized rows, `lflow-list` as lines (see
    `parse_lflow_list`) and the traces of its probes."""

    snapshot: Snapshot
    lflows: tuple[str, ...]
    traces: tuple[Trace, ...] = ()


def run_outcome(script: Script, kind: str, workdir: Path, *,
                sb_tables: Sequence[str] = SB_OWNED,
                probes: Sequence[Probe] = ()) -> Outcome:
    """Run `script` against the `kind` northd once; rows, flows and traces of that run."""
    got: dict[str, Any] = {}

    def at_end(run: Run) -> None:
        labels = labels_of(run)
        got["lflows"] = tuple(lflows_of(run, labels))
        got["traces"] = tuple(traces_of(run, probes, got["lflows"], labels))

    snap = run_script(script, kind, workdir, sb_tables=sb_tables, at_end=at_end)
    return Outcome(snap, got["lflows"], got["traces"])


class Outcomes:
    """The outcome of (script, kind) computed once per process and shared by every test
    module that compares it (`kind` is `real`, `ours`, or `real#2` for a second real
    run); a failed run is kept and raised again to every caller."""

    def __init__(self) -> None:
        self.done: dict[tuple[str, str], Outcome | BaseException] = {}

    def get(self, script: Script, kind: str, workdir: Callable[[], Path], *,
            sb_tables: Sequence[str], probes: Sequence[Probe]) -> Outcome:
        key = (script.name, kind)
        if key not in self.done:
            try:
                self.done[key] = run_outcome(script, kind.split("#")[0], workdir(),
                                             sb_tables=sb_tables, probes=probes)
            except Exception as e:
                self.done[key] = e
        got = self.done[key]
        if isinstance(got, BaseException):
            raise got
        return got

    def runner(self, scripts: Mapping[str, Script], mktemp: Callable[[str], Path]
               ) -> Callable[[str, str], Outcome]:
        """`get` as the corpus tests call it: a script by name, every SB table with the
        flows, the script's probes, a fresh directory from `mktemp`. One definition, so
        every module asks for the same outcome under the same key."""
        def get(name: str, kind: str) -> Outcome:
            return self.get(scripts[name], kind, lambda: mktemp(f"{name}-{kind}"),
                            sb_tables=SB_WITH_FLOWS, probes=TRACES.get(name, ()))

        return get

    def finished(self, kind: str) -> list[Outcome]:
        return [v for (_, k), v in self.done.items() if k == kind and isinstance(v, Outcome)]


OUTCOMES = Outcomes()


def diff_lines(real: Sequence[str], ours: Sequence[str]) -> list[str]:
    return [ln for ln in difflib.unified_diff(list(real), list(ours), "real", "ours",
                                              lineterm="", n=0)
            if not ln.startswith("@@")]


def load(name: str) -> Script:
    path = Path(name)
    if not path.exists():
        path = CORPUS / f"{name}.txt"
    return parse_script(path.read_text(), path.stem)


def trace_diff(real: Sequence[Trace], ours: Sequence[Trace]) -> list[str]:
    """The probes whose traces differ, each with its diff (`-` real, `+` ours)."""
    out: list[str] = []
    for a, b in zip(real, ours, strict=True):
        if a.text != b.text:
            out.append(f"-- probe {a.probe}")
            out += diff_lines(a.text.splitlines(), b.text.splitlines())[2:]
    return out


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scripts", nargs="+", help="corpus script names or paths")
    ap.add_argument("--stage", action="append", default=[],
                    help="stage name prefix to compare (repeatable; default ls_ and lr_)")
    ap.add_argument("--show", choices=("real", "ours"), help="print one side's flows")
    ap.add_argument("--traces", action="store_true",
                    help="also compare the traces of the script's probes (traces.py)")
    args = ap.parse_args(argv)
    stages = args.stage or ["ls_", "lr_"]
    status = 0
    for name in args.scripts:
        script = load(name)
        probes = TRACES.get(script.name, ()) if args.traces else ()
        with tempfile.TemporaryDirectory() as tmp:
            kinds = [args.show] if args.show else ["real", "ours"]
            runs = {k: run_lflows(script, k, Path(tmp) / k, probes) for k in kinds}
        got = {k: only_stages(flows, stages) for k, (flows, _) in runs.items()}
        if args.show:
            print("\n".join(got[args.show]))
            for t in runs[args.show][1]:
                print(f"-- probe {t.probe}\n{t.text}")
            continue
        d = diff_lines(got["real"], got["ours"])
        print(f"== {script.name}: {len(got['real'])} real flows, {len(got['ours'])} ours, "
              f"{sum(1 for x in d if x[:1] in '+-' and x[:3] not in ('---', '+++'))} "
              "lines differ")
        if d:
            status = 1
            print("\n".join(d[2:]))
        if probes:
            td = trace_diff(runs["real"][1], runs["ours"][1])
            print(f"== {script.name}: {len(probes)} probes, "
                  f"{sum(1 for x in td if x.startswith('-- probe'))} traces differ")
            if td:
                status = 1
                print("\n".join(td))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
