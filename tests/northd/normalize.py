"""Normalize NB/SB database dumps so that two northds' outputs can be compared.

What it owns: turning the rows of an OVSDB `select` (wire format) into a `Snapshot` of
rows keyed by what they are, not by where they were stored.

Rules kept here:
- No UUID survives: a reference (a `uuid` atom, or a string that is a UUID, as in
  `external_ids:logical-switch`) becomes a label naming the row it points to, built
  from the row's own identity (a datapath by `external_ids:name`, a port binding by
  `logical_port`, a chassis by `name`, a datapath group by its datapaths' names, an
  NB row by its `name`...). A UUID that names no dumped row becomes `<uuid>`.
- Sets are sorted, maps are sorted by key, rows are keyed by a per-table identity and
  rendered one column per line, so a difference reads as `Table[row].column`.
- Timestamps are masked (`<ts>` if set, 0 if not): they differ between any two runs.
- Tunnel keys are kept, except for the tables a script asks to renumber (23.03 picks
  them in UUID-hash order when several rows get one in the same run): then each row's
  key is `~` and the table gets one pseudo-row `(tunnel keys)` (per datapath for
  ports) holding the sorted keys, so the set of keys is still compared.
- Without `Logical_Flow` among the compared tables, `Logical_DP_Group` keeps only the
  groups the compared rows refer to (`Load_Balancer.datapath_group`): the others
  belong to logical flows, which are compared with them.
- The IPs of a `Port_Binding.nat_addresses` entry are sorted: 23.03 lists a router's
  NAT addresses in its NAT rows' UUID order.
- SB `Port_Group` names embed the datapath's tunnel key (`<key>_<name>`); the key is
  replaced by the datapath's label so that a renumbering does not hide the group.
- `Logical_Flow` rows (when asked for) are keyed by datapath (or datapath group),
  pipeline, table, priority and match (its `eth.src == {...}` MAC set sorted: 23.03
  fills it from a hash set); `external_ids:stage-hint` (the first 32 bits of
  an NB row's UUID) names that NB row, except that a flow shared by a datapath group
  whose hint is a datapath says only that (23.03 names the member that added the flow
  first, in UUID-hash order), and one whose hint is a port says only that (23.03 names
  the port that added it first, in the name-hash order of its port table);
  `external_ids:source` (a C file and line of ovn-northd) is masked.
- Pure: no I/O, deterministic for the same input whatever the UUIDs were.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

WireRow = Mapping[str, Any]
RawDump = Mapping[str, Sequence[WireRow]]

# The SB tables northd owns (besides Logical_Flow), compared table by table.
SB_OWNED: tuple[str, ...] = (
    "Datapath_Binding", "Port_Binding", "Multicast_Group", "Logical_DP_Group",
    "HA_Chassis_Group", "HA_Chassis", "SB_Global", "RBAC_Role", "RBAC_Permission",
    "DHCP_Options", "DHCPv6_Options", "Load_Balancer", "Service_Monitor", "Meter",
    "Meter_Band", "IP_Multicast", "DNS", "Port_Group", "Address_Set", "Mirror",
    "MAC_Binding",
)
# With logical flows (the next step of the comparison).
SB_WITH_FLOWS: tuple[str, ...] = (*SB_OWNED, "Logical_Flow")
# SB tables dumped only to name what the owned rows point to.
SB_CONTEXT: tuple[str, ...] = ("Chassis", "Chassis_Private", "Encap")
# NB tables northd writes back to (LSP up/dynamic_addresses, NB_Global cfg and options,
# LRP ipv6_prefix).
NB_WRITTEN: tuple[str, ...] = ("NB_Global", "Logical_Switch_Port", "Logical_Router_Port")

# Columns masked in every run (table, column).
TIMESTAMPS: frozenset[tuple[str, str]] = frozenset({
    ("NB_Global", "nb_cfg_timestamp"), ("NB_Global", "sb_cfg_timestamp"),
    ("NB_Global", "hv_cfg_timestamp"), ("Chassis_Private", "nb_cfg_timestamp"),
})

# The column that names a row, for tables whose rows have one.
NAME_COLUMN: dict[str, str] = {
    "Port_Binding": "logical_port", "Chassis": "name", "Chassis_Private": "name",
    "HA_Chassis_Group": "name", "RBAC_Role": "name", "RBAC_Permission": "table",
    "DHCP_Options": "name", "DHCPv6_Options": "name", "Load_Balancer": "name",
    "Meter": "name", "Port_Group": "name", "Address_Set": "name",
    "Gateway_Chassis": "name", "Mirror": "name",
}
NB_NAME_COLUMN: dict[str, str] = {"HA_Chassis": "chassis_name", "DHCP_Options": "cidr"}
# NB rows without a name, named by a few columns (stage hints of logical flows).
NB_NAME_COLUMNS: dict[str, tuple[str, ...]] = {
    "ACL": ("direction", "priority", "match"), "QoS": ("direction", "priority", "match"),
    "NAT": ("type", "external_ip", "logical_ip"),
    "Logical_Router_Static_Route": ("ip_prefix", "nexthop"),
    "Logical_Router_Policy": ("priority", "match"),
}


def table_label(db: str, table: str) -> str:
    return table if db == "SB" else f"nb.{table}"


@dataclass(frozen=True)
class Snapshot:
    """Normalized rows: `tables["SB.Port_Binding"]["p1"]["tunnel_key"] == 1`."""

    tables: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def lines(self, table: str) -> list[str]:
        """One line per row column: `Port_Binding[p1].tunnel_key = 1`."""
        out: list[str] = []
        db, name = table.split(".", 1)
        short = table_label(db, name)
        for key, row in sorted(self.tables.get(table, {}).items()):
            if not row:
                out.append(f"{short}[{key}]")
            for col, value in sorted(row.items()):
                out.append(f"{short}[{key}].{col} = {dumps(value)}")
        return out

    def text(self) -> str:
        return "\n".join(line for t in sorted(self.tables) for line in self.lines(t)) + "\n"


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class _Labels:
    """uuid -> label of the row it names, per database (two in-memory databases may
    hand out the same UUIDs)."""

    def __init__(self) -> None:
        self.by_db: dict[str, dict[str, str]] = {"NB": {}, "SB": {}}
        self.db = "SB"

    def add(self, db: str, uuid: str, label: str) -> None:
        self.by_db[db][uuid] = label

    def ref(self, uuid: str, db: str | None = None) -> str:
        """A reference atom: a row of the database being normalized (or of `db`)."""
        return self.by_db[db or self.db].get(uuid, "<uuid>")

    def sub(self, text: str) -> str:
        """UUIDs inside strings: SB rows name NB rows there (`external_ids`), so the NB
        is asked first, then the database being normalized."""
        def one(m: re.Match[str]) -> str:
            u = m.group(0)
            return self.by_db["NB"].get(u) or self.by_db[self.db].get(u, "<uuid>")

        return UUID_RE.sub(one, text)


def _uuid(row: WireRow) -> str:
    u = row["_uuid"]
    return str(u[1] if isinstance(u, list) else u)


def _atoms(value: Any) -> list[Any]:
    """The atoms of a wire set (a bare atom is a one-element set)."""
    if isinstance(value, list) and value and value[0] == "set":
        return list(value[1])
    return [value]


def _map(value: Any) -> dict[Any, Any]:
    if isinstance(value, list) and value and value[0] == "map":
        return {_scalar(k): v for k, v in value[1]}
    return {}


def _scalar(atom: Any) -> Any:
    if isinstance(atom, list) and len(atom) == 2 and atom[0] in ("uuid", "named-uuid"):
        return str(atom[1])
    return atom


def _refs(value: Any) -> list[str]:
    return [str(a[1]) for a in _atoms(value)
            if isinstance(a, list) and len(a) == 2 and a[0] == "uuid"]


def _content(row: WireRow) -> str:
    """A UUID-free identity for a row that has no name: its non-reference content."""
    body = {c: v for c, v in row.items() if not c.startswith("_")}
    return UUID_RE.sub("", dumps(body))


def _label_rows(db: str, dump: RawDump, labels: _Labels) -> None:
    """Labels of rows named by their own columns (no reference needed)."""
    for table, rows in sorted(dump.items()):
        tl = table_label(db, table)
        for row in rows:
            name: str | None = None
            if db == "SB" and table == "Datapath_Binding":
                name = str(_map(row.get("external_ids")).get("name", "?"))
            elif db == "SB" and table == "Encap":
                name = f"{row.get('chassis_name')}/{row.get('type')}/{row.get('ip')}"
            elif db == "SB" and table == "Meter_Band":
                name = f"{row.get('action')}/{row.get('rate')}/{row.get('burst_size')}"
            elif db == "SB" and table in NAME_COLUMN:
                name = str(row.get(NAME_COLUMN[table]))
            elif (db == "NB" and table in NB_NAME_COLUMNS
                  and not (isinstance(row.get("name"), str) and row["name"])):
                name = " ".join(str(row.get(c)) for c in NB_NAME_COLUMNS[table])
            elif db == "NB" and table in NB_NAME_COLUMN:
                name = str(row.get(NB_NAME_COLUMN[table]))
            elif db == "NB" and "name" in row and isinstance(row["name"], str) and row["name"]:
                name = row["name"]
            elif db == "NB" and table == "NB_Global":
                name = "."
            if name is None:
                name = _content(row)
            labels.add(db, _uuid(row), f"@{tl}({name})")


# 23.03 writes the MACs of the self-originated ARP/ND flood flow (ls_in_l2_lkup,
# priority 75: a router port's MAC and its distributed NAT rows' external MACs) from a
# hash set filled in NAT-row (UUID) order, so their order changes between runs.
ETH_SRC_SET = re.compile(r"eth\.src == \{([^{}]*)\}")


def hash_ordered_sorted(text: str) -> str:
    """A flow's match (or a trace) with the lists 23.03 prints in hash order sorted."""
    if "eth.src == {" not in text:
        return text
    return ETH_SRC_SET.sub(
        lambda m: "eth.src == {" + ", ".join(sorted(x.strip() for x in
                                                    m.group(1).split(","))) + "}", text)


def nb_labels(nb: RawDump) -> dict[str, str]:
    """uuid -> label of every NB row (`@nb.Load_Balancer(lb0)`), for texts that embed
    NB UUIDs, such as a logical flow's `trigger_event(..., load_balancer = UUID)`."""
    labels = _Labels()
    _label_rows("NB", nb, labels)
    return dict(labels.by_db["NB"])


def _label_derived(sb: RawDump, labels: _Labels) -> None:
    """Labels that need other rows' labels: datapath groups, HA chassis."""
    for row in sb.get("Logical_DP_Group", ()):
        names = sorted(labels.ref(u, "SB") for u in _refs(row.get("datapaths")))
        members = ",".join(n.removeprefix("@Datapath_Binding(").removesuffix(")")
                           for n in names)
        labels.add("SB", _uuid(row), f"@Logical_DP_Group({members})")
    for group in sb.get("HA_Chassis_Group", ()):
        gname = group.get("name")
        ha_rows = {_uuid(r): r for r in sb.get("HA_Chassis", ())}
        for u in _refs(group.get("ha_chassis")):
            r = ha_rows.get(u)
            if r is None:
                continue
            ch = [labels.ref(c, "SB") for c in _refs(r.get("chassis"))]
            chassis = ch[0].removeprefix("@Chassis(").removesuffix(")") if ch else "-"
            labels.add("SB", u, f"@HA_Chassis({gname}/{chassis}/{r.get('priority')})")


def _value(v: Any, labels: _Labels) -> Any:
    if isinstance(v, list) and v and v[0] == "set":
        return sorted((_value(a, labels) for a in v[1]), key=dumps)
    if isinstance(v, list) and v and v[0] == "map":
        return {str(_value(k, labels)): _value(x, labels)
                for k, x in sorted(v[1], key=lambda kv: dumps(_value(kv[0], labels)))}
    if isinstance(v, list) and len(v) == 2 and v[0] == "uuid":
        return labels.ref(str(v[1]))
    if isinstance(v, str):
        return labels.sub(v)
    return v


def _row_key(db: str, table: str, row: dict[str, Any], label: str) -> str:
    if db == "SB" and table == "Logical_Flow":
        where = row.get("logical_datapath") or row.get("logical_dp_group")
        return (f"{_short(where)}/{row.get('pipeline')}/{row.get('table_id')}/"
                f"{row.get('priority')}/{row.get('match')}")
    if db == "SB" and table == "Multicast_Group":
        return f"{_short(row.get('datapath'))}/{row.get('name')}"
    if db == "SB" and table == "Service_Monitor":
        return (f"{row.get('logical_port')}/{row.get('ip')}:{row.get('port')}/"
                f"{row.get('protocol')}")
    if db == "SB" and table == "IP_Multicast":
        return _short(row.get("datapath"))
    if db == "SB" and table == "MAC_Binding":
        return f"{_short(row.get('datapath'))}/{row.get('logical_port')}/{row.get('ip')}"
    if table in ("SB_Global", "NB_Global"):
        return "."
    if db == "NB" and table == "Logical_Switch_Port":
        return str(row.get("name"))
    return _short(label)


def _short(label: Any) -> str:
    """`@Datapath_Binding(sw0)` -> `sw0`."""
    s = str(label)
    if s.startswith("@") and s.endswith(")") and "(" in s:
        return s[s.index("(") + 1:-1]
    return s


def normalize(nb: RawDump, sb: RawDump, *, renumber: Iterable[str] = (),
              sb_tables: Sequence[str] = SB_OWNED,
              nb_tables: Sequence[str] = NB_WRITTEN) -> Snapshot:
    """The comparable form of one run's NB and SB contents."""
    labels = _Labels()
    _label_rows("NB", nb, labels)
    _label_rows("SB", sb, labels)
    _label_derived(sb, labels)
    renumbered = set(renumber)
    dp_keys = {int(r["tunnel_key"]): _short(labels.ref(_uuid(r), "SB"))
               for r in sb.get("Datapath_Binding", ()) if isinstance(r.get("tunnel_key"), int)}
    hints = {u[:8]: label for u, label in labels.by_db["NB"].items()}
    snap = Snapshot()
    for db, dump, tables in (("NB", nb, nb_tables), ("SB", sb, sb_tables)):
        labels.db = db
        for table in tables:
            pairs: list[tuple[str, dict[str, Any]]] = []
            keysets: dict[str, list[Any]] = {}
            for wire in dump.get(table, ()):
                row = {c: _value(v, labels) for c, v in wire.items() if not c.startswith("_")}
                for col in list(row):
                    if (table, col) in TIMESTAMPS:
                        row[col] = "<ts>" if row[col] else 0
                if db == "SB" and table == "Port_Group":
                    row["name"] = _port_group_name(str(row.get("name")), dp_keys)
                if db == "SB" and table == "Logical_Flow":
                    row["match"] = hash_ordered_sorted(str(row.get("match", "")))
                    row["external_ids"] = _flow_ids(row.get("external_ids"), hints,
                                                    shared=bool(row.get("logical_dp_group")))
                if db == "SB" and table == "Port_Binding" and "nat_addresses" in row:
                    row["nat_addresses"] = _nat_addresses(row["nat_addresses"])
                label = labels.ref(_uuid(wire))
                if db == "SB" and table == "Port_Group":
                    label = f"@Port_Group({row['name']})"
                if table in renumbered and "tunnel_key" in row:
                    scope = (f" of {_short(row.get('datapath'))}"
                             if "datapath" in row else "")
                    keysets.setdefault(f"(tunnel keys{scope})", []).append(row["tunnel_key"])
                    row["tunnel_key"] = "~"
                pairs.append((_row_key(db, table, row, label), row))
            out = _keyed(pairs)
            for k, keys in keysets.items():
                out[k] = {"keys": sorted(keys)}
            snap.tables[f"{db}.{table}"] = out
    if "Logical_Flow" not in sb_tables:
        return without_flows(snap)
    return snap


def without_flows(snap: Snapshot) -> Snapshot:
    """`snap` without logical flows and the datapath groups only they refer to."""
    tables = {t: rows for t, rows in snap.tables.items() if t != "SB.Logical_Flow"}
    out = Snapshot(tables)
    if "SB.Logical_DP_Group" in tables:
        used = _labels_used(out, "@Logical_DP_Group(")
        tables["SB.Logical_DP_Group"] = {
            k: v for k, v in tables["SB.Logical_DP_Group"].items()
            if f"@Logical_DP_Group({k})" in used}
    return out


def _labels_used(snap: Snapshot, prefix: str) -> set[str]:
    found: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str) and v.startswith(prefix):
            found.add(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    for rows in snap.tables.values():
        for row in rows.values():
            walk(row)
    return found


def _keyed(pairs: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Rows by key; rows sharing a key get `#2`, `#3`... in the order of their content."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for key, row in pairs:
        groups.setdefault(key, []).append(row)
    out: dict[str, dict[str, Any]] = {}
    for key, members in groups.items():
        for i, row in enumerate(sorted(members, key=dumps), 1):
            out[key if i == 1 else f"{key}#{i}"] = row
    return out


def _flow_ids(ids: Any, hints: Mapping[str, str], *, shared: bool) -> Any:
    if not isinstance(ids, dict):
        return ids
    out = dict(ids)
    if "stage-hint" in out:
        hint = hints.get(str(out["stage-hint"]), "<hint>")
        # A shared flow keeps the hint it was inserted with (23.03 rewrites external_ids
        # only on a version change), so after its first datapath is deleted the hint
        # names no row: that counts as a datapath of the group too.
        if shared and (hint == "<hint>" or hint.startswith(("@nb.Logical_Switch(",
                                                             "@nb.Logical_Router("))):
            hint = "<a datapath of the group>"
        elif shared and hint.startswith(("@nb.Logical_Switch_Port(",
                                         "@nb.Logical_Router_Port(")):
            hint = "<a port of the group>"
        out["stage-hint"] = hint
    if "source" in out:
        out["source"] = "<source>"
    return out


def _nat_addresses(value: Any) -> Any:
    """`MAC IP... [is_chassis_resident(...)]` with its IPs sorted."""
    def one(entry: Any) -> Any:
        if not isinstance(entry, str):
            return entry
        words = entry.split(" ")
        ips = sorted(w for w in words[1:] if not w.startswith("is_chassis_resident"))
        rest = [w for w in words[1:] if w.startswith("is_chassis_resident")]
        return " ".join([words[0], *ips, *rest])

    if isinstance(value, list):
        return sorted((one(v) for v in value), key=dumps)
    return one(value)


def _port_group_name(name: str, dp_keys: Mapping[int, str]) -> str:
    head, sep, rest = name.partition("_")
    if sep and head.isdigit() and int(head) in dp_keys:
        return f"<{dp_keys[int(head)]}>_{rest}"
    return name


def diff(expected: Snapshot, actual: Snapshot, table: str) -> list[str]:
    """Lines of `table` only in `expected` (`- `) or only in `actual` (`+ `), in order."""
    a = expected.lines(table)
    b = actual.lines(table)
    sa, sb = set(a), set(b)
    out = [f"- {line}" for line in a if line not in sb]
    out += [f"+ {line}" for line in b if line not in sa]
    return sorted(out, key=lambda s: (s[2:], s[0]))
