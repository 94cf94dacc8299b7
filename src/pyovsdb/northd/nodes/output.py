"""The root node `northd_output` (OVN's): what the driver commits after a run.

Rules kept here:
- It passes `sync_to_sb`'s operations through; the driver reads them only in a run
  that brought `sync_to_sb` up to date.
"""

from __future__ import annotations

from ...engine import Input, Node
from .sync_to_sb import SyncOps, SyncToSbNode


class NorthdOutputNode(Node[SyncOps, None]):
    def __init__(self, sync: SyncToSbNode) -> None:
        super().__init__("northd_output", sync_to_sb=Input(sync))

    def run(self, *, sync_to_sb: SyncOps) -> SyncOps:
        return sync_to_sb
