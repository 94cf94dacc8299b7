"""`LflowTable.replace_owned` on its own: what some owners asked for on a datapath
replaced by what a rebuild of theirs asks for, the other owners' requests kept, and the
flows that changed reported (the self-checks of the engine tests hold the whole graph to
a recompute; these hold the table's bookkeeping to its promises case by case)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from pyovsdb.northd.build.datapaths import Datapath, DatapathKind
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import FlowKey, LflowTable, Owner

SW = Datapath("11111111-0000-0000-0000-000000000000", DatapathKind.SWITCH, "sw", 1,
              cast(Any, None))
SW2 = Datapath("22222222-0000-0000-0000-000000000000", DatapathKind.SWITCH, "sw2", 2,
               cast(Any, None))
LR = Datapath("33333333-0000-0000-0000-000000000000", DatapathKind.ROUTER, "lr", 3,
              cast(Any, None))
A: Owner = ("port", "a")
B: Owner = ("port", "b")
HINT_1 = "aaaaaaaa-0000-0000-0000-000000000000"
HINT_2 = "bbbbbbbb-0000-0000-0000-000000000000"


def _ask(table: LflowTable, owner: Owner, dp: Datapath, match: str, hint: str | None = None
         ) -> FlowKey:
    stage = Stage.LS_IN_L2_LKUP if dp.is_switch else Stage.LR_IN_ARP_RESOLVE
    with table.owned_by(owner):
        table.add(dp, stage, 50, match, "next;", hint=hint)
    return FlowKey(stage, 50, match, "next;")


@pytest.mark.parametrize("dp", [SW, LR], ids=["switch", "router"])
def test_a_flow_asked_for_again_stays_and_takes_the_new_request(dp: Datapath) -> None:
    table = LflowTable()
    key = _ask(table, A, dp, "m1", HINT_1)
    kept = _ask(table, A, dp, "m2", HINT_1)
    _ask(table, B, dp, "m3")
    flow = table.flows[kept]
    new = LflowTable(only=frozenset((dp.key,)))
    _ask(new, A, dp, "m1", HINT_2)
    _ask(new, A, dp, "m2", HINT_1)
    _ask(new, A, dp, "m4")
    changed = table.replace_owned([dp.key], frozenset((A,)), new)
    assert table.flows[kept] is flow  # (left in place)
    assert table.flows[key].hint == HINT_2[:8]
    assert changed == {key, FlowKey(key.stage, 50, "m4", "next;")}
    assert {k.match: owners for k, owners in table.by_dp[dp.key].items()} == {
        "m1": (A,), "m2": (A,), "m3": (B,), "m4": (A,)}


def test_a_flow_of_two_datapaths_keeps_its_row_when_one_asks_again() -> None:
    table = LflowTable()
    key = _ask(table, A, SW, "m1", HINT_1)
    _ask(table, B, SW2, "m1", HINT_1)
    new = LflowTable(only=frozenset((SW.key,)))
    _ask(new, A, SW, "m1", HINT_2)
    assert table.replace_owned([SW.key], frozenset((A,)), new) == set()
    assert table.flows[key].hint == HINT_1[:8]
    assert list(table.flows[key].datapaths) == [SW.key, SW2.key]


def test_a_flow_no_longer_asked_for_goes_where_no_other_owner_asks() -> None:
    table = LflowTable()
    shared = _ask(table, A, SW, "m1")
    _ask(table, B, SW, "m1")
    alone = _ask(table, A, SW, "m2")
    on_router = _ask(table, A, LR, "m5")
    changed = table.replace_owned([SW.key, LR.key], frozenset((A,)),
                                  LflowTable(only=frozenset((SW.key, LR.key))))
    assert changed == {alone, on_router}
    assert table.by_dp[SW.key] == {shared: (B,)}
    assert alone not in table.flows and on_router not in table.flows
    assert LR.key not in table.owned_on  # (a port's requests on a router, by owner)


def _scanned(table: LflowTable, dp_key: str, owners: set[Owner]) -> set[Owner]:
    """`owners_under` as a walk of every indexed owner on the datapath would find."""
    return {o for o in table.owned_on.get(dp_key, ())
            if isinstance(o, tuple) and len(o) == 3 and o[:2] in owners}


def test_the_owners_extending_a_pair_are_kept_as_owners_come_and_go() -> None:
    """`owners_under` answers from an index kept by `add`, `replace` and
    `replace_owned`: after each, the same as a walk of the datapath's owners."""
    nat, policy = ("nat", LR.key), ("policy", LR.key)
    ip1, ip2, rule = ("nat", LR.key, "10.0.0.1"), ("nat", LR.key, "10.0.0.2"), \
        ("policy", LR.key, "p1")
    pairs = {nat, policy, A}
    table = LflowTable()
    for owner, match in ((nat, "n"), (ip1, "i1"), (ip2, "i2"), (rule, "r1"),
                         (("port", "a", "lrp1"), "pair")):
        _ask(table, owner, LR, match)

    def agree() -> None:
        for pair in pairs:
            assert table.owners_under(LR.key, {pair}) == _scanned(table, LR.key, {pair})
        assert table.owners_under(LR.key, pairs) == _scanned(table, LR.key, pairs)

    agree()
    assert table.owners_under(LR.key, {nat}) == {ip1, ip2}
    new = LflowTable(only=frozenset((LR.key,)))
    _ask(new, ip2, LR, "i2")
    _ask(new, ("nat", LR.key, "10.0.0.3"), LR, "i3")
    table.replace_owned([LR.key], frozenset((ip1, ip2, ("nat", LR.key, "10.0.0.3"))), new)
    agree()
    assert table.owners_under(LR.key, {nat}) == {ip2, ("nat", LR.key, "10.0.0.3")}
    table.replace_owned([LR.key], frozenset((policy, rule)),
                        LflowTable(only=frozenset((LR.key,))))
    agree()
    assert table.owners_under(LR.key, {policy}) == set()
    rebuilt = LflowTable(only=frozenset((LR.key,)))
    _ask(rebuilt, ("policy", LR.key, "p2"), LR, "r2")
    table.replace([LR.key], rebuilt)
    agree()
    assert table.owners_under(LR.key, pairs) == {("policy", LR.key, "p2")}


def test_the_same_flows_of_an_owner_on_two_datapaths_are_one_set_rebuilt_apart() -> None:
    """A load balancer's flows on the datapaths of its group are one set, shared; a
    rebuild of them on one datapath leaves the other's as they were."""
    lb: Owner = ("lb", "k", "vip")
    table = LflowTable()
    _ask(table, A, SW, "own")
    new = LflowTable(only=frozenset((SW.key, SW2.key)))
    for dp in (SW, SW2):
        _ask(new, lb, dp, "m1")
        _ask(new, lb, dp, "m2")
    table.replace_owned([SW.key, SW2.key], frozenset((lb,)), new)
    assert table.owned_on[SW.key][lb] is table.owned_on[SW2.key][lb]
    again = LflowTable(only=frozenset((SW.key,)))
    _ask(again, lb, SW, "m3")
    table.replace_owned([SW.key], frozenset((lb,)), again)
    assert {k.match for k in table.owned_on[SW.key][lb]} == {"m3"}
    assert {k.match for k in table.owned_on[SW2.key][lb]} == {"m1", "m2"}
    assert {k.match for k in table.by_dp[SW2.key]} == {"m1", "m2"}
    # (its sets are shared now: requests are for tables being built)
    with pytest.raises(RuntimeError, match="takes no requests"):
        _ask(table, lb, SW, "m4")
