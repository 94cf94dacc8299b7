"""Property: northd run incrementally equals northd recomputed from scratch.

A random sequence of NB changes (switches, every port type, routers and their ports,
gateway chassis, HA groups, NAT, ACLs, load balancers and groups, port groups, address
sets, DNS, meters, NB_Global options and nb_cfg), of the SB writes ovn-controller makes
(chassis registration and removal, claims, `up`, nb_cfg echoes, IGMP joins, MAC
bindings and FDB entries learned), of writes behind northd's back (its rows destroyed,
tunnel keys moved) and of failed SB commits is applied to in-memory NB and SB
databases, from one of two starting topologies. After each step (or a batch of steps,
as the daemon's accumulation merges several transactions into one run) northd's graph
runs as the daemon drives it: the pending changesets in, the SB and NB operations out
and committed, those commits fed back as the next run's changes until a run commits
nothing, and after a failed SB commit a forced recompute. Then a graph built from
scratch runs once on the same content, and:

- every node's desired state (`northd`'s SB and NB tables, `sync_from_sb`'s `up` and
  `ref_chassis`, `sync_cfg`'s handshake) equals the incremental graph's, compared
  with UUIDs replaced by the names of the rows they point to (the handshake columns
  `sync_to_sb` lays over `northd`'s singletons are compared as `sync_cfg`'s);
- the fresh graph plans no SB and no NB operation: the databases the incremental
  graph left behind are what a recompute would write (OVN's
  CHECK_NO_CHANGE_AFTER_RECOMPUTE, after every step instead of at chosen points);
- the incremental runs converge (a bounded number of runs commits nothing more) and
  the server accepts every transaction northd sends.

Where the nodes' modules promise incrementality, the engine stats of a step run alone say so:
a claim, a release or an `up` change (of a binding without QoS) and the nb_cfg
handshake (NB `nb_cfg`, a chassis reporting it) never recompute `northd`, nor
`sync_from_sb` unless some HA group has several chassis (its `ref_chassis` follows
every claim); a MAC binding or FDB entry learned, or a Multicast_Group destroyed while
there are no IGMP groups, does not recompute `northd`; an `lsp-add` of an ordinary
port recomputes `northd` at most once. Separate tests: a tour that applies every step
kind; builders read only the SB tables `northd` declares; the shrunk failures the
property found; the checks fail on handlers that swallow a change and on handlers
that give up where their modules promise they do not.

Deterministic: hypothesis is derandomized, the databases' UUIDs are seeded and the
engine's clock is fixed. `PYOVSDB_PROPERTY_EXAMPLES` raises the example count for long
runs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from nbgen import BASES, Applier, Step, find, steps

from pyovsdb.engine import Handled
from pyovsdb.idl.replica import ReplicaTable
from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.build.ha_chassis import with_ref_chassis
from pyovsdb.northd.desired import DesiredDb, DesiredTable, Ref
from pyovsdb.northd.driver import RunOutput
from pyovsdb.northd.nodes import northd as northd_node
from pyovsdb.northd.nodes.northd import NorthdNode
from pyovsdb.northd.nodes.northd_global import CFG_COLUMNS
from pyovsdb.northd.nodes.northd_sb import QOS_OPTIONS
from pyovsdb.northd.nodes.sync_from_sb import SyncFromSbNode
from pyovsdb.northd.nodes.tables import UndeclaredTable
from pyovsdb.northd.testing import LocalDb, LocalNorthd
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA

EXAMPLES = int(os.environ.get("PYOVSDB_PROPERTY_EXAMPLES", "200"))
MAX_RUNS = 8
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _schema(path: str) -> dict[str, Any]:
    with open(path) as f:
        return dict(json.load(f))


NB_JSON = _schema(NB_SCHEMA)
SB_JSON = _schema(SB_SCHEMA)
# Step kinds left out of the random sequences (and the tour) while a bug they hit is
# open; none now.
EXCLUDED: frozenset[str] = frozenset()
# Columns of `northd`'s singletons that `sync_to_sb` lays `sync_cfg`'s handshake over:
# `northd` keeps whatever it computed last (it does not recompute for them).
OVERLAID = {"NB_Global": CFG_COLUMNS, "SB_Global": frozenset(("nb_cfg",))}
NODES = ("northd", "sync_from_sb", "sync_cfg", "sync_to_sb")


# -- the incremental world ------------------------------------------------------------


@dataclass
class Batch:
    """What one batch of steps did: their descriptions and the engine's counts."""

    steps: list[Step] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    runs: int = 0
    recomputes: dict[str, int] = field(default_factory=dict)


class World:
    """NB and SB in memory with one northd graph driven as the daemon drives it."""

    def __init__(self, base: tuple[Step, ...] = ()) -> None:
        self.nb = LocalDb(NB_JSON)
        self.sb = LocalDb(SB_JSON)
        self.northd = LocalNorthd(self.nb, self.sb, now_ms=0, step_ms=1000)
        self.driver = self.northd.driver
        self.lost = 0  # SB commits lost so far
        self.applier = Applier(self.nb, self.sb, self.northd.nb_changed,
                               self.northd.sb_changed, lambda: self.northd.now_ms)
        self.northd.nb_changed(self.nb.transact([{"op": "insert", "table": "NB_Global",
                                                  "row": {}}]))
        self.settle()
        for step in base:
            assert self.applier.apply(step), f"base step {step} did nothing"
            self.settle()

    def counts(self) -> dict[str, int]:
        engine = self.driver.engine
        if engine is None:
            return {}
        return {n: engine.stats[n].recompute for n in NODES if n in engine.stats}

    def run_once(self) -> tuple[RunOutput, bool]:
        """One engine run and its commits; whether it committed or wants another run.
        A commit the applier was told to lose fails as the daemon sees it: nothing of
        it happened, its cfg is not reported, and the next run recomputes."""
        lose = self.applier.lose_commit
        step = self.northd.run_once(lose_sb_commit=lose)
        if lose and step.out.sb_ops:
            self.applier.lose_commit = False
            self.lost += 1
        return step.out, step.again

    def settle(self) -> int:
        """Run until a run commits nothing; the number of runs."""
        last: list[str] = []
        for n in range(1, MAX_RUNS + 1):
            out, busy = self.run_once()
            if not busy:
                return n
            labels = Labels(self.nb.tables, self.sb.tables)
            last = [f"SB {_op(labels, op)}" for op in out.sb_ops]
            last += [f"NB {_op(labels, op)}" for op in out.nb_ops]
        raise AssertionError("\n".join([f"northd still commits after {MAX_RUNS} runs; "
                                         "the last run:", *last]))

    def play(self, batch: Batch) -> None:
        before = self.counts()
        lost = self.lost
        for step in batch.steps:
            text = self.applier.apply(step)
            batch.texts.append(text or f"({step.kind} skipped)")
        batch.runs = self.settle()
        after = self.counts()
        batch.recomputes = {n: after.get(n, 0) - before.get(n, 0) for n in after}
        if self.lost != lost:
            batch.texts.append("(an SB commit failed)")


def batches(seq: list[Step]) -> list[list[Step]]:
    out: list[list[Step]] = [[]]
    for step in seq:
        out[-1].append(step)
        if not step.batch:
            out.append([])
    return [b for b in out if b]


# -- comparing with a recompute ---------------------------------------------------------


class Labels:
    """Names for UUIDs: every NB and SB row by its database, table and name (with its
    UUID's rank in the table where the name is not unique or empty), so a diff reads
    without UUIDs and two rows never share a label. The two in-memory databases hand
    out the same UUIDs, so a row is labelled from its own table, and a UUID inside a
    string (SB `external_ids` naming NB rows) from NB first."""

    def __init__(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable]) -> None:
        self.by_db: dict[str, dict[str, str]] = {"nb": {}, "sb": {}}
        self.by_row: dict[tuple[int, str], str] = {}
        for db, tables in (("nb", nb), ("sb", sb)):
            for tname in sorted(tables):
                table = tables[tname]
                idents = {u: next((str(getattr(r, c)) for c in ("name", "logical_port")
                                   if c in r.data and getattr(r, c)), "")
                          for u, r in table.rows.items()}
                counts: dict[str, int] = {}
                for ident in idents.values():
                    counts[ident] = counts.get(ident, 0) + 1
                for rank, uuid in enumerate(sorted(table.rows)):
                    ident = idents[uuid]
                    if not ident or counts[ident] > 1:
                        ident = f"{ident}#{rank}"
                    label = f"{db}.{tname}({ident})"
                    self.by_db[db][uuid] = label
                    self.by_row[(id(table), uuid)] = label

    def sub(self, text: str) -> str:
        def one(m: re.Match[str]) -> str:
            u = m.group(0)
            return self.by_db["nb"].get(u) or self.by_db["sb"].get(u, "<uuid>")
        return UUID_RE.sub(one, text)

    def row(self, row: IdlRow) -> str:
        """A row's label, found through its table (a row no longer in the replica is
        labelled as a UUID in a string would be)."""
        label = self.by_row.get((id(row.table), row.uuid))
        return label if label is not None else self.sub(row.uuid)

    def plain(self, v: Any) -> Any:
        """`v` as comparable, printable data: rows and refs named, sets sorted."""
        if isinstance(v, IdlRow):
            return self.row(v)
        if isinstance(v, Ref):
            return f"@{v.table}({self.plain(v.key)})"
        if isinstance(v, str):
            return self.sub(v)
        if isinstance(v, dict):
            return {str(self.plain(k)): self.plain(x) for k, x in sorted(
                v.items(), key=lambda kv: repr(self.plain(kv[0])))}
        if isinstance(v, tuple):
            return tuple(self.plain(x) for x in v)
        if isinstance(v, list | set | frozenset):
            return sorted((self.plain(x) for x in v), key=repr)
        return v

    def table(self, t: DesiredTable | None, masked: frozenset[str] = frozenset()
              ) -> dict[str, Any]:
        if t is None:
            return {}
        rows = {str(self.plain(k)): self.plain({c: v for c, v in r.items() if c not in masked})
                for k, r in t.rows.items()}
        return {"columns": sorted(t.columns), "owned": t.owned, "fill": sorted(t.fill),
                "rows": dict(sorted(rows.items()))}

    def db(self, d: DesiredDb) -> dict[str, Any]:
        """Every table but the not-owned ones with no rows (they ask for nothing)."""
        return {name: self.table(t, OVERLAID.get(name, frozenset()))
                for name, t in sorted(d.tables.items()) if t.owned or t.rows}


def _diff(what: str, inc: Any, fresh: Any, out: list[str]) -> None:
    """Lines naming where `inc` and `fresh` (nested dicts) differ."""
    if inc == fresh:
        return
    if isinstance(inc, dict) and isinstance(fresh, dict):
        for k in sorted(set(inc) | set(fresh), key=repr):
            if k not in inc:
                out.append(f"{what}[{k}]: only in the recompute: {fresh[k]}")
            elif k not in fresh:
                out.append(f"{what}[{k}]: only incremental: {inc[k]}")
            else:
                _diff(f"{what}[{k}]", inc[k], fresh[k], out)
        return
    out.append(f"{what}: incremental {inc!r} != recompute {fresh!r}")


def _feedback(labels: Labels, data: Any) -> dict[str, Any]:
    return {"up": labels.plain(data.up), "ha_groups": labels.table(data.ha_groups)}


def _fields(data: Any) -> dict[str, Any]:
    """A dataclass's fields (the handshake's), or nothing for None."""
    return {} if data is None else {f.name: getattr(data, f.name) for f in fields(data)}


def _op(labels: Labels, op: Any) -> str:
    values = getattr(op, "values", None)
    row = getattr(op, "row", None)
    key = getattr(op, "key", None) if row is None else labels.plain(row)
    return f"{type(op).__name__} {op.table} {labels.plain(key)} {labels.plain(values or {})}"


def recompute_differences(world: World) -> list[str]:
    """Where the incremental graph differs from a graph built from scratch on the same
    databases (empty: none)."""
    inc = world.driver.engine
    assert inc is not None
    fresh, out = world.northd.fresh()
    assert fresh.engine is not None
    labels = Labels(world.nb.tables, world.sb.tables)
    lines: list[str] = []
    a, b = inc.node_data("northd"), fresh.engine.node_data("northd")
    _diff("northd.sb", labels.db(a.sb), labels.db(b.sb), lines)
    _diff("northd.nb", labels.db(a.nb), labels.db(b.nb), lines)
    _diff("sync_from_sb", _feedback(labels, inc.node_data("sync_from_sb")),
          _feedback(labels, fresh.engine.node_data("sync_from_sb")), lines)
    _diff("sync_cfg", _fields(inc.node_data("sync_cfg")),
          _fields(fresh.engine.node_data("sync_cfg")), lines)
    # (what partial rebuilds read of the walk: the ports without a binding, and each
    # switch's router ports in walk order)
    _diff("northd.ports.unbound", sorted(a.core.ports.unbound), sorted(b.core.ports.unbound),
          lines)
    _diff("northd.ports.named_by", {k: sorted(v) for k, v in a.core.ports.named_by.items()},
          {k: sorted(v) for k, v in b.core.ports.named_by.items()}, lines)
    _diff("northd.ports.router_ports",
          {labels.sub(k): [p.name for p in v] for k, v in a.core.ports.router_ports.items()},
          {labels.sub(k): [p.name for p in v] for k, v in b.core.ports.router_ports.items()},
          lines)
    lines += [f"recompute would write SB: {_op(labels, op)}" for op in out.sb_ops]
    lines += [f"recompute would write NB: {_op(labels, op)}" for op in out.nb_ops]
    return lines


# -- the stats the nodes promise ----------------------------------------------------------


def _lsp(world: World, name: str) -> IdlRow | None:
    uuid = find(world.nb, "Logical_Switch_Port", name)
    return None if uuid is None else world.nb.tables["Logical_Switch_Port"].rows[uuid]


def _multi_chassis_groups(world: World) -> bool:
    data = world.driver.engine.node_data("sync_from_sb") if world.driver.engine else None
    groups = getattr(data, "ha_groups", None)
    return groups is not None and with_ref_chassis(groups)


def promised(world: World, step: Step, text: str) -> dict[str, int]:
    """The most recomputes the nodes promise for `step` run alone (node -> count);
    none for a step that did nothing."""
    if text.endswith("skipped)") or " refused" in text or "commit fail" in text:
        return {}
    if step.kind in ("nb-cfg", "cp-cfg"):
        return {"northd": 0, "sync_from_sb": 0}
    if step.kind in ("claim", "release", "set-up"):
        # Any binding (switch port, router port, chassisredirect) without a QoS queue.
        name = world.applier.last_port
        lsp = _lsp(world, name) if name is not None else None
        if lsp is not None and any(k in lsp.options for k in QOS_OPTIONS):
            return {}
        pb = find(world.sb, "Port_Binding", name, "logical_port")
        if pb is None or "qdisc_queue_id" in world.sb.tables["Port_Binding"].rows[pb].options:
            return {}
        return {"northd": 0} if _multi_chassis_groups(world) else {"northd": 0,
                                                                    "sync_from_sb": 0}
    if step.kind in ("mac-learn", "fdb-learn"):
        return {"northd": 0}  # learned for a live port
    if step.kind == "sb-delete" and step.args[0] == "Multicast_Group" \
            and not world.sb.tables["IGMP_Group"].rows:
        return {"northd": 0}  # read only while IGMP groups exist; sync puts it back
    if step.kind == "lsp-add":
        _sw, _port, type_, addr, _psec, opts = step.args
        if type_ in (0, 1) and addr in (2, 3) and opts == 0:
            return {"northd": 1}
    return {}


# -- running a sequence -----------------------------------------------------------------


def play(seq: list[Step], *, check_stats: bool = True, base: tuple[Step, ...] = ()
         ) -> World:
    """Play `seq` batch by batch after `base`, checking after each; a failure shows
    every batch so far as a script."""
    world = World(base)
    history: list[str] = []
    for n, steps_ in enumerate(batches(seq)):
        batch = Batch(steps=steps_)
        try:
            world.play(batch)
        except AssertionError as e:
            raise AssertionError("\n".join(["", *history, f"  batch {n}: "
                                             f"{'; '.join(batch.texts)}", str(e)])) from None
        history.append(f"  batch {n}: {'; '.join(batch.texts)} -> {batch.runs} runs, "
                       f"recomputes {batch.recomputes}")
        diffs = recompute_differences(world)
        assert not diffs, "\n".join(["", *history, "differences:", *diffs])
        if check_stats and len(steps_) == 1:
            want = promised(world, steps_[0], " ".join(batch.texts))
            got = {k: batch.recomputes.get(k, 0) for k in want}
            assert all(got[k] <= n for k, n in want.items()), "\n".join(
                ["", *history, f"recomputes {got}, the nodes promise at most {want}"])
    return world


# No explain phase: it replays variations of a failure for minutes at this cost per
# example, and the failure's script already says what happened.
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(sorted(BASES)), steps(exclude=EXCLUDED))
def test_incremental_equals_recompute(base: str, seq: list[Step]) -> None:
    play(seq, base=BASES[base])


# -- the checks themselves ----------------------------------------------------------------

TOUR = [
    Step("ls-add", (0, "10.0.0.0/24", False)), Step("ls-add", (1, "", True)),
    Step("lsp-add", (0, 0, 0, 3, True, 0)), Step("lsp-add", (0, 1, 0, 4, False, 0)),
    Step("chassis-add", (0, False)), Step("chassis-add", (1, True)),
    Step("claim", (0, 0, False)), Step("claim", (1, 1, False)), Step("set-up", (1, True)),
    Step("lr-add", (0, 0)), Step("lrp-add", (0, 0, 1, False)),
    Step("lsp-add", (1, 2, 2, 6, False, 4)), Step("lrp-gw", (0, 0, 2)),
    Step("lrp-gw", (0, 1, 1)), Step("hag-add", (0, [0, 1])),
    Step("lsp-add", (1, 3, 5, 2, False, 0)), Step("lsp-set", (3, "ha_chassis_group", 4)),
    Step("lsp-add", (0, 4, 6, 3, False, 7)), Step("lsp-add", (1, 5, 3, 0, False, 6)),
    Step("lsp-add", (0, 6, 4, 2, False, 0)), Step("acl-add", (False, 0, True, 0, 1, 1001)),
    Step("pg-add", (0, [0, 1])), Step("acl-add", (True, 0, False, 3, 2, 0)),
    Step("as-add", (0, ["10.0.0.1"])), Step("lb-add", (0, 0, "tcp")),
    Step("lb-attach", (0, "switch", 0, True)), Step("lb-add", (1, 1, "")),
    Step("lb-attach", (1, "group", 0, True)), Step("lbg-attach", ("router", 0, True)),
    Step("dns-add", (0, 0)), Step("dns-set", (0, 1)),
    *([] if "meter-add" in EXCLUDED else [Step("meter-add", (0, "kbps", 2, True)),
                                          Step("meter-del", (0,))]),
    Step("ls-add", (1, "", True)), Step("igmp-join", (4, 0, "239.0.0.1")),
    Step("igmp-join", (5, 1, "239.0.0.1")), Step("igmp-leave", (0,)),
    Step("nb-option", (2,)), Step("nb-cfg", ()), Step("cp-cfg", (0,)),
    Step("lsp-set", (0, "options", 3)), Step("claim", (0, 1, True)),
    Step("nat-add", (0, "dnat_and_snat", 0, True)), Step("nat-add", (0, "snat", 1, False)),
    Step("lr-add", (1, 0)), Step("lrp-add", (1, 1, 0, False)),
    Step("route-add", (0, 0, 1, 2, False)), Step("route-add", (0, 1, 0, 0, False)),
    Step("route-add", (1, 2, 2, 0, True)), Step("route-set", (0, 1)),
    Step("policy-add", (0, 100, 0, 3)), Step("policy-add", (0, 200, 1, 1)),
    Step("policy-del", (0,)), Step("route-del", (1,)),
    Step("chassis-add", (2, 2)), Step("ls-add", (2, "", 2)),
    Step("lrp-set", (0, "options", 1)), Step("lrp-gw-del", (0, 1)), Step("release", (1,)),
    Step("nat-del", (0,)), Step("mac-learn", (0, 0)), Step("fdb-learn", (3, 1)),
    Step("lsp-move", (0, 2)), Step("lsp-readd", (0, 2, 3)),
    Step("rename", ("Logical_Switch_Port", 0, 7)),
    Step("rename", ("Logical_Switch", 2, 3)), Step("rename", ("Logical_Router_Port", 0, 2)),
    Step("sb-delete", ("Port_Binding", 3)), Step("sb-delete", ("Multicast_Group", 0)),
    Step("sb-rekey", ("Port_Binding", 2, 40)), Step("sb-rekey", ("Datapath_Binding", 0, 41)),
    Step("acl-del", (0,)), Step("lb-del", (0,)), Step("dns-del", (0,)),
    Step("as-del", (0,)), Step("pg-del", (0,)),
    Step("hag-del", (0,)), Step("lsp-del", (1,)), Step("lrp-del", (0,)),
    Step("chassis-del", (1,)), Step("chassis-del", (0,)), Step("chassis-del", (0,)),
    Step("chassis-add", (0, 3)), Step("chassis-add", (1, 4)), Step("lr-add", (0, 4)),
    Step("mac-learn", (0, 1)), Step("nb-cfg", ()), Step("nb-cfg", ()),
    Step("lose-commit", (), batch=True),
    Step("lr-del", (0,)), Step("ls-del", (1,)),
]


def test_a_tour_of_every_step_kind_applies_each_and_stays_equal() -> None:
    from nbgen import ALL_KINDS

    world = play(TOUR)
    missing = EXCLUDED | ({"meter-del"} if "meter-add" in EXCLUDED else set())
    assert {s.kind for s in TOUR} == set(ALL_KINDS) - missing
    assert world.applier.refused == 0
    assert world.lost == 1  # the lr-del's SB commit, recomputed after
    # Every step did something: replay and look for skips.
    replay = World()
    for step in TOUR:
        text = replay.applier.apply(step)
        assert text is not None, f"{step} skipped"
        replay.settle()


# The steps of the tour that still recompute `northd`, each run alone (the goal: none
# but a lost commit's). A step leaving the list (now handled in place) or joining it
# fails the test below: the change that moved it updates the list.
STILL_RECOMPUTING = [
    (55, "ls-add"),  # asking for the tunnel key another switch holds
    (67, "sb-delete"), (68, "sb-delete"),  # northd's SB rows deleted by another writer
    (69, "sb-rekey"), (70, "sb-rekey"),  # its tunnel keys moved by another writer
    (89, "lr-del"),  # its SB commit lost (`lose-commit`): the recompute that follows
]


@pytest.mark.parametrize("base", sorted(BASES))
def test_the_tour_recomputes_northd_only_where_listed(base: str) -> None:
    world = World(BASES[base])
    got = []
    for i, step in enumerate(TOUR):
        batch = Batch(steps=[step])
        world.play(batch)
        if batch.recomputes.get("northd"):
            got.append((i, step.kind))
    assert got == STILL_RECOMPUTING


def test_nodes_read_only_the_tables_they_declare(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table read but not declared is one whose changes never reach the node: the
    tour reads no such table, and one taken out of `northd`'s declaration on purpose
    is refused at its first read (`UndeclaredTable`), not read as absent."""
    play(TOUR)
    monkeypatch.setattr(northd_node, "NORTHD_SB_INPUTS",
                        tuple(t for t in northd_node.NORTHD_SB_INPUTS if t != "Chassis"))
    with pytest.raises(UndeclaredTable, match="node northd reads Chassis"):
        play(TOUR)


# Failures the property found, shrunk, kept as cases of their own (each fixed since).
FOUND: dict[str, tuple[tuple[Step, ...], list[Step]]] = {
    # Meter_Band rows had no key in the sync: every run deleted the meter's bands and
    # inserted them again, so northd never stopped committing.
    "a meter's bands are kept": ((), [Step("meter-add", (0, "kbps", 2, False))]),
    # With an HA group of two chassis `sync_from_sb` recomputes on a claim, and its
    # recompute read each port's binding as `northd` last saw it (unclaimed).
    "a claim next to a two-chassis gateway turns the port up": (
        (), [Step("ls-add", (0, "", False)), Step("lsp-add", (0, 0, 0, 2, False, 0)),
             Step("lr-add", (0, 0)), Step("lrp-add", (0, 0, 0, False)),
             Step("chassis-add", (0, False)), Step("chassis-add", (1, False)),
             Step("lrp-gw", (0, 0, 1)), Step("lrp-gw", (0, 1, 2)),
             Step("claim", (2, 0, True))]),
    # A switch asking for another's key, the two swapping keys: the port group rows
    # named after each key were renamed one datapath at a time, the second rename
    # overwriting the first's.
    "two switches swapping keys rename their port groups' rows": (
        BASES["ha"], [Step("ls-add", (0, "", 2), batch=True)]),
    # A switch port that was up renamed: `sync_from_sb` set its row's `up` under the new
    # name, then took it away under the old one (the same row), where the new name came
    # first (p4 renamed p0, up: the names are taken in order now).
    "a port renamed is down under its new name": (
        BASES["ha"], [Step("rename", ("Logical_Switch_Port", 0, 4)), Step("claim", (5, 0, True)),
                      Step("rename", ("Logical_Switch_Port", 3, 0))]),
    # A router port deleted (or renamed) beside a switch with an external port: the
    # port's guard flows dropping ARP/ND for that router port's addresses stayed.
    "a router port gone drops an external port's guard for it": (
        BASES["plain"], [Step("lsp-add", (1, 5, 3, 0, False, 0)),
                         Step("lsp-add", (1, 6, 5, 2, False, 0)), Step("lrp-del", (0,))]),
    # A policy added to a disabled router (no datapath): `lflow` looked its datapath up.
    "a policy on a disabled router builds nothing": (
        BASES["ha"], [Step("ls-add", (0, "", 0), batch=True), Step("lr-add", (0, 3)),
                      Step("policy-add", (0, 100, 0, 0), batch=True)]),
    # A router deleted with its ports (by `on_nb_lrp`, after `on_nb_lr`) and one made in
    # the same run: the new one took a key as if the deleted one still held its own.
    "a router made while another goes takes the key it frees": (
        BASES["ha"], [Step("lr-del", (0,), batch=True), Step("lr-add", (0, 0), batch=True)]),
    # A router disabled while SB has an IGMP group on it (joined through its
    # chassisredirect port): a recompute deletes the group.
    "a router disabled under an IGMP group": (
        BASES["ha"], [Step("ls-add", (0, "", 0), batch=True),
                      Step("igmp-join", (0, 0, "239.0.0.1"), batch=True),
                      Step("ls-add", (0, "", 0)), Step("lr-add", (0, 3), batch=True)]),
    # A router port renamed keeps its gateway chassis rows (named for the old name);
    # one made for a chassis it already had made two references to one HA_Chassis
    # key, and every SB transaction failed ("set contains duplicate"). Found by the
    # hot standby's property.
    # An HA chassis group an external port uses, deleted: the port's old row names a
    # row gone, so its own change could not tell which SB group to take away.
    "an external port's HA group deleted": (
        (), [Step("ls-add", (0, "10.0.0.0/24", False)), Step("ls-add", (1, "", True)),
             Step("chassis-add", (0, False)), Step("chassis-add", (1, True)),
             Step("hag-add", (0, [0, 1])), Step("lsp-add", (1, 3, 5, 2, False, 0)),
             Step("lsp-set", (3, "ha_chassis_group", 4)), Step("hag-del", (0,))]),
    "a renamed gateway port given a chassis it has": (
        BASES["ha"], [Step("ls-add", (0, "", 0), batch=True),
                      Step("rename", ("Logical_Router_Port", 0, 1), batch=True),
                      Step("lrp-gw", (0, 0, 0), batch=True)]),
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_sequences_the_property_found(name: str) -> None:
    base, seq = FOUND[name]
    play(seq, base=base)


def _swallow(self: Any, change: Any) -> Handled:
    return Handled.HANDLED_UNCHANGED


@pytest.mark.parametrize(("node", "handler", "seq"), [
    # A port's new addresses unseen. (NB_Global makes a poor case: northd writes its
    # whole options map back, so a change it swallows is reverted, consistently.)
    (NorthdNode, "on_nb_lsp", [Step("lsp-set", (0, "addresses", 2))]),
    # A claim that never turns the NB port up.
    (SyncFromSbNode, "on_port_binding", [Step("claim", (2, 0, True))]),
])
def test_the_check_fails_on_a_handler_that_swallows_a_change(
        monkeypatch: pytest.MonkeyPatch, node: type, handler: str, seq: list[Step]) -> None:
    play(seq, check_stats=False, base=BASES["plain"])
    monkeypatch.setattr(node, handler, _swallow)
    with pytest.raises(AssertionError,
                       match=r"recompute would write|self-check: the run differs"):
        play(seq, check_stats=False, base=BASES["plain"])


def test_claims_and_the_cfg_handshake_do_not_recompute_northd() -> None:
    seq = [Step("ls-add", (0, "", False)), Step("lsp-add", (0, 0, 0, 2, False, 0)),
           Step("chassis-add", (0, False)), Step("claim", (0, 0, True)),
           Step("set-up", (0, False)), Step("release", (0,)), Step("nb-cfg", ()),
           Step("cp-cfg", (0,))]
    world = World()
    for steps_ in batches(seq):
        batch = Batch(steps=steps_)
        world.play(batch)
        assert not recompute_differences(world)
        if steps_[0].kind in ("claim", "set-up", "release", "nb-cfg", "cp-cfg"):
            assert batch.recomputes["northd"] == 0, (batch.texts, batch.recomputes)


def _in_place(base: str, seq: list[Step]) -> None:
    """Each step of `seq` applied (none skipped), equal to a recompute, and without
    one."""
    world = World(BASES[base])
    for step in seq:
        batch = Batch(steps=[step])
        world.play(batch)
        assert "skipped" not in batch.texts[0], batch.texts
        assert not recompute_differences(world)
        assert batch.recomputes["northd"] == 0, (batch.texts, batch.recomputes)


def test_redirect_type_on_a_distributed_gateway_port_is_in_place() -> None:
    """`redirect-type=bridged` on a gateway port whose router has a distributed NAT
    rule changes its chassisredirect binding and its router's ARP-resolve and NAT
    flows, set and dropped without a recompute."""
    _in_place("ha", [Step("nat-add", (0, "dnat_and_snat", 0, True)),
                     Step("lrp-set", (0, "options", 1)), Step("lrp-set", (0, "options", 0))])


def test_a_port_deleted_and_added_again_in_one_run_keeps_its_binding() -> None:
    """`lsp-del p -- lsp-add sw p` (or a pod made again under its name within one
    northd run): the new row takes over the binding of its name, its key and its
    claim, as a build does, without a recompute; another type, or another switch,
    is refused and recomputes."""
    world = World(BASES["plain"])
    seq = [Step("claim", (1, 0, True)), Step("pg-add", (0, [0, 1])),
           Step("lsp-del", (0,), batch=True), Step("lsp-add", (0, 0, 0, 3, False, 0)),
           Step("lsp-del", (0,), batch=True), Step("lsp-add", (0, 0, 0, 4, False, 0))]
    bindings = world.sb.tables["Port_Binding"]
    before = {r.logical_port: r.uuid for r in bindings.rows.values()}
    for steps_ in batches(seq):
        batch = Batch(steps=steps_)
        world.play(batch)
        assert not any("skipped" in t for t in batch.texts), batch.texts
        assert not recompute_differences(world)
        assert batch.recomputes["northd"] == 0, (batch.texts, batch.recomputes)
    after = {r.logical_port: r.uuid for r in bindings.rows.values()}
    assert after["p0"] == before["p0"]
    batch = Batch(steps=[Step("lsp-del", (0,), batch=True),
                         Step("lsp-add", (0, 0, 6, 3, False, 0))])  # (made virtual)
    world.play(batch)
    assert not recompute_differences(world)
    assert batch.recomputes["northd"] == 1, (batch.texts, batch.recomputes)


def test_a_port_moved_to_another_switch_is_in_place() -> None:
    """A port moved between switches in one transaction (the same row), or deleted
    and added on another switch under its name, claimed and in a port group: its old
    binding is deleted and a new one inserted on its new switch, as a build does; its
    group's rows follow; the old switch's flows lose it."""
    _in_place("plain", [Step("claim", (1, 0, True)), Step("pg-add", (0, [0, 1, 2])),
                        Step("lsp-move", (0, 1)), Step("lsp-move", (0, 0)),
                        Step("rename", ("Logical_Switch_Port", 0, 7)),
                        Step("lsp-move", (0, 1))])
    world = World(BASES["plain"])
    batch = Batch(steps=[Step("lsp-del", (0,), batch=True),
                         Step("lsp-add", (1, 0, 0, 2, False, 0))])
    world.play(batch)
    assert not recompute_differences(world)
    assert batch.recomputes["northd"] == 0, (batch.texts, batch.recomputes)


def test_gateway_ports_by_nb_ha_chassis_group_are_in_place() -> None:
    """A router port made a gateway port by an NB HA chassis group (as Neutron makes
    them), given another group, given gateway chassis beside it and losing them, the
    group shared with an external port; deleted, added and renamed with a group, on a
    router with a load balancer; the group deleted under it."""
    _in_place("plain", [
        Step("hag-add", (0, [0, 1])), Step("hag-add", (1, [2])),
        Step("lb-add", (0, 0, "tcp")), Step("lb-attach", (0, "router", 0, True)),
        Step("lsp-set", (0, "type", 5)), Step("lsp-set", (0, "ha_chassis_group", 4)),
        Step("lrp-set", (0, "ha_chassis_group", 0)), Step("lrp-set", (0, "ha_chassis_group", 1)),
        Step("lrp-gw", (0, 0, 1)), Step("lrp-set", (0, "ha_chassis_group", 0)),
        Step("lrp-set", (0, "ha_chassis_group", 2)), Step("lrp-set", (0, "ha_chassis_group", 0)),
        Step("lrp-gw-del", (0, 0)), Step("lrp-del", (0,)), Step("lrp-add", (0, 0, 0, False)),
        Step("lrp-set", (0, "ha_chassis_group", 0)), Step("rename", ("Logical_Router_Port", 0, 2)),
        Step("hag-del", (0,)), Step("lrp-set", (0, "ha_chassis_group", 1)),
        Step("lr-del", (0,))])



def _give_up(self: Any, change: Any) -> Handled:
    return Handled.UNHANDLED


@pytest.mark.parametrize(("node", "handler", "seq"), [
    (NorthdNode, "on_port_binding", [Step("claim", (2, 0, True))]),
    (NorthdNode, "on_nb_global", [Step("nb-cfg", ())]),
    (SyncFromSbNode, "on_port_binding", [Step("release", (1,))]),
])
def test_the_stats_check_fails_on_a_handler_that_gives_up(
        monkeypatch: pytest.MonkeyPatch, node: type, handler: str, seq: list[Step]) -> None:
    play(seq, base=BASES["plain"])
    monkeypatch.setattr(node, handler, _give_up)
    with pytest.raises(AssertionError, match=r"the nodes promise"):
        play(seq, base=BASES["plain"])
