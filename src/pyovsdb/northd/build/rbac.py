"""RBAC: the one SB role northd keeps, `ovn-controller`, and its permissions.

Rules kept here (OVN 23.03, `rbac_perm_cfg` and `check_and_update_rbac` in
ovn-northd.c):
- Exactly one RBAC_Role, named `ovn-controller`; any other role is deleted.
- One RBAC_Permission per table below, with the authorization columns, insert/delete
  right and updatable columns as 23.03 lists them; a permission that differs is
  brought back to them (23.03 deletes and recreates it: the same rows by content).
- Permission rows are keyed by their `table`, the role's `permissions` map refers to
  them by that key.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..desired import DesiredDb, DesiredTable, Ref

ROLE = "ovn-controller"


@dataclass(frozen=True, slots=True)
class Permission:
    table: str
    authorization: tuple[str, ...]
    insert_delete: bool
    update: tuple[str, ...]


PERMISSIONS: tuple[Permission, ...] = (
    Permission("Chassis", ("name",), True,
               ("nb_cfg", "external_ids", "encaps", "vtep_logical_switches", "other_config",
                "transport_zones")),
    Permission("Chassis_Private", ("name",), True,
               ("nb_cfg", "nb_cfg_timestamp", "chassis", "external_ids")),
    Permission("Controller_Event", ("",), True,
               ("chassis", "event_info", "event_type", "seq_num")),
    Permission("Encap", ("chassis_name",), True, ("type", "options", "ip")),
    Permission("FDB", ("",), True, ("dp_key", "mac", "port_key")),
    # "options" because a role cannot be allowed one key (additional-chassis-activated).
    Permission("Port_Binding", ("",), False,
               ("chassis", "additional_chassis", "encap", "additional_encap", "up",
                "virtual_parent", "options")),
    Permission("MAC_Binding", ("",), True,
               ("logical_port", "ip", "mac", "datapath", "timestamp")),
    Permission("Service_Monitor", ("",), False, ("status",)),
    Permission("IGMP_Group", ("",), True, ("address", "chassis", "datapath", "ports")),
    Permission("BFD", ("",), False, ("status",)),
)


def build_rbac(sb: DesiredDb) -> None:
    perms = sb.add(DesiredTable("RBAC_Permission",
                                ("table", "authorization", "insert_delete", "update")))
    for p in PERMISSIONS:
        perms.put(p.table, table=p.table, authorization=list(p.authorization),
                  insert_delete=p.insert_delete, update=list(p.update))
    roles = sb.add(DesiredTable("RBAC_Role", ("name", "permissions")))
    roles.put(ROLE, name=ROLE,
              permissions={p.table: Ref("RBAC_Permission", p.table) for p in PERMISSIONS})
