"""The `sync_cfg` node (ours; 23.03 runs this outside its engine): the nb_cfg -> SB
nb_cfg -> NB sb_cfg / hv_cfg handshake (`update_sequence_numbers`).

Rules kept here:
- It reads NB_Global, SB_Global, Chassis_Private and Chassis, the time (`now`, whose
  change is never reported) and the nb_cfg of the last committed SB transaction
  (`sync_cfg_committed`, a leaf the driver changes when a commit carried a new one).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...engine import Group, Input, Leaf, Node
from ...idl.replica import ReplicaTable
from ..build.global_cfg import CfgHandshake, cfg_handshake
from ..build.inputs import singleton
from .tables import TableLeaf, table_inputs


class SyncCfgNode(Node[CfgHandshake | None, None]):
    def __init__(self, cfg: Leaf[int, int], now: Leaf[int, int],
                 nb: Mapping[str, TableLeaf], sb: Mapping[str, TableLeaf]) -> None:
        super().__init__(
            "sync_cfg", sync_cfg_committed=Input(cfg), now=Input(now),
            nb=Group(table_inputs(nb, ("NB_Global",))),
            sb=Group(table_inputs(sb, ("SB_Global", "Chassis_Private", "Chassis"))))

    def run(self, *, sync_cfg_committed: int, now: int, nb: Mapping[str, ReplicaTable],
            sb: Mapping[str, ReplicaTable]) -> CfgHandshake | None:
        cp = sb.get("Chassis_Private")
        return cfg_handshake(singleton(nb.get("NB_Global")), singleton(sb.get("SB_Global")),
                             [] if cp is None else cp.rows.values(),
                             committed_sb_cfg=sync_cfg_committed, now_ms=now)
