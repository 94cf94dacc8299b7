"""`ovn-trace` through our logical flows and through 23.03's: the same packets (the probes
of `traces.py`) must take the same way through the switch and router pipelines.

Each (script, probe) is its own test. The traces come from the runs the differential
module makes (one per northd and script, shared through `lflowdiff.OUTCOMES`); run
alone, this module runs each traced script once per northd. A trace is compared after
`lflowdiff.canonical_trace` (no flow UUIDs or sources; a
match ovn-trace may pick among equal flows printed as all of them). Probes ours does
not pass yet are in `XFAIL_TRACES` (strict).

`test_probes_are_meaningful` keeps the probes honest: each must trace on the real SB
(a typo in a port name is an error there, not a pass), and together they must show an
ARP reply, a DHCP offer, ICMP delivered between two VIFs, a packet an ACL drops, a
load balancer VIP, and across routers a packet routed from one switch to another, SNAT
and DNAT, a router policy, an ECMP member and an expired TTL answered, on at least 10
scripts.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from diffharness import Script, load_corpus, ours_available
from lflowdiff import (
    OUTCOMES,
    ROUTER_CUT,
    Outcome,
    Trace,
    canonical,
    canonical_trace,
    diff_lines,
    flow_index,
    parse_lflow_list,
)
from traces import TRACES

from procs import require

SCRIPTS: dict[str, Script] = {s.name: s for s in load_corpus()}
SHOWN = 80

# (script, probe) -> why our trace differs from 23.03's.
XFAIL_TRACES: dict[tuple[str, str], str] = {}

Runner = Callable[[str, str], Outcome]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl", "ovn-sbctl",
            "ovn-northd", "ovn-trace")

    return OUTCOMES.runner(SCRIPTS, lambda name: tmp_path_factory.mktemp(name,
                                                                          numbered=True))


def _probes() -> list[object]:
    out: list[object] = []
    for name in sorted(TRACES):
        for probe in TRACES[name]:
            reason = XFAIL_TRACES.get((name, probe.name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, probe.name, marks=marks,
                                    id=f"{name}-{probe.name}"))
    return out


def _trace(outcome: Outcome, probe: str) -> Trace:
    return next(t for t in outcome.traces if t.probe == probe)


@pytest.mark.interop
@pytest.mark.parametrize(("script", "probe"), _probes())
def test_trace_matches_real(script: str, probe: str, runs: Runner) -> None:
    real = _trace(runs(script, "real"), probe)
    assert real.ok, f"the probe does not trace on the real SB: {real.text}"
    if not ours_available():
        pytest.skip("pyovsdb northd is not built yet")
    ours = _trace(runs(script, "ours"), probe)
    if ours.text != real.text:
        lines = diff_lines(real.text.splitlines(), ours.text.splitlines())[2:]
        more = f"\n... {len(lines) - SHOWN} more" if len(lines) > SHOWN else ""
        pytest.fail("traces differ (- real, + ours)\n" + "\n".join(lines[:SHOWN]) + more
                    + f"\n--- the real trace\n{real.text}", pytrace=False)


def _delivers_icmp(t: Trace) -> bool:
    return t.text.startswith("# icmp,") and '/* output to "' in t.text


def _acl_drops(t: Trace) -> bool:
    lines = t.text.splitlines()
    for i, line in enumerate(lines):
        if "_acl: " in line and i + 1 < len(lines):
            rest = lines[i + 1].strip()
            if rest in ("drop;", "ct_commit { ct_mark.blocked = 1; };"):
                return True
    return False


def _routed_between_switches(t: Trace) -> bool:
    """Into a router from one switch, routed (TTL decremented), out into another and
    delivered to a port there."""
    switches = re.findall(r'^\s*ingress\(dp="([^"]*)", inport="[^"]*"\)', t.text, re.M)
    return ("ip.ttl--;" in t.text and '/* output to "' in t.text.splitlines()[-1]
            and len(set(switches)) >= 3)


def _policy_applies(t: Trace) -> bool:
    return bool(re.search(r"^\s*\d+\. lr_in_policy: .*, priority [1-9]\d*$", t.text, re.M))


# What the probes must show between them, judged on the real traces.
SHOWS: dict[str, Callable[[Trace], bool]] = {
    "an ARP reply": lambda t: "arp.op = 2;" in t.text,
    "a DHCP offer": lambda t: "put_dhcp_opts(" in t.text,
    "ICMP delivered to a port": _delivers_icmp,
    "a packet an ACL drops": _acl_drops,
    "a load balancer VIP": lambda t: "ct_lb_mark(backends=" in t.text,
    "a packet routed between switches": _routed_between_switches,
    "SNAT to an address": lambda t: bool(re.search(r"ct_snat(_in_czone)?\(", t.text)),
    "DNAT to an address": lambda t: bool(re.search(r"ct_dnat(_in_czone)?\(", t.text)),
    "a router policy": _policy_applies,
    "an ECMP member chosen": lambda t: "select: reg8[16..31] = " in t.text,
    "an expired TTL answered": lambda t: "icmp4.type = 11;" in t.text,
}


@pytest.mark.interop
def test_probes_are_meaningful(runs: Runner) -> None:
    assert len(TRACES) >= 10, "probes on at least 10 corpus scripts"
    unknown = sorted(set(TRACES) - set(SCRIPTS))
    assert not unknown, f"probes of scripts that are not in the corpus: {unknown}"
    real = [t for name in sorted(TRACES) for t in runs(name, "real").traces]
    broken = [t.probe for t in real if not t.ok]
    assert not broken, f"probes that do not trace on the real SB: {broken}"
    missing = [what for what, shows in SHOWS.items() if not any(shows(t) for t in real)]
    assert not missing, f"no probe shows {missing}"


def test_xfail_traces_name_real_probes() -> None:
    known = {(name, p.name) for name, probes in TRACES.items() for p in probes}
    unknown = sorted(set(XFAIL_TRACES) - known)
    assert not unknown, f"XFAIL_TRACES names no such probe: {unknown}"
    names = [(name, p.name) for name, probes in TRACES.items() for p in probes]
    assert len(names) == len(set(names)), "two probes of one script share a name"


# -- the canonical forms, without servers ---------------------------------------------

_TRACE = """\
# arp,reg14=0x1,vlan_tci=0x0000,dl_src=00:00:00:00:00:01,dl_dst=ff:ff:ff:ff:ff:ff

ingress(dp="sw0", inport="p1")
------------------------------
 0. ls_in_check_port_sec (northd.c:8432): 1, priority 50, uuid 24cd4712
    reg0[15] = check_in_port_sec();
    next;
 5. ls_in_pre_lb (northd.c:6033): eth.mcast, priority 110, uuid 7d006ba9
    next;
25. ls_in_l2_lkup (ls_l2): eth.mcast, priority 70, uuid d2d8d5dc
    outport = "_MC_flood";
    output;

multicast(dp="sw0", mcgroup="_MC_flood")
----------------------------------------

    egress(dp="sw0", inport="p1", outport="r1")
    -------------------------------------------
         9. ls_out_apply_port_sec (northd.c:5777): 1, priority 0, uuid 5588cb15
            output;
            /* output to "r1", type "patch" */

    ingress(dp="lr0", inport="lr0-sw0")
    -----------------------------------
         0. lr_in_admission (northd.c:11000): 1, priority 50, uuid 11112222
            next;

    egress(dp="lr0", inport="lr0-sw0", outport="lr0-sw1")
    -----------------------------------------------------
         1. lr_out_delivery (northd.c:12000): 1, priority 100, uuid 33334444
            output;

    egress(dp="sw0", inport="p1", outport="p2")
    -------------------------------------------
         9. ls_out_apply_port_sec (northd.c:5777): 1, priority 0, uuid 5588cb15
            output;
            /* output to "p2", type "" */
"""


def test_canonical_trace_names_flows_not_runs() -> None:
    flows = flow_index([
        "sw0 ingress table=5 (ls_in_pre_lb), priority=110, match=(eth.mcast), action=(next;)",
        "sw0 ingress table=5 (ls_in_pre_lb), priority=110, match=(nd || nd_rs), "
        "action=(next;)",
        "sw0 ingress table=5 (ls_in_pre_lb), priority=110, match=(ip && inport == \"r1\"), "
        "action=(ct_clear; next;)",
        "sw0 ingress table=25 (ls_in_l2_lkup), priority=70, match=(eth.mcast), "
        "action=(outport = \"_MC_flood\"; output;)",
    ])
    got = canonical_trace(_TRACE, frozenset({"lr0"}), flows).splitlines()
    assert " 0. ls_in_check_port_sec: 1, priority 50" in got
    assert " 5. ls_in_pre_lb: one of (eth.mcast) | (nd || nd_rs), priority 110" in got
    assert "25. ls_in_l2_lkup: eth.mcast, priority 70" in got  # no sibling: as printed
    assert f'    ingress(dp="lr0", inport="lr0-sw0") {ROUTER_CUT}' in got
    assert not any("lr_" in line or 'dp="lr0", inport="lr0-sw0", outport' in line
                   for line in got)
    # The fan-out's next sibling (same datapath and inport as the one into the router).
    assert '            /* output to "p2", type "" */' in got
    assert not any("uuid" in line or "northd.c" in line or not line.strip() for line in got)


def test_canonical_trace_differs_where_the_way_differs() -> None:
    other = _TRACE.replace('outport="p2")', 'outport="p3")')
    assert canonical_trace(_TRACE, frozenset({"lr0"})) != canonical_trace(other,
                                                                          frozenset({"lr0"}))
    assert canonical_trace(_TRACE) != canonical_trace(_TRACE, frozenset({"lr0"}))


def test_lflow_list_lines_name_datapaths_and_nb_rows() -> None:
    uuid = "bb9e1509-c8b3-4593-bf0d-b268f393c63b"
    text = (
        'Datapath: "sw0" (0b9d8d3e-0000-4000-8000-000000000001)  Pipeline: ingress\n'
        '  table=5 (ls_in_pre_lb       ), priority=130  , match=(ip4.dst == 10.0.0.60), '
        f'action=(trigger_event(load_balancer = "{uuid}");)\n'
        '  table=0 (ls_in_check_port_sec), priority=100  , match=(eth.src[40]), '
        'action=(drop;)\n')
    assert parse_lflow_list(text, {uuid: "@nb.Load_Balancer(lbev)"}) == [
        "sw0 ingress table=0 (ls_in_check_port_sec), priority=100, match=(eth.src[40]), "
        "action=(drop;)",
        "sw0 ingress table=5 (ls_in_pre_lb), priority=130, match=(ip4.dst == 10.0.0.60), "
        'action=(trigger_event(load_balancer = "@nb.Load_Balancer(lbev)");)']
    assert "<uuid>" in parse_lflow_list(text, {})[1]


def test_canonical_sorts_only_the_mac_set_23_03_prints_in_hash_order() -> None:
    a = "eth.src == {00:00:00:00:aa:11, 00:00:20:20:12:13, 00:00:00:00:aa:10} && nd_ns"
    b = "eth.src == {00:00:20:20:12:13, 00:00:00:00:aa:10, 00:00:00:00:aa:11} && nd_ns"
    assert canonical(a) == canonical(b) == (
        "eth.src == {00:00:00:00:aa:10, 00:00:00:00:aa:11, 00:00:20:20:12:13} && nd_ns")
    kept = "ip6.dst == {fd00::2, ff02::1:ff00:2} && nd.target == fd00::2"
    assert canonical(kept) == kept
