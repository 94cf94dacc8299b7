"""Random NB (and ovn-controller-side SB) change sequences for northd's property tests.

What it owns: the `Step` vocabulary, the starting topologies (`BASES`), the hypothesis
strategies that draw steps, and `Applier`, which turns one step into one transaction on
in-memory databases.

Rules kept here:
- A step is drawn up front as small integers and resolved against the databases only
  when it is applied: a step that creates a row takes its name from a fixed pool
  (`sw1`, `p3`, `ch0`...), one that changes or deletes a row takes the row of that
  rank (modulo their number) among the existing ones. So a sequence stays meaningful
  after hypothesis shrinks it, and a step with nothing to act on is skipped, not an
  error.
- Every step is one transaction, as one `ovn-nbctl` command or one ovn-controller
  write would be (`lose-commit` alone writes nothing: it makes the driver drop
  northd's next SB transaction); children go with the row that references them (a
  port with its switch's `ports` mutation) and disappear by garbage collection when
  unlinked.
- Values come from small pools chosen to reach the builders' branches (every port
  type, static and dynamic addresses, gateway chassis, QoS options, port-up-notif
  chassis...), including a few that name rows that do not exist (a router port's
  peer, a requested chassis not registered): northd must cope with those too.
- `Applier.apply` returns a one-line description of what it did (`None` when skipped), in
  the ovn-nbctl/ovn-sbctl spelling, so a shrunk failing sequence reads as a script.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from pyovsdb.northd.testing import LocalDb, TransactError

SWITCHES = ("sw0", "sw1", "sw2", "sw3")
ROUTERS = ("lr0", "lr1")
PORTS = tuple(f"p{i}" for i in range(8))
ROUTER_PORTS = ("lrp0", "lrp1", "lrp2")
CHASSIS = ("ch0", "ch1", "ch2")
LBS = ("lb0", "lb1")
LB_GROUPS = ("lbg0",)
PORT_GROUPS = ("pg0", "pg1")
ADDRESS_SETS = ("as0", "as1", "pg0_ip4")  # (the last named as a port group's set)
METERS = ("m0", "m1")
HA_GROUPS = ("hag0", "hag1")

LSP_TYPES = ("", "", "router", "localnet", "localport", "external", "virtual")
LSP_OPTIONS: tuple[dict[str, str], ...] = (
    {}, {"requested-chassis": "ch0"}, {"requested-chassis": "ch9"},
    {"qos_max_rate": "1000"}, {"router-port": "lrp0"}, {"router-port": "lrp1"},
    {"network_name": "physnet1"}, {"virtual-ip": "10.0.0.100", "virtual-parents": "p0,p1"},
    # 3000 is too large for a port while some chassis uses VXLAN (23.03 then ignores
    # it). Keys beyond the column's 32767 are left out: 23.03 writes them as they are
    # and every SB transaction fails, and so does ours.
    {"nat-addresses": "router"}, {"requested-tnl-key": "3"}, {"requested-tnl-key": "3000"},
)
NB_OPTIONS: tuple[tuple[str, str | None], ...] = (
    ("mac_prefix", "0a:00:00"), ("mac_prefix", None), ("mac_prefix", "0e:11:22"),
    ("svc_monitor_mac", "0a:00:00:ff:ff:fe"), ("ignore_lsp_down", "true"),
    ("northd-backoff-interval-ms", "50"), ("use_logical_dp_groups", "false"),
    ("max_tunid", "4096"), ("ignore_lsp_down", None),
    ("install_ls_lb_from_router", "true"), ("install_ls_lb_from_router", None),
)
LB_VIPS: tuple[dict[str, str], ...] = (
    {"10.0.0.10:80": "10.0.0.2:8080,10.0.0.3:8080"}, {"10.0.0.11": "10.0.0.4"},
    {"[fd00::10]:80": "[fd00::2]:80"}, {"10.0.0.12:53": ""},
)
ACL_MATCHES = ("ip4", "inport == \"p0\"", "ip4.dst == $as0", "outport == @pg0")
ACL_ACTIONS = ("allow", "allow-related", "drop", "reject")
# Routes: two on one prefix make an ECMP group; an output port may be another router's
# (the route's flow then lands on that router).
ROUTE_PREFIXES = ("10.9.0.0/24", "10.9.0.0/24", "0.0.0.0/0", "fd09::/64")
ROUTE_NEXTHOPS = ("10.0.0.254", "10.0.1.254", "discard", "fd00:0::fe")
POLICY_MATCHES = ("ip4.src == 10.0.0.0/24", "ip4.dst == 10.9.0.5", "ip6")
POLICY_ACTIONS: tuple[tuple[str, list[str]], ...] = (
    ("allow", []), ("drop", []), ("reroute", ["10.0.0.254"]),
    ("reroute", ["10.0.0.254", "10.0.1.254"]))
DNS_RECORDS: tuple[dict[str, str], ...] = (
    {"vm1.ovn.org": "10.0.0.2"}, {"vm2.ovn.org": "10.0.0.3 fd00::3"}, {},
)


def mac(i: int) -> str:
    return f"00:00:00:00:00:{i + 1:02x}"


@dataclass(frozen=True)
class Step:
    """One change to apply: `kind` and its picks (indices into the pools, flags)."""

    kind: str
    args: tuple[Any, ...]
    batch: bool = False  # left to accumulate with the next step (no engine run after it)

    def __repr__(self) -> str:
        """As Python that builds the step, so a falsifying example can be pasted into
        a test."""
        return f"Step({self.kind!r}, {self.args!r}{', batch=True' if self.batch else ''})"


# -- strategies -----------------------------------------------------------------------


def _idx(pool: tuple[Any, ...]) -> st.SearchStrategy[int]:
    return st.integers(0, len(pool) - 1)


Drawn = st.SearchStrategy[tuple[str, tuple[Any, ...]]]


def _step(kind: str, *args: st.SearchStrategy[Any]) -> Drawn:
    return st.tuples(st.just(kind), st.tuples(*args))


NB_KINDS: dict[str, Drawn] = {
    "ls-add": _step("ls-add", _idx(SWITCHES), st.sampled_from(("", "10.0.0.0/24", "10.1.0.0/29")),
                    st.integers(0, 2)),
    "ls-del": _step("ls-del", _idx(SWITCHES)),
    "lsp-add": _step("lsp-add", _idx(SWITCHES), _idx(PORTS), _idx(LSP_TYPES),
                     st.integers(0, 7), st.booleans(), _idx(LSP_OPTIONS)),
    "lsp-del": _step("lsp-del", _idx(PORTS)),
    "lsp-move": _step("lsp-move", _idx(PORTS), _idx(SWITCHES)),
    "lsp-readd": _step("lsp-readd", _idx(PORTS), _idx(SWITCHES), st.integers(0, 7)),
    "rename": _step("rename", st.sampled_from(("Logical_Switch_Port", "Logical_Switch",
                                               "Logical_Router_Port")),
                    st.integers(0, 7), st.integers(0, 7)),
    "lsp-set": _step("lsp-set", _idx(PORTS), st.sampled_from(
        ("type", "addresses", "options", "port_security", "enabled", "tag_request",
         "parent_name", "ha_chassis_group")), st.integers(0, 8)),
    "lr-add": _step("lr-add", _idx(ROUTERS), st.integers(0, 6)),
    "lr-del": _step("lr-del", _idx(ROUTERS)),
    "lrp-add": _step("lrp-add", _idx(ROUTERS), _idx(ROUTER_PORTS), st.integers(0, 3),
                     st.booleans()),
    "lrp-del": _step("lrp-del", _idx(ROUTER_PORTS)),
    "nat-add": _step("nat-add", _idx(ROUTERS), st.sampled_from(("snat", "dnat", "dnat_and_snat")),
                     st.integers(0, 2), st.booleans()),
    "nat-del": _step("nat-del", st.integers(0, 3)),
    "lrp-set": _step("lrp-set", _idx(ROUTER_PORTS), st.sampled_from(
        ("networks", "mac", "options", "enabled", "peer", "ha_chassis_group")),
        st.integers(0, 3)),
    "route-add": _step("route-add", _idx(ROUTERS), _idx(ROUTE_PREFIXES), _idx(ROUTE_NEXTHOPS),
                       st.integers(0, len(ROUTER_PORTS)), st.booleans()),
    "route-set": _step("route-set", st.integers(0, 3), _idx(ROUTE_NEXTHOPS)),
    "route-del": _step("route-del", st.integers(0, 3)),
    "policy-add": _step("policy-add", _idx(ROUTERS), st.sampled_from((100, 200)),
                        _idx(POLICY_MATCHES), _idx(POLICY_ACTIONS)),
    "policy-del": _step("policy-del", st.integers(0, 3)),
    "lrp-gw": _step("lrp-gw", _idx(ROUTER_PORTS), _idx(CHASSIS), st.integers(0, 3)),
    "lrp-gw-del": _step("lrp-gw-del", _idx(ROUTER_PORTS), _idx(CHASSIS)),
    "hag-add": _step("hag-add", _idx(HA_GROUPS), st.lists(_idx(CHASSIS), max_size=3,
                                                          unique=True)),
    "hag-del": _step("hag-del", _idx(HA_GROUPS)),
    "acl-add": _step("acl-add", st.booleans(), st.integers(0, 2), st.booleans(),
                     _idx(ACL_MATCHES), _idx(ACL_ACTIONS), st.sampled_from((0, 1001))),
    "acl-del": _step("acl-del", st.integers(0, 3)),
    "lb-add": _step("lb-add", _idx(LBS), _idx(LB_VIPS), st.sampled_from(("tcp", "udp", ""))),
    "lb-del": _step("lb-del", _idx(LBS)),
    "lb-attach": _step("lb-attach", _idx(LBS), st.sampled_from(("switch", "router", "group")),
                       st.integers(0, 2), st.booleans()),
    "lbg-attach": _step("lbg-attach", st.sampled_from(("switch", "router")), st.integers(0, 2),
                        st.booleans()),
    "pg-add": _step("pg-add", _idx(PORT_GROUPS), st.lists(_idx(PORTS), max_size=3, unique=True)),
    "pg-del": _step("pg-del", _idx(PORT_GROUPS)),
    "as-add": _step("as-add", _idx(ADDRESS_SETS), st.lists(
        st.sampled_from(("10.0.0.1", "10.0.0.0/24", "fd00::1")), max_size=2, unique=True)),
    "as-del": _step("as-del", _idx(ADDRESS_SETS)),
    "dns-add": _step("dns-add", _idx(SWITCHES), _idx(DNS_RECORDS)),
    "dns-set": _step("dns-set", st.integers(0, 2), _idx(DNS_RECORDS)),
    "dns-del": _step("dns-del", st.integers(0, 2)),
    "meter-add": _step("meter-add", _idx(METERS), st.sampled_from(("kbps", "pktps")),
                       st.integers(1, 3), st.booleans()),
    "meter-del": _step("meter-del", _idx(METERS)),
    "nb-option": _step("nb-option", _idx(NB_OPTIONS)),
    "nb-cfg": _step("nb-cfg"),
}

SB_KINDS: dict[str, Drawn] = {
    "chassis-add": _step("chassis-add", _idx(CHASSIS), st.integers(0, 4)),
    "chassis-del": _step("chassis-del", _idx(CHASSIS)),
    "claim": _step("claim", _idx(PORTS), _idx(CHASSIS), st.booleans()),
    "release": _step("release", _idx(PORTS)),
    "set-up": _step("set-up", _idx(PORTS), st.booleans()),
    "cp-cfg": _step("cp-cfg", _idx(CHASSIS)),
    "igmp-join": _step("igmp-join", _idx(PORTS), _idx(CHASSIS),
                       st.sampled_from(("239.0.0.1", "239.0.0.2", "ff0e::1"))),
    "igmp-leave": _step("igmp-leave", st.integers(0, 3)),
    "mac-learn": _step("mac-learn", st.integers(0, 7), st.integers(0, 2)),
    "fdb-learn": _step("fdb-learn", st.integers(0, 7), st.integers(0, 2)),
    # Someone else's writes to rows northd owns (an operator, a stale northd): deleted
    # bindings and multicast groups, tunnel keys moved; northd must put them back.
    "sb-delete": _step("sb-delete", st.sampled_from(("Port_Binding", "Multicast_Group",
                                                     "IP_Multicast", "Address_Set")),
                       st.integers(0, 7)),
    "sb-rekey": _step("sb-rekey", st.sampled_from(("Port_Binding", "Datapath_Binding")),
                      st.integers(0, 7), st.sampled_from((1, 2, 40, 41))),
    # Not a write: the SB transaction of the next engine run fails (a TRY_AGAIN, a lost
    # connection), so the run after it is a recompute, as the daemon forces.
    "lose-commit": _step("lose-commit"),
}

ALL_KINDS = {**NB_KINDS, **SB_KINDS}


# Where every sequence starts: two switches (one with a subnet for dynamic addresses),
# a static, a dynamic and an unknown-address port, a router connected to sw1, two
# chassis (one with port-up-notif), a claimed port, a load balancer on sw0, a port group
# and an address set. Random steps then mostly find what they modify or delete.
BASE = (
    Step("ls-add", (0, "10.0.0.0/24", False)), Step("ls-add", (1, "", False)),
    Step("lsp-add", (0, 0, 0, 3, True, 0)), Step("lsp-add", (0, 1, 0, 4, False, 0)),
    Step("lsp-add", (1, 2, 0, 1, False, 0)), Step("lr-add", (0, 0)),
    Step("lrp-add", (0, 0, 0, False)), Step("lsp-add", (1, 3, 2, 6, False, 4)),
    Step("chassis-add", (0, False)), Step("chassis-add", (1, True)),
    Step("claim", (1, 0, True)), Step("lb-add", (0, 0, "tcp")),
    Step("lb-attach", (0, "switch", 0, True)), Step("pg-add", (0, [0, 2])),
    Step("as-add", (0, ["10.0.0.1"])),
)
# The same with lrp0 a distributed gateway port on both chassis: its HA group has two
# chassis, so every claim moves its `ref_chassis` (no incremental claim handling).
BASE_HA = (*BASE, Step("lrp-gw", (0, 0, 1)), Step("lrp-gw", (0, 1, 2)))
BASES = {"plain": BASE, "ha": BASE_HA}


def steps(max_size: int = 16, exclude: frozenset[str] = frozenset(), batch_one_in: int = 5
          ) -> st.SearchStrategy[list[Step]]:
    """Step sequences where an NB step (of 40 kinds) is as likely as an SB one (of 13:
    claims and releases come often), and one step in `batch_one_in` (on average) is
    batched with the next; `exclude` leaves kinds out."""
    nb = st.one_of(*(s for k, s in NB_KINDS.items() if k not in exclude))
    sb = st.one_of(*(s for k, s in SB_KINDS.items() if k not in exclude))
    one = st.tuples(st.one_of(nb, sb), st.integers(0, batch_one_in - 1)).map(
        lambda t: Step(t[0][0], t[0][1], batch=t[1] == 0))
    return st.lists(one, min_size=1, max_size=max_size)


# -- applying ---------------------------------------------------------------------------


def find(db: LocalDb, table: str, value: Any, column: str = "name") -> str | None:
    """The UUID of the row of `table` whose `column` is `value` (the lowest if several)."""
    hits = sorted(u for u, r in db.tables[table].rows.items() if getattr(r, column) == value)
    return hits[0] if hits else None


def _where(uuid: str) -> list[Any]:
    return [["_uuid", "==", ["uuid", uuid]]]


def _update(db: LocalDb, table: str, uuid: str, **cols: Any) -> dict[str, Any]:
    return {"op": "update", "table": table, "where": _where(uuid), "row": db.json_row(table, cols)}


def _mutate(table: str, uuid: str, column: str, op: str, refs: list[Any]) -> dict[str, Any]:
    return {"op": "mutate", "table": table, "where": _where(uuid),
            "mutations": [[column, op, ["set", refs]]]}


def _insert(db: LocalDb, table: str, uuid_name: str | None = None, /,
            **cols: Any) -> dict[str, Any]:
    op: dict[str, Any] = {"op": "insert", "table": table, "row": db.json_row(table, cols)}
    if uuid_name is not None:
        op["uuid-name"] = uuid_name
    return op


def _sorted_uuids(db: LocalDb, table: str) -> list[str]:
    return sorted(db.tables[table].rows)


def existing(db: LocalDb, table: str, i: int, column: str = "name") -> tuple[str, str] | None:
    """The `i`-th (modulo their number) row of `table` in the order of `column`: its
    UUID and that column's value; None if the table is empty."""
    rows = sorted((getattr(r, column), u) for u, r in db.tables[table].rows.items())
    if not rows:
        return None
    value, uuid = rows[i % len(rows)]
    return uuid, value


class Applier:
    """Applies steps to an NB and an SB `LocalDb`; each returns its description."""

    def __init__(self, nb: LocalDb, sb: LocalDb,
                 on_nb: Callable[[Any], None], on_sb: Callable[[Any], None],
                 now_ms: Callable[[], int] = lambda: 0) -> None:
        self.nb, self.sb = nb, sb
        self.now_ms = now_ms  # what ovn-controller stamps learned MAC bindings with
        self._on_nb, self._on_sb = on_nb, on_sb
        self.refused = 0
        self.last_port: str | None = None
        self.lose_commit = False

    def apply(self, step: Step) -> str | None:
        fn = getattr(self, "_" + step.kind.replace("-", "_"))
        try:
            text: str | None = fn(*step.args)
        except TransactError as e:
            self.refused += 1
            return f"{step.kind} refused: {e.error}"
        return text

    def _nb(self, ops: list[dict[str, Any]]) -> None:
        self._on_nb(self.nb.transact(ops))

    def _sb(self, ops: list[dict[str, Any]]) -> None:
        self._on_sb(self.sb.transact(ops))

    # -- switches and their ports ---------------------------------------------------------

    def _ls_add(self, i: int, subnet: str, extra: int) -> str:
        """A switch (or new other_config of one): IGMP snooping (1), a requested
        tunnel key that may clash with one given already (2)."""
        name = SWITCHES[i]
        other: dict[str, str] = {"subnet": subnet} if subnet else {}
        if extra == 1:
            other["mcast_snoop"] = "true"
        elif extra == 2:
            other["requested-tnl-key"] = "2"
        uuid = find(self.nb, "Logical_Switch", name)
        if uuid is None:
            self._nb([_insert(self.nb, "Logical_Switch", name=name, other_config=other)])
            return f"ls-add {name} other_config={other}"
        self._nb([_update(self.nb, "Logical_Switch", uuid, other_config=other)])
        return f"set Logical_Switch {name} other_config={other}"

    def _ls_del(self, i: int) -> str | None:
        hit = existing(self.nb, "Logical_Switch", i)
        if hit is None:
            return None
        self._nb([{"op": "delete", "table": "Logical_Switch", "where": _where(hit[0])}])
        return f"ls-del {hit[1]}"

    def _lsp_addresses(self, pick: int, port: int) -> list[str]:
        m = mac(port)
        return [[], ["unknown"], [m], [f"{m} 10.0.0.{port + 2}"], ["dynamic"],
                [f"{m} dynamic"], ["router"], [f"{m} 10.0.0.{port + 2} fd00::{port + 2}"],
                ][pick % 8]

    def _lsp_add(self, sw: int, port: int, type_: int, addr: int, psec: bool,
                 opts: int) -> str | None:
        hit = existing(self.nb, "Logical_Switch", sw)
        name = PORTS[port]
        if hit is None or find(self.nb, "Logical_Switch_Port", name) is not None:
            return None
        ls, ls_name = hit
        addresses = self._lsp_addresses(addr, port)
        cols: dict[str, Any] = {"name": name, "type": LSP_TYPES[type_], "addresses": addresses,
                                "options": LSP_OPTIONS[opts]}
        if psec and addresses and addresses[0][:1] == "0":
            cols["port_security"] = [addresses[0]]
        self._nb([_insert(self.nb, "Logical_Switch_Port", "p", **cols),
                  _mutate("Logical_Switch", ls, "ports", "insert", [["named-uuid", "p"]])])
        shown = " ".join(f"{k}={v!r}" for k, v in cols.items() if k != "name" and v)
        return f"lsp-add {ls_name} {name} {shown}".rstrip()

    def _lsp_del(self, port: int) -> str | None:
        hit = existing(self.nb, "Logical_Switch_Port", port)
        if hit is None:
            return None
        uuid = hit[0]
        self._nb([{"op": "mutate", "table": "Logical_Switch",
                   "where": [["ports", "includes", ["uuid", uuid]]],
                   "mutations": [["ports", "delete", ["set", [["uuid", uuid]]]]]}])
        return f"lsp-del {hit[1]}"

    def _lsp_move(self, i: int, sw: int) -> str | None:
        """A port moved to another switch in one transaction (its binding must follow
        to the new datapath, without the old claim)."""
        hit = existing(self.nb, "Logical_Switch_Port", i)
        target = existing(self.nb, "Logical_Switch", sw)
        if hit is None or target is None:
            return None
        uuid, name = hit
        if uuid in self.nb.tables["Logical_Switch"].rows[target[0]].data["ports"]:
            return None
        self._nb([{"op": "mutate", "table": "Logical_Switch",
                   "where": [["ports", "includes", ["uuid", uuid]]],
                   "mutations": [["ports", "delete", ["set", [["uuid", uuid]]]]]},
                  _mutate("Logical_Switch", target[0], "ports", "insert", [["uuid", uuid]])])
        return f"move {name} to {target[1]}"

    def _lsp_readd(self, i: int, sw: int, addr: int) -> str | None:
        """A port deleted and made again under its name (a new row, other addresses) on
        a switch, in one transaction (`lsp-del p -- lsp-add sw p`): on its own switch
        it keeps its binding, on another its binding is made anew."""
        hit = existing(self.nb, "Logical_Switch_Port", i)
        target = existing(self.nb, "Logical_Switch", sw)
        if hit is None or target is None:
            return None
        uuid, name = hit
        old = self.nb.tables["Logical_Switch_Port"].rows[uuid]
        addresses = self._lsp_addresses(addr, PORTS.index(name))
        self._nb([{"op": "mutate", "table": "Logical_Switch",
                   "where": [["ports", "includes", ["uuid", uuid]]],
                   "mutations": [["ports", "delete", ["set", [["uuid", uuid]]]]]},
                  _insert(self.nb, "Logical_Switch_Port", "p", name=name,
                          type=old.value("type"), addresses=addresses),
                  _mutate("Logical_Switch", target[0], "ports", "insert",
                          [["named-uuid", "p"]])])
        return f"lsp-del {name} -- lsp-add {target[1]} {name} addresses={addresses!r}"

    def _rename(self, table: str, i: int, new: int) -> str | None:
        """A row renamed to a free name of its pool (a port's binding is named after
        it, a datapath's external_ids carry the switch's name)."""
        pool = {"Logical_Switch_Port": PORTS, "Logical_Switch": SWITCHES,
                "Logical_Router_Port": ROUTER_PORTS}[table]
        hit = existing(self.nb, table, i)
        name = pool[new % len(pool)]
        if hit is None or find(self.nb, table, name) is not None:
            return None
        self._nb([_update(self.nb, table, hit[0], name=name)])
        return f"rename {table} {hit[1]} to {name}"

    def _lsp_set(self, i: int, column: str, pick: int) -> str | None:
        hit = existing(self.nb, "Logical_Switch_Port", i)
        if hit is None:
            return None
        uuid, name = hit
        port = PORTS.index(name)
        value: Any
        if column == "type":
            value = LSP_TYPES[pick % len(LSP_TYPES)]
        elif column == "addresses":
            value = self._lsp_addresses(pick, port)
        elif column == "options":
            value = LSP_OPTIONS[pick % len(LSP_OPTIONS)]
        elif column == "port_security":
            value = [[], [mac(port)], [f"{mac(port)} 10.0.0.{port + 2}"]][pick % 3]
        elif column == "enabled":
            value = [[], [False], [True]][pick % 3]
        elif column == "tag_request":
            value = [[], [0], [7]][pick % 3]
        elif column == "parent_name":
            value = [[], ["p0"], ["p9"]][pick % 3]
        else:
            group = find(self.nb, "HA_Chassis_Group", HA_GROUPS[pick % len(HA_GROUPS)])
            refs = [] if group is None or pick % 3 == 0 else [["uuid", group]]
            self._nb([{"op": "update", "table": "Logical_Switch_Port", "where": _where(uuid),
                       "row": {"ha_chassis_group": ["set", refs]}}])
            return f"set Logical_Switch_Port {name} ha_chassis_group={refs}"
        self._nb([_update(self.nb, "Logical_Switch_Port", uuid, **{column: value})])
        return f"set Logical_Switch_Port {name} {column}={value!r}"

    # -- routers ----------------------------------------------------------------------

    def _lr_add(self, i: int, pick: int) -> str:
        name = ROUTERS[i]
        # (5 races a switch's request for key 2; 6 asks for the first switch's key)
        options = [{}, {"chassis": "ch0"}, {"chassis": "ch1", "always_learn_from_arp_request":
                                               "false"}, {}, {"mac_binding_age_threshold": "3"},
                   {"requested-tnl-key": "2"}, {"requested-tnl-key": "1"}][pick]
        enabled: list[bool] = [False] if pick == 3 else []
        uuid = find(self.nb, "Logical_Router", name)
        if uuid is None:
            self._nb([_insert(self.nb, "Logical_Router", name=name, options=options,
                              enabled=enabled)])
            return f"lr-add {name} options={options} enabled={enabled}"
        self._nb([_update(self.nb, "Logical_Router", uuid, options=options, enabled=enabled)])
        return f"set Logical_Router {name} options={options} enabled={enabled}"

    def _lr_del(self, i: int) -> str | None:
        hit = existing(self.nb, "Logical_Router", i)
        if hit is None:
            return None
        self._nb([{"op": "delete", "table": "Logical_Router", "where": _where(hit[0])}])
        return f"lr-del {hit[1]}"

    @staticmethod
    def _networks(pick: int, port: int) -> list[str]:
        return [[f"10.0.{port}.1/24"], [f"10.0.{port}.1/24", f"fd00:{port}::1/64"],
                [f"192.168.{port}.1/24"], [f"10.0.{port}.1/24"]][pick]

    def _lrp_add(self, lr: int, port: int, pick: int, peer: bool) -> str | None:
        hit = existing(self.nb, "Logical_Router", lr)
        name = ROUTER_PORTS[port]
        if hit is None or find(self.nb, "Logical_Router_Port", name) is not None:
            return None
        router, lr_name = hit
        cols: dict[str, Any] = {"name": name, "mac": f"00:00:00:00:ff:{port + 1:02x}",
                                "networks": self._networks(pick, port)}
        if peer:
            cols["peer"] = [ROUTER_PORTS[(port + 1) % len(ROUTER_PORTS)]]
        if pick == 3:  # (the key the router's first port usually holds)
            cols["options"] = {"requested-tnl-key": "1"}
        self._nb([_insert(self.nb, "Logical_Router_Port", "r", **cols),
                  _mutate("Logical_Router", router, "ports", "insert", [["named-uuid", "r"]])])
        return f"lrp-add {lr_name} {name} {cols['mac']} {' '.join(cols['networks'])}" + (
            f" peer={cols['peer'][0]}" if peer else "") + (
            " options:requested-tnl-key=1" if pick == 3 else "")

    def _lrp_del(self, port: int) -> str | None:
        hit = existing(self.nb, "Logical_Router_Port", port)
        if hit is None:
            return None
        uuid = hit[0]
        self._nb([{"op": "mutate", "table": "Logical_Router",
                   "where": [["ports", "includes", ["uuid", uuid]]],
                   "mutations": [["ports", "delete", ["set", [["uuid", uuid]]]]]}])
        return f"lrp-del {hit[1]}"

    def _lrp_set(self, i: int, column: str, pick: int) -> str | None:
        hit = existing(self.nb, "Logical_Router_Port", i)
        if hit is None:
            return None
        uuid, name = hit
        port = ROUTER_PORTS.index(name)
        value: Any
        if column == "networks":
            value = self._networks(pick, port)
        elif column == "mac":
            value = f"00:00:00:00:fe:{pick + 1:02x}"
        elif column == "options":
            value = [{}, {"redirect-type": "bridged"}, {"reside-on-redirect-chassis": "true"},
                     {"gateway_mtu": "1400", "requested-tnl-key": "1"}][pick]
        elif column == "enabled":
            value = [[], [False], [True], []][pick]
        elif column == "peer":
            value = [[], [ROUTER_PORTS[(port + 1) % len(ROUTER_PORTS)]], ["nowhere"], []][pick]
        else:
            group = find(self.nb, "HA_Chassis_Group", HA_GROUPS[pick % len(HA_GROUPS)])
            refs = [] if group is None or pick >= 2 else [["uuid", group]]
            self._nb([{"op": "update", "table": "Logical_Router_Port", "where": _where(uuid),
                       "row": {"ha_chassis_group": ["set", refs]}}])
            return f"set Logical_Router_Port {name} ha_chassis_group={refs}"
        self._nb([_update(self.nb, "Logical_Router_Port", uuid, **{column: value})])
        return f"set Logical_Router_Port {name} {column}={value!r}"

    def _lrp_gw(self, port: int, ch: int, prio: int) -> str | None:
        hit = existing(self.nb, "Logical_Router_Port", port)
        if hit is None:
            return None
        lrp, name = hit
        gc_name = f"{name}-{CHASSIS[ch]}"
        gc = find(self.nb, "Gateway_Chassis", gc_name)
        if gc is not None:
            self._nb([_update(self.nb, "Gateway_Chassis", gc, priority=prio)])
            return f"lrp-set-gateway-chassis {name} {CHASSIS[ch]} {prio} (again)"
        self._nb([_insert(self.nb, "Gateway_Chassis", "g", name=gc_name,
                          chassis_name=CHASSIS[ch], priority=prio),
                  _mutate("Logical_Router_Port", lrp, "gateway_chassis", "insert",
                          [["named-uuid", "g"]])])
        return f"lrp-set-gateway-chassis {name} {CHASSIS[ch]} {prio}"

    def _lrp_gw_del(self, port: int, ch: int) -> str | None:
        hit = existing(self.nb, "Gateway_Chassis", port * len(CHASSIS) + ch)
        if hit is None:
            return None
        gc, gc_name = hit
        lrp = next(u for u, r in self.nb.tables["Logical_Router_Port"].rows.items()
                   if gc in r.data["gateway_chassis"])
        self._nb([_mutate("Logical_Router_Port", lrp, "gateway_chassis", "delete",
                          [["uuid", gc]])])
        name, chassis = gc_name.rsplit("-", 1)
        return f"lrp-del-gateway-chassis {name} {chassis}"

    def _hag_add(self, i: int, chassis: list[int]) -> str:
        name = HA_GROUPS[i]
        ops: list[dict[str, Any]] = [
            _insert(self.nb, "HA_Chassis", f"h{n}", chassis_name=CHASSIS[c], priority=10 + n)
            for n, c in enumerate(chassis)]
        refs = [["named-uuid", f"h{n}"] for n in range(len(chassis))]
        uuid = find(self.nb, "HA_Chassis_Group", name)
        if uuid is None:
            ops.append({"op": "insert", "table": "HA_Chassis_Group",
                        "row": {"name": name, "ha_chassis": ["set", refs]}})
        else:
            ops.append({"op": "update", "table": "HA_Chassis_Group", "where": _where(uuid),
                        "row": {"ha_chassis": ["set", refs]}})
        self._nb(ops)
        return f"ha-chassis-group {name} = {[CHASSIS[c] for c in chassis]}"

    def _hag_del(self, i: int) -> str | None:
        hit = existing(self.nb, "HA_Chassis_Group", i)
        if hit is None:
            return None
        uuid = hit[0]
        ops: list[dict[str, Any]] = [
            {"op": "mutate", "table": t, "where": [["ha_chassis_group", "==", ["uuid", uuid]]],
             "mutations": [["ha_chassis_group", "delete", ["set", [["uuid", uuid]]]]]}
            for t in ("Logical_Switch_Port", "Logical_Router_Port")]
        ops.append({"op": "delete", "table": "HA_Chassis_Group", "where": _where(uuid)})
        self._nb(ops)
        return f"ha-chassis-group-del {hit[1]}"

    def _nat_add(self, lr: int, type_: str, ip: int, port: bool) -> str | None:
        """A NAT rule; a distributed dnat_and_snat names a port and its MAC (nat_addresses
        of the gateway port)."""
        hit = existing(self.nb, "Logical_Router", lr)
        if hit is None:
            return None
        cols: dict[str, Any] = {"type": type_, "external_ip": f"172.16.0.{ip + 10}",
                                "logical_ip": "10.0.0.0/24" if type_ == "snat"
                                else f"10.0.0.{ip + 2}"}
        if port and type_ == "dnat_and_snat":
            cols["logical_port"] = [PORTS[ip]]
            cols["external_mac"] = [f"00:00:00:00:aa:{ip + 1:02x}"]
        self._nb([_insert(self.nb, "NAT", "n", **cols),
                  _mutate("Logical_Router", hit[0], "nat", "insert", [["named-uuid", "n"]])])
        return f"lr-nat-add {hit[1]} {type_} {cols['external_ip']} {cols['logical_ip']}" + (
            f" {PORTS[ip]} {cols['external_mac'][0]}" if "logical_port" in cols else "")

    def _nat_del(self, i: int) -> str | None:
        rows = _sorted_uuids(self.nb, "NAT")
        if not rows:
            return None
        uuid = rows[i % len(rows)]
        self._nb([{"op": "mutate", "table": "Logical_Router",
                   "where": [["nat", "includes", ["uuid", uuid]]],
                   "mutations": [["nat", "delete", ["set", [["uuid", uuid]]]]]}])
        return f"lr-nat-del #{i % len(rows)}"

    # -- routes and policies ----------------------------------------------------------

    def _route_add(self, lr: int, prefix: int, nexthop: int, port: int, src: bool
                   ) -> str | None:
        """A static route; `port` 0 is none, else a router port's name (of any router,
        or none at all: the port may not exist)."""
        hit = existing(self.nb, "Logical_Router", lr)
        if hit is None:
            return None
        cols: dict[str, Any] = {"ip_prefix": ROUTE_PREFIXES[prefix],
                                "nexthop": ROUTE_NEXTHOPS[nexthop]}
        if port:
            cols["output_port"] = [ROUTER_PORTS[port - 1]]
        if src:
            cols["policy"] = ["src-ip"]
        self._nb([_insert(self.nb, "Logical_Router_Static_Route", "s", **cols),
                  _mutate("Logical_Router", hit[0], "static_routes", "insert",
                          [["named-uuid", "s"]])])
        return (f"lr-route-add {hit[1]} {cols['ip_prefix']} {cols['nexthop']}"
                + (f" {cols['output_port'][0]}" if port else "")
                + (" --policy=src-ip" if src else ""))

    def _route_set(self, i: int, nexthop: int) -> str | None:
        rows = _sorted_uuids(self.nb, "Logical_Router_Static_Route")
        if not rows:
            return None
        uuid = rows[i % len(rows)]
        self._nb([_update(self.nb, "Logical_Router_Static_Route", uuid,
                          nexthop=ROUTE_NEXTHOPS[nexthop])])
        return f"set Logical_Router_Static_Route #{i % len(rows)} nexthop={ROUTE_NEXTHOPS[nexthop]}"

    def _route_del(self, i: int) -> str | None:
        return self._unlink("Logical_Router_Static_Route", "static_routes", i, "lr-route-del")

    def _policy_add(self, lr: int, priority: int, match: int, action: int) -> str | None:
        hit = existing(self.nb, "Logical_Router", lr)
        if hit is None:
            return None
        verb, nexthops = POLICY_ACTIONS[action]
        self._nb([_insert(self.nb, "Logical_Router_Policy", "p", priority=priority,
                          match=POLICY_MATCHES[match], action=verb, nexthops=nexthops),
                  _mutate("Logical_Router", hit[0], "policies", "insert",
                          [["named-uuid", "p"]])])
        return (f"lr-policy-add {hit[1]} {priority} '{POLICY_MATCHES[match]}' {verb} "
                + ",".join(nexthops))

    def _policy_del(self, i: int) -> str | None:
        return self._unlink("Logical_Router_Policy", "policies", i, "lr-policy-del")

    def _unlink(self, table: str, column: str, i: int, verb: str) -> str | None:
        """The `i`-th row of `table` (UUID order) unlinked from its routers (and so
        garbage collected)."""
        rows = _sorted_uuids(self.nb, table)
        if not rows:
            return None
        uuid = rows[i % len(rows)]
        self._nb([{"op": "mutate", "table": "Logical_Router",
                   "where": [[column, "includes", ["uuid", uuid]]],
                   "mutations": [[column, "delete", ["set", [["uuid", uuid]]]]]}])
        return f"{verb} #{i % len(rows)}"

    # -- ACLs, load balancers, groups, sets, DNS, meters --------------------------------

    def _acl_add(self, on_pg: bool, i: int, to_lport: bool, match: int, action: int,
                 prio: int) -> str | None:
        table = "Port_Group" if on_pg else "Logical_Switch"
        hit = existing(self.nb, table, i)
        if hit is None:
            return None
        owner, owner_name = hit
        direction = "to-lport" if to_lport else "from-lport"
        self._nb([_insert(self.nb, "ACL", "a", priority=prio, direction=direction,
                          match=ACL_MATCHES[match], action=ACL_ACTIONS[action]),
                  _mutate(table, owner, "acls", "insert", [["named-uuid", "a"]])])
        return (f"acl-add {owner_name} {direction} {prio} "
                f"{ACL_MATCHES[match]!r} {ACL_ACTIONS[action]}")

    def _acl_del(self, i: int) -> str | None:
        acls = _sorted_uuids(self.nb, "ACL")
        if not acls:
            return None
        uuid = acls[i % len(acls)]
        self._nb([{"op": "mutate", "table": t, "where": [["acls", "includes", ["uuid", uuid]]],
                   "mutations": [["acls", "delete", ["set", [["uuid", uuid]]]]]}
                  for t in ("Logical_Switch", "Port_Group")])
        return f"acl-del #{i % len(acls)}"

    def _lb_add(self, i: int, vips: int, proto: str) -> str:
        name = LBS[i]
        cols: dict[str, Any] = {"vips": LB_VIPS[vips], "protocol": [proto] if proto else []}
        uuid = find(self.nb, "Load_Balancer", name)
        if uuid is None:
            self._nb([_insert(self.nb, "Load_Balancer", name=name, **cols)])
            return f"lb-add {name} {LB_VIPS[vips]} {proto}".rstrip()
        self._nb([_update(self.nb, "Load_Balancer", uuid, **cols)])
        return f"set Load_Balancer {name} vips={LB_VIPS[vips]} protocol={proto!r}"

    def _lb_del(self, i: int) -> str | None:
        hit = existing(self.nb, "Load_Balancer", i)
        if hit is None:
            return None
        self._nb([{"op": "delete", "table": "Load_Balancer", "where": _where(hit[0])}])
        return f"lb-del {hit[1]}"

    def _target(self, kind: str, i: int) -> tuple[str, str, str] | None:
        table = {"switch": "Logical_Switch", "router": "Logical_Router"}[kind]
        hit = existing(self.nb, table, i)
        return None if hit is None else (table, hit[0], hit[1])

    def _group(self) -> tuple[list[dict[str, Any]], list[Any]]:
        """The operations that create the LB group if missing, and a reference to it."""
        uuid = find(self.nb, "Load_Balancer_Group", LB_GROUPS[0])
        if uuid is not None:
            return [], ["uuid", uuid]
        return [_insert(self.nb, "Load_Balancer_Group", "g", name=LB_GROUPS[0])], \
            ["named-uuid", "g"]

    def _lb_attach(self, i: int, kind: str, j: int, attach: bool) -> str | None:
        lb_hit = existing(self.nb, "Load_Balancer", i)
        if kind == "group":
            ops, ref = self._group()
            target: tuple[str, Any, str] | None = ("Load_Balancer_Group", ref, LB_GROUPS[0])
        else:
            ops, target = [], self._target(kind, j)
        if lb_hit is None or target is None:
            return None
        lb, lb_name = lb_hit
        table, where, name = target
        ops.append({"op": "mutate", "table": table,
                    "where": [["_uuid", "==", where if isinstance(where, list)
                               else ["uuid", where]]],
                    "mutations": [["load_balancer", "insert" if attach else "delete",
                                   ["set", [["uuid", lb]]]]]})
        self._nb(ops)
        return f"{'attach' if attach else 'detach'} {lb_name} {kind} {name}"

    def _lbg_attach(self, kind: str, j: int, attach: bool) -> str | None:
        target = self._target(kind, j)
        if target is None:
            return None
        ops, ref = self._group()
        table, uuid, name = target
        ops.append({"op": "mutate", "table": table, "where": _where(uuid),
                    "mutations": [["load_balancer_group", "insert" if attach else "delete",
                                   ["set", [ref]]]]})
        self._nb(ops)
        return f"{'attach' if attach else 'detach'} {LB_GROUPS[0]} {kind} {name}"

    def _pg_add(self, i: int, ports: list[int]) -> str:
        name = PORT_GROUPS[i]
        refs = [["uuid", u] for u in (find(self.nb, "Logical_Switch_Port", PORTS[p])
                                      for p in ports) if u is not None]
        uuid = find(self.nb, "Port_Group", name)
        row = {"ports": ["set", refs]}
        if uuid is None:
            self._nb([{"op": "insert", "table": "Port_Group", "row": {"name": name, **row}}])
        else:
            self._nb([{"op": "update", "table": "Port_Group", "where": _where(uuid), "row": row}])
        return f"pg-set {name} {[PORTS[p] for p in ports]}"

    def _pg_del(self, i: int) -> str | None:
        hit = existing(self.nb, "Port_Group", i)
        if hit is None:
            return None
        self._nb([{"op": "delete", "table": "Port_Group", "where": _where(hit[0])}])
        return f"pg-del {hit[1]}"

    def _as_add(self, i: int, addresses: list[str]) -> str:
        name = ADDRESS_SETS[i]
        uuid = find(self.nb, "Address_Set", name)
        if uuid is None:
            self._nb([_insert(self.nb, "Address_Set", name=name, addresses=addresses)])
        else:
            self._nb([_update(self.nb, "Address_Set", uuid, addresses=addresses)])
        return f"set Address_Set {name} addresses={addresses}"

    def _as_del(self, i: int) -> str | None:
        hit = existing(self.nb, "Address_Set", i)
        if hit is None:
            return None
        self._nb([{"op": "delete", "table": "Address_Set", "where": _where(hit[0])}])
        return f"as-del {hit[1]}"

    def _dns_add(self, sw: int, records: int) -> str | None:
        hit = existing(self.nb, "Logical_Switch", sw)
        if hit is None:
            return None
        ls, ls_name = hit
        self._nb([_insert(self.nb, "DNS", "d", records=DNS_RECORDS[records]),
                  _mutate("Logical_Switch", ls, "dns_records", "insert",
                          [["named-uuid", "d"]])])
        return f"dns-add {ls_name} {DNS_RECORDS[records]}"

    def _dns_set(self, i: int, records: int) -> str | None:
        rows = _sorted_uuids(self.nb, "DNS")
        if not rows:
            return None
        self._nb([_update(self.nb, "DNS", rows[i % len(rows)], records=DNS_RECORDS[records])])
        return f"set DNS #{i % len(rows)} records={DNS_RECORDS[records]}"

    def _dns_del(self, i: int) -> str | None:
        rows = _sorted_uuids(self.nb, "DNS")
        if not rows:
            return None
        self._nb([{"op": "delete", "table": "DNS", "where": _where(rows[i % len(rows)])}])
        return f"dns-del #{i % len(rows)}"

    def _meter_add(self, i: int, unit: str, rate: int, fair: bool) -> str:
        name = METERS[i]
        ops = [_insert(self.nb, "Meter_Band", "b", action="drop", rate=rate * 100,
                       burst_size=rate)]
        uuid = find(self.nb, "Meter", name)
        row = {**self.nb.json_row("Meter", {"unit": unit, "fair": [fair] if fair else []}),
               "bands": ["set", [["named-uuid", "b"]]]}
        if uuid is None:
            ops.append({"op": "insert", "table": "Meter", "row": {"name": name, **row}})
        else:
            ops.append({"op": "update", "table": "Meter", "where": _where(uuid), "row": row})
        self._nb(ops)
        return f"meter-add {name} drop {rate * 100} {unit} {rate}{' fair' if fair else ''}"

    def _meter_del(self, i: int) -> str | None:
        hit = existing(self.nb, "Meter", i)
        if hit is None:
            return None
        self._nb([{"op": "delete", "table": "Meter", "where": _where(hit[0])}])
        return f"meter-del {hit[1]}"

    # -- NB_Global --------------------------------------------------------------------

    def _nb_global(self) -> Any:
        return self.nb.tables["NB_Global"].rows[min(self.nb.tables["NB_Global"].rows)]

    def _nb_option(self, i: int) -> str:
        key, value = NB_OPTIONS[i]
        row = self._nb_global()
        options = {k: v for k, v in row.options.items() if k != key}
        if value is not None:
            options[key] = value
        self._nb([_update(self.nb, "NB_Global", row.uuid, options=options)])
        return f"set NB_Global . options:{key}={value}" if value is not None else \
            f"remove NB_Global . options {key}"

    def _nb_cfg(self) -> str:
        row = self._nb_global()
        self._nb([_update(self.nb, "NB_Global", row.uuid, nb_cfg=row.nb_cfg + 1)])
        return f"set NB_Global . nb_cfg={row.nb_cfg + 1} (--wait=sb)"

    # -- what ovn-controller writes ---------------------------------------------------------

    def _chassis_add(self, i: int, variant: int) -> str | None:
        """A chassis registering: plain (0), with port-up-notif (1), with a VXLAN encap
        (2: tunnel keys shrink), with the features that turn on MAC binding aging and
        CT mark hairpinning (3), a remote chassis (4: left out of features and hv_cfg)."""
        name = CHASSIS[i]
        if find(self.sb, "Chassis", name) is not None:
            return None
        other = [{}, {"port-up-notif": "true"}, {},
                 {"ct-no-masked-label": "true", "mac-binding-timestamp": "true",
                  "fdb-timestamp": "true"}, {"is-remote": "true"}][variant]
        encap = "vxlan" if variant == 2 else "geneve"
        ops: list[dict[str, Any]] = [
            _insert(self.sb, "Encap", "e", type=encap, ip=f"192.168.0.{i + 1}",
                    chassis_name=name, options={"csum": "true"}),
            {"op": "insert", "table": "Chassis", "uuid-name": "c",
             "row": {**self.sb.json_row("Chassis", {"name": name, "hostname": name,
                                                    "other_config": other}),
                     "encaps": ["named-uuid", "e"]}}]
        cp = find(self.sb, "Chassis_Private", name)
        if cp is None:
            ops.append({"op": "insert", "table": "Chassis_Private",
                        "row": {"name": name, "chassis": ["named-uuid", "c"]}})
        else:
            ops.append({"op": "update", "table": "Chassis_Private", "where": _where(cp),
                        "row": {"chassis": ["named-uuid", "c"]}})
        self._sb(ops)
        return f"chassis-add {name} {encap} other_config={other}"

    def _chassis_del(self, i: int) -> str | None:
        hit = existing(self.sb, "Chassis", i)
        if hit is None:
            return None
        uuid, name = hit
        ops: list[dict[str, Any]] = [{"op": "delete", "table": "Chassis", "where": _where(uuid)}]
        cp = find(self.sb, "Chassis_Private", name)
        if cp is not None:
            ops.append({"op": "delete", "table": "Chassis_Private", "where": _where(cp)})
        self._sb(ops)
        return f"chassis-del {name}"

    def _binding(self, i: int) -> tuple[str, str] | None:
        """A binding by its rank among every Port_Binding (of any type: ovn-controller
        claims router gateway and l3gateway ports too); remembered in `last_port`."""
        hit = existing(self.sb, "Port_Binding", i, "logical_port")
        self.last_port = None if hit is None else hit[1]
        return hit

    def _claim(self, port: int, ch: int, up: bool) -> str | None:
        pb = self._binding(port)
        chassis = existing(self.sb, "Chassis", ch)
        if pb is None or chassis is None:
            return None
        self._sb([{"op": "update", "table": "Port_Binding", "where": _where(pb[0]),
                   "row": {"chassis": ["uuid", chassis[0]], "up": ["set", [up]]}}])
        return f"claim {pb[1]} on {chassis[1]} up={up}"

    def _release(self, port: int) -> str | None:
        pb = self._binding(port)
        if pb is None:
            return None
        self._sb([{"op": "update", "table": "Port_Binding", "where": _where(pb[0]),
                   "row": {"chassis": ["set", []], "up": ["set", [False]]}}])
        return f"release {pb[1]}"

    def _set_up(self, port: int, up: bool) -> str | None:
        pb = self._binding(port)
        if pb is None:
            return None
        self._sb([{"op": "update", "table": "Port_Binding", "where": _where(pb[0]),
                   "row": {"up": ["set", [up]]}}])
        return f"set Port_Binding {pb[1]} up={up}"

    def _igmp_join(self, port: int, ch: int, address: str) -> str | None:
        """A chassis reporting a port's IGMP/MLD join (one group row per address,
        datapath and chassis, as ovn-controller keeps them)."""
        pb = self._binding(port)
        chassis = existing(self.sb, "Chassis", ch)
        if pb is None or chassis is None:
            return None
        dp = self.sb.tables["Port_Binding"].rows[pb[0]].data["datapath"]
        group = next((u for u, r in sorted(self.sb.tables["IGMP_Group"].rows.items())
                      if r.address == address and dp in r.data["datapath"]
                      and chassis[0] in r.data["chassis"]), None)
        if group is None:
            self._sb([{"op": "insert", "table": "IGMP_Group",
                       "row": {"address": address, "datapath": ["uuid", str(dp)],
                               "chassis": ["uuid", chassis[0]],
                               "ports": ["set", [["uuid", pb[0]]]]}}])
        else:
            self._sb([_mutate("IGMP_Group", group, "ports", "insert", [["uuid", pb[0]]])])
        return f"igmp join {address} by {pb[1]} on {chassis[1]}"

    def _igmp_leave(self, i: int) -> str | None:
        rows = _sorted_uuids(self.sb, "IGMP_Group")
        if not rows:
            return None
        row = self.sb.tables["IGMP_Group"].rows[rows[i % len(rows)]]
        self._sb([{"op": "delete", "table": "IGMP_Group", "where": _where(row.uuid)}])
        return f"igmp leave {row.address} (group #{i % len(rows)})"

    def _mac_learn(self, port: int, ip: int) -> str | None:
        """ovn-controller learning a neighbor on a binding (of a router port, usually)."""
        pb = self._binding(port)
        if pb is None:
            return None
        row = self.sb.tables["Port_Binding"].rows[pb[0]]
        address = f"10.0.0.{ip + 50}"
        if any(r.logical_port == pb[1] and r.ip == address
               for r in self.sb.tables["MAC_Binding"].rows.values()):
            return None
        self._sb([{"op": "insert", "table": "MAC_Binding",
                   "row": {"logical_port": pb[1], "ip": address,
                           "mac": f"00:00:00:00:bb:{ip + 1:02x}",
                           "timestamp": self.now_ms(),
                           "datapath": ["uuid", str(row.data["datapath"])]}}])
        return f"mac-binding {pb[1]} {address} learned"

    def _fdb_learn(self, port: int, m: int) -> str | None:
        pb = self._binding(port)
        if pb is None:
            return None
        row = self.sb.tables["Port_Binding"].rows[pb[0]]
        dp_key = row.datapath.tunnel_key
        address = f"00:00:00:00:cc:{m + 1:02x}"
        if any(r.mac == address and r.dp_key == dp_key
               for r in self.sb.tables["FDB"].rows.values()):
            return None
        self._sb([{"op": "insert", "table": "FDB",
                   "row": {"mac": address, "dp_key": dp_key, "port_key": row.tunnel_key}}])
        return f"fdb {address} learned on {pb[1]}"

    def _sb_delete(self, table: str, i: int) -> str | None:
        rows = _sorted_uuids(self.sb, table)
        if not rows:
            return None
        uuid = rows[i % len(rows)]
        row = self.sb.tables[table].rows[uuid]
        name = getattr(row, "logical_port", None) if table == "Port_Binding" else \
            getattr(row, "name", None) if table != "IP_Multicast" else f"#{i % len(rows)}"
        self._sb([{"op": "delete", "table": table, "where": _where(uuid)}])
        return f"ovn-sbctl destroy {table} {name}"

    def _sb_rekey(self, table: str, i: int, key: int) -> str | None:
        column = "logical_port" if table == "Port_Binding" else "tunnel_key"
        hit = existing(self.sb, table, i, column)
        if hit is None:
            return None
        self._sb([{"op": "update", "table": table, "where": _where(hit[0]),
                   "row": {"tunnel_key": key}}])
        return f"ovn-sbctl set {table} {hit[1]} tunnel_key={key}"

    def _lose_commit(self) -> str:
        self.lose_commit = True
        return "the next SB commit fails"

    def _cp_cfg(self, i: int) -> str | None:
        cp = existing(self.sb, "Chassis_Private", i)
        sb_global = self.sb.tables["SB_Global"].rows
        if cp is None or not sb_global:
            return None
        cfg = sb_global[min(sb_global)].nb_cfg
        self._sb([{"op": "update", "table": "Chassis_Private", "where": _where(cp[0]),
                   "row": {"nb_cfg": cfg, "nb_cfg_timestamp": 1}}])
        return f"{cp[1]} reports nb_cfg={cfg}"
