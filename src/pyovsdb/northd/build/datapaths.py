"""Datapaths: one SB Datapath_Binding per NB Logical_Switch and enabled Logical_Router.

Rules kept here (OVN 23.03, `build_datapaths` and `ovn_datapath_update_external_ids`):
- A datapath is named by its NB row's UUID (the `logical-switch`/`logical-router` key
  of the binding's external_ids); routers with `enabled=false` have none.
- Tunnel keys: requested ones first (`other_config:requested-tnl-key` of a switch,
  `options:requested-tnl-key` of a router; in VXLAN mode a key of 4096 or more is
  refused unless the switch is an interconnection transit switch), then the key the
  existing binding holds if no other datapath took it, then new keys, lowest free first,
  for datapaths that already had a binding and then for new ones. VXLAN mode (a chassis
  with a vxlan encap) narrows the range to 1..4095.
- Deterministic where 23.03 walks hash tables: datapaths in order of kind (switches,
  then routers, as 23.03 joins them), then name, then NB UUID.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow, cached
from ...util.cnum import str_to_int, str_to_uint, str_to_ullong
from ..desired import DesiredDb, DesiredTable
from .alloc import DP_KEY_MAX, DP_KEY_MAX_VXLAN, DP_KEY_MIN, TunnelKeys
from .inputs import BuildInput
from .placed import Placed

DATAPATH_COLUMNS = ("tunnel_key", "external_ids", "load_balancers")


class DatapathKind(enum.Enum):
    SWITCH = "switch"
    ROUTER = "router"


@dataclass(frozen=True, slots=True)
class Datapath:
    key: str  # NB row UUID
    kind: DatapathKind
    name: str
    tunnel_key: int
    nb: IdlRow

    @property
    def is_switch(self) -> bool:
        return self.kind is DatapathKind.SWITCH

    @property
    def is_router(self) -> bool:
        return self.kind is DatapathKind.ROUTER


@dataclass(slots=True)
class DatapathsData:
    # By NB UUID, in build order, each with its place (`Placed`).
    switches: Placed[str, Datapath] = field(default_factory=Placed)
    routers: Placed[str, Datapath] = field(default_factory=Placed)
    vxlan_mode: bool = False

    def by_key(self, key: str) -> Datapath:
        dp = self.switches.get(key)
        return dp if dp is not None else self.routers[key]

    def get(self, key: str) -> Datapath | None:
        return self.switches.get(key) or self.routers.get(key)

    def all(self) -> list[Datapath]:
        """Switches, then routers, each in their build order."""
        return [*self.switches.values(), *self.routers.values()]


def is_vxlan_mode(sb: Mapping[str, ReplicaTable]) -> bool:
    chassis = sb.get("Chassis")
    if chassis is None:
        return False
    return any(encap.type == "vxlan" for ch in chassis.rows.values()
               for encap in ch.encaps if isinstance(encap, IdlRow))


def smap_int(smap: Mapping[str, str], key: str, default: int = 0) -> int:
    """`smap_get_int`: the value as `str_to_int` reads it (a C int, the whole text),
    else `default`."""
    value = smap.get(key)
    number = None if value is None else str_to_int(value)
    return default if number is None else number


def smap_uint(smap: Mapping[str, str], key: str, default: int = 0) -> int:
    """`smap_get_uint` (and OVN's `ovn_smap_get_uint`): the value as `str_to_uint`
    reads it (0 to UINT_MAX, the whole text), else `default`."""
    value = smap.get(key)
    number = None if value is None else str_to_uint(value)
    return default if number is None else number


def smap_ullong(smap: Mapping[str, str], key: str, default: int) -> int:
    """`smap_get_ullong`: the value as `str_to_ullong` reads it (a negative number
    wraps), else `default`."""
    value = smap.get(key)
    number = None if value is None else str_to_ullong(value)
    return default if number is None else number


def smap_bool(smap: Mapping[str, str], key: str, default: bool = False) -> bool:
    """`smap_get_bool`: with default true, anything but "false" is true (absent too);
    with default false, only "true"; both compared without regard to case."""
    value = smap.get(key, "").lower()
    return value != "false" if default else value == "true"


def router_enabled(row: IdlRow) -> bool:
    return row.enabled is None or bool(row.enabled)


def _sorted(rows: Iterable[IdlRow]) -> list[IdlRow]:
    return sorted(rows, key=lambda r: (r.name, r.uuid))


def existing_bindings(sb: Mapping[str, ReplicaTable]) -> dict[str, IdlRow]:
    """SB Datapath_Binding rows by the NB UUID they name (the first of duplicates, by
    SB UUID, as the rest are deleted)."""
    out: dict[str, IdlRow] = {}
    table = sb.get("Datapath_Binding")
    for row in table.rows.values() if table is not None else ():
        key = datapath_key(row)
        if key:
            was = out.get(key)
            if was is None or row.uuid < was.uuid:
                out[key] = row
    return out


def existing_keys(sb: Mapping[str, ReplicaTable]) -> dict[str, int]:
    """The tunnel keys of `existing_bindings`, by the NB UUID they name."""
    out: dict[str, tuple[str, int]] = {}
    table = sb.get("Datapath_Binding")
    if table is None:
        return {}
    column = table.col_index["tunnel_key"]
    for row in table.rows.values():
        key = datapath_key(row)
        if key:
            was = out.get(key)
            if was is None or row.uuid < was[0]:
                out[key] = (row.uuid, row.value_at(column))
    return {key: tunnel_key for key, (_, tunnel_key) in out.items()}


NB_KEY = "nb_key"  # a Datapath_Binding row's cache entry of `datapath_key`


def datapath_key(row: IdlRow) -> str | None:
    """The NB UUID a Datapath_Binding names (`external_ids` "logical-switch" or
    "logical-router"), kept in the row's cache (`NB_KEY`)."""
    return cached(row, NB_KEY, _nb_key)  # type: ignore[no-any-return]


def _nb_key(row: IdlRow) -> str | None:
    ids = row.external_ids
    key = ids.get("logical-switch") or ids.get("logical-router")
    return str(key) if key else None


TUNNEL_KEY = "requested-tnl-key"
VXLAN_FIRST_REFUSED = 1 << 12  # (a requested key of this or more, in VXLAN mode)
ASKED = "asked_key"  # a switch's or router's row cache entry of `asked_key`


def asked_key(row: IdlRow) -> tuple[int, bool]:
    """The tunnel key a switch's or a router's row asks for (0: none), and whether it
    is a transit switch's (`interconn-ts`: not refused in VXLAN mode), kept in the
    row's cache (`ASKED`)."""
    return cached(row, ASKED, _asked)  # type: ignore[no-any-return]


def _asked(row: IdlRow) -> tuple[int, bool]:
    config = row.options if row.table.name == "Logical_Router" else row.other_config
    return smap_int(config, TUNNEL_KEY), "interconn-ts" in config


def requested_key(row: IdlRow) -> int:
    """The tunnel key a switch's or a router's row asks for (0: none)."""
    return asked_key(row)[0]


def assign(rows: Iterable[IdlRow], existing: Mapping[str, int], vxlan: bool,
           used: Iterable[int] = ()) -> dict[str, int]:
    """The tunnel key of each datapath row (by NB UUID), `rows` in build order,
    `existing` the keys of their bindings and `used` keys held by datapaths left out of
    `rows` (which keep theirs); a row left out of the result has none (exhausted)."""
    keys = TunnelKeys(DP_KEY_MIN, DP_KEY_MAX_VXLAN if vxlan else DP_KEY_MAX)
    keys.used.update(used)
    rows = list(rows)
    ordered = [r for r in rows if r.uuid in existing]
    ordered += [r for r in rows if r.uuid not in existing]
    tunnel: dict[str, int] = {}
    for row in ordered:
        requested, transit = asked_key(row)
        if not requested or (vxlan and requested >= VXLAN_FIRST_REFUSED and not transit):
            continue
        if keys.add(requested):
            tunnel[row.uuid] = requested
    for row in ordered:
        kept = existing.get(row.uuid)
        if kept is not None and row.uuid not in tunnel and keys.add(kept):
            tunnel[row.uuid] = kept
    for row in ordered:
        if row.uuid not in tunnel:
            key = keys.allocate()
            if key is not None:
                tunnel[row.uuid] = key
    return tunnel


def build_datapaths(inp: BuildInput) -> DatapathsData:
    vxlan = is_vxlan_mode(inp.sb)
    nb_rows: list[tuple[DatapathKind, IdlRow]] = [
        (DatapathKind.SWITCH, r) for r in _sorted(inp.nb["Logical_Switch"].rows.values())]
    nb_rows += [(DatapathKind.ROUTER, r)
                for r in _sorted(inp.nb["Logical_Router"].rows.values()) if router_enabled(r)]
    existing = existing_keys(inp.sb)
    tunnel = assign((row for _, row in nb_rows), existing, vxlan)
    data = DatapathsData(vxlan_mode=vxlan)
    for kind, row in nb_rows:
        key = tunnel.get(row.uuid)
        if key is None:
            continue  # tunnel keys exhausted: 23.03 drops the datapath
        dp = Datapath(row.uuid, kind, row.name, key, row)
        (data.switches if kind is DatapathKind.SWITCH else data.routers)[row.uuid] = dp
    return data


def datapath_external_ids(dp: Datapath) -> dict[str, str]:
    nb = dp.nb
    ids = {"logical-switch" if dp.is_switch else "logical-router": dp.key, "name": dp.name}
    name2 = nb.external_ids.get("neutron:network_name" if dp.is_switch
                                else "neutron:router_name")
    if name2:
        ids["name2"] = name2
    if dp.is_switch:
        ts = nb.other_config.get("interconn-ts")
        if ts is not None:
            ids["interconn-ts"] = ts
    else:
        zone = smap_int(nb.options, "snat-ct-zone", -1)
        if zone >= 0:
            ids["snat-ct-zone"] = str(zone)
        if not smap_bool(nb.options, "always_learn_from_arp_request", True):
            ids["always_learn_from_arp_request"] = "false"
    return ids


def put_datapaths(data: DatapathsData, sb: DesiredDb) -> DesiredTable:
    table = sb.add(DesiredTable("Datapath_Binding", DATAPATH_COLUMNS))
    for dp in data.all():
        put_datapath(table, dp)
    return table


def put_datapath(table: DesiredTable, dp: Datapath) -> None:
    """The desired Datapath_Binding row of one datapath."""
    table.put(dp.key, tunnel_key=dp.tunnel_key, external_ids=datapath_external_ids(dp),
              load_balancers=[])


