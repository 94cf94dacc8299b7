"""What `pyovsdb northd` logs about bad NB data, line for line beside the real
ovn-northd 23.03: both run the same script on their own real NB and SB servers
(`diffharness.Run`).

With rate limits off (`vlog/disable-rate-limit`) every line each northd logs for the
script is compared as a set: module, level and text, the NB UUIDs in texts replaced
by the rows' names. Then, rate limits on again (`vlog/enable-rate-limit`), two forced
recomputes must log each warning once: the count of lines per module and level is
compared (which row a site names first is hash order in 23.03).

The one text that is hash order in 23.03 is which of a switch port and a router port
of the same name it keeps: either "duplicate logical port dup" or "duplicate logical
router port dup" is accepted, from either northd.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from diffharness import Run, parse_script

from procs import require, run

pytestmark = pytest.mark.interop

# One transaction each (its commands joined with "--"); rows named by uuid(...) exist
# from an earlier one.
TRANSACTIONS = [
    ["ls-add sw0",
     "lsp-add sw0 p1",
     """set Logical_Switch_Port p1 'addresses="00:00:00:00:00:01 10.0.0.1 fe80::zz"'""",
     "lsp-add sw0 p2", """set Logical_Switch_Port p2 'addresses="garbage 10.0.0.2"'""",
     "lsp-add sw0 p3", """set Logical_Switch_Port p3 'port_security="zz:00 10.0.0.3"'""",
     "lsp-add sw0 p4", 'lsp-set-addresses p4 "00:00:00:00:00:04 10.0.0.4"',
     "lr-add lr0", "lrp-add lr0 lrp0 00:00:00:00:01:01 10.1.0.1/24",
     "lr-add lr1", "lrp-add lr1 lrpd 00:00:00:00:01:0d 10.13.0.1/24"],
    # a switch port on two switches, a router port on two routers
    ["ls-add sw1", "add Logical_Switch sw1 ports uuid(Logical_Switch_Port,name=p4)",
     "lr-add lr2", "add Logical_Router lr2 ports uuid(Logical_Router_Port,name=lrpd)",
     "lrp-add lr0 lrp1 00:00:00:00:01:02 10.2.0.1/24",
     """set Logical_Router_Port lrp1 'networks="0.0.0.0/24","10.2.0.1/24","bogus"'""",
     "lrp-add lr0 lrp2 00:00:00:00:01:03 10.3.0.1/24", "set Logical_Router_Port lrp2 mac=zz",
     "lb-add lb0 10.0.0.100:80 10.0.0.2:80",
     """set Load_Balancer lb0 'vips={"10.0.0.100:80"="10.0.0.2:80,bad", "x:y"="10.0.0.3"}'""",
     "ls-lb-add sw0 lb0",
     "lsp-add sw0 dup", "lrp-add lr0 dup 00:00:00:00:01:09 10.19.0.1/24"],
    [*(f"--id=@{rid} create Logical_Router_Static_Route {route}" for rid, route in (
        ("a", "ip_prefix=10.6.0.0/16 nexthop=10.1.0.254/24"),
        ("b", "ip_prefix=bogus nexthop=10.1.0.254"),
        ("c", "ip_prefix=10.7.0.0/16 nexthop=zz"),
        ("d", """ip_prefix='"fd00::/64"' nexthop=10.1.0.254"""),
        ("e", "ip_prefix=10.8.0.0/16 nexthop=192.168.9.9"),
        ("f", "ip_prefix=10.9.0.0/16 nexthop=10.1.0.254 output_port=nosuch"))),
     "add Logical_Router lr0 static_routes @a @b @c @d @e @f"],
    ["ls-add sw2", "set Logical_Switch sw2 other_config:subnet=10.20.0.0/30",
     "lsp-add sw2 d1", "lsp-set-addresses d1 dynamic",
     "ls-add sw3", "set Logical_Switch sw3 other_config:subnet=bogus",
     "ls-add sw4",
     "set Logical_Switch sw4 other_config:subnet=10.40.0.0/24 other_config:exclude_ips=foo",
     "lsp-add sw4 d3", 'lsp-set-addresses d3 dynamic "00:00:00:00:00:99 dynamic"',
     "lsp-add sw4 s1", 'lsp-set-addresses s1 "00:00:00:00:00:41 10.40.0.1"',
     "lsp-add sw4 s2", 'lsp-set-addresses s2 "0a:00:00:00:00:51 10.40.0.51"',
     "lsp-add sw4 s3", 'lsp-set-addresses s3 "0a:00:00:00:00:51 10.40.0.52"',
     "ls-add sw5", """set Logical_Switch sw5 other_config:ipv6_prefix='"fd00::/48"'""",
     "ls-add sw6", "set Logical_Switch sw6 other_config:ipv6_prefix=zz",
     "ls-add sw7", """set Logical_Switch sw7 other_config:ipv6_prefix='"fd00::/129"'""",
     "ls-add sw8", """set Logical_Switch sw8 other_config:ipv6_prefix='"fd00::%eth0"'"""],
    ["lsp-add sw2 d2", "lsp-set-addresses d2 dynamic"],  # the subnet is full by now
]
SCRIPT = "\n".join("nbctl -- " + " -- ".join(t) for t in TRANSACTIONS)
MODULES = ("northd", "ovn_util", "lb", "ipam")
LINE = re.compile(r"\|\d+\|(" + "|".join(MODULES) + r")\|(\w+)\|(.*)$")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DUP = re.compile(r"duplicate logical (router )?port dup$")


def _lines(r: Run, start: int = 0) -> list[tuple[str, str, str]]:
    text = (r.workdir / "northd.log").read_text()[start:]
    return [m.groups() for m in map(LINE.search, text.splitlines()) if m]  # type: ignore[misc]


def _labels(r: Run) -> dict[str, str]:
    """NB UUID -> a name for it (switches by name, static routes by prefix)."""
    out = {}
    for table, column in (("Logical_Switch", "name"),
                          ("Logical_Router_Static_Route", "ip_prefix")):
        rows = r.nbctl("--bare", f"--columns=_uuid,{column}", "list", table)
        for block in rows.strip().split("\n\n"):
            uuid, label = block.split("\n")
            out[uuid] = f"{table}:{label}"
    return out


def _script(kind: str, workdir: Path) -> tuple[set[str], Counter[str], list[str]]:
    r = Run(kind, workdir)
    try:
        r.start()
        ctl = ["ovn-appctl", "-t", str(workdir / "northd.ctl")]
        run([*ctl, "vlog/disable-rate-limit"])
        for step in parse_script(SCRIPT).steps:
            r.step(step)
        r.nbctl("--wait=sb", "sync")
        labels = _labels(r)
        flows = sorted(line.strip() for line in r.sbctl("lflow-list", "sw0").splitlines()
                       if "ls_in_arp_rsp" in line and re.search(r"10\.0\.0\.1\b|fe80::", line))
        every = set()
        for module, level, text in _lines(r):
            text = DUP.sub("duplicate logical port-or-router-port dup", text)
            every.add(f"{module}|{level}|" + UUID.sub(lambda m: labels[m.group()], text))
        mark = (workdir / "northd.log").stat().st_size
        run([*ctl, "vlog/enable-rate-limit"])
        for _ in range(2):
            run([*ctl, "inc-engine/recompute"])
            r.nbctl("--wait=sb", "sync")
        limited = Counter(f"{m}|{lv}" for m, lv, text in _lines(r, mark)
                          if not text.startswith("Assigned dynamic"))
        return every, limited, flows
    finally:
        r.stop()


def test_bad_nb_data_warnings_as_the_real_northd(tmp_path: Path) -> None:
    require("ovn-northd", "ovn-nbctl", "ovn-appctl", "ovsdb-server")
    with ThreadPoolExecutor(2) as pool:
        jobs = {kind: pool.submit(_script, kind, tmp_path / kind) for kind in ("real", "ours")}
        (real, real_limited, real_flows), (ours, ours_limited, ours_flows) = (
            jobs[k].result() for k in ("real", "ours"))
    assert sorted(ours - real) == [] and sorted(real - ours) == []
    assert ours_flows == real_flows
    assert any("nd.target == fe80::)" in line for line in ours_flows)
    # What the script is about, each kind of bad data once at least.
    for expected in (
            "ovn_util|INFO|invalid syntax '00:00:00:00:00:01 10.0.0.1 fe80::zz' in address",
            "northd|WARN|duplicate logical port p4",
            "northd|WARN|duplicate logical router port lrpd",
            "northd|WARN|duplicate logical port-or-router-port dup",
            "northd|WARN|bad 'mac' zz",
            "ovn_util|WARN|bad 'networks' 0.0.0.0/24",
            "lb|WARN|Failed to initialize LB VIP: bad: should be an IP address and a port "
            "number with : as a separator.",
            "northd|WARN|bad 'ip_prefix' bogus in static route "
            "Logical_Router_Static_Route:bogus",
            "northd|WARN|No path for static route 10.8.0.0/16; next hop 192.168.9.9",
            "ipam|WARN|Logical_Switch:sw2: Subnet address space has been exhausted.",
            "ipam|WARN|Logical_Switch:sw3: bad 'subnet' bogus"):
        assert expected in ours
    assert not any("Dropped" in line for line in ours)
    assert ours_limited == real_limited
    assert sum(ours_limited.values()) < len(ours)  # rate limits on: each site once
