"""Per-node engine statistics, and their text as ovn-northd's `inc-engine/show-stats`.

Rules kept here:
- Counters mean what OVN's do (`lib/inc-proc-eng.c`, 23.03): `recompute` counts full
  recomputes (and, for a leaf, every run, since OVN "runs" its input nodes each time),
  `compute` counts runs of a node whose updated inputs were all handled, `cancel` counts
  runs canceled at the node (23.03 calls it `abort`, and so does the text). A failed
  handler followed by a recompute counts as a recompute only.
- Durations are seconds from the clock the engine was given, summed per node: time in
  recomputes and time in handlers. Without a clock they stay zero.
- `standby` counts the runs of a node (recomputes and computes) that its daemon made
  while on standby, holding no lock (`EngineStats.count_standby`): work that kept it
  ready to take over, written nowhere. The counters above include them.
- The text is byte-for-byte what 23.03 prints, so scripts that parse ovn-northd's output
  parse ours; nodes appear in the engine's topological order. A node with standby runs
  has one more line, `- standby:`, after the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["STAT_NAMES", "EngineStats", "NodeStats"]

STAT_NAMES = ("recompute", "compute", "abort", "standby")
"""The stat names `inc-engine/show-stats NODE STAT` accepts (OVN 23.03's and `standby`)."""


@dataclass(slots=True)
class NodeStats:
    """One node's counters and durations."""

    recompute: int = 0
    compute: int = 0
    cancel: int = 0
    standby: int = 0
    recompute_time: float = 0.0
    compute_time: float = 0.0

    @property
    def time(self) -> float:
        """Total seconds spent in this node's recomputes and handlers."""
        return self.recompute_time + self.compute_time

    def clear(self) -> None:
        self.recompute = self.compute = self.cancel = self.standby = 0
        self.recompute_time = self.compute_time = 0.0

    def stat(self, name: str) -> int:
        """A counter by its show-stats name (`abort` is `cancel`); KeyError if unknown."""
        if name == "recompute":
            return self.recompute
        if name == "compute":
            return self.compute
        if name == "abort":
            return self.cancel
        if name == "standby":
            return self.standby
        raise KeyError(name)


class EngineStats(Mapping[str, NodeStats]):
    """Every node's `NodeStats`, by node name, in topological order."""

    def __init__(self, names: Sequence[str]) -> None:
        self._by_name = {name: NodeStats() for name in names}

    def __getitem__(self, name: str) -> NodeStats:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def clear(self) -> None:
        """Zero every counter and duration (`inc-engine/clear-stats`)."""
        for stats in self._by_name.values():
            stats.clear()

    def count_standby(self, nodes: Iterable[str]) -> None:
        """The nodes that ran (recomputed or computed) in a run made on standby."""
        for name in nodes:
            self._by_name[name].standby += 1

    def show(self, node: str | None = None, stat: str | None = None) -> str:
        """The reply of `inc-engine/show-stats [NODE [STAT]]`, as OVN 23.03 writes it.

        No node: every node's block. A node: its block, or "" if there is no such
        node. A node and a stat: the bare number, or OVN's "Invalid stat type : X".
        """
        out: list[str] = []
        for name, stats in self._by_name.items():
            if node is not None and name != node:
                continue
            if stat is None:
                out.append(
                    f"Node: {name}\n"
                    f"- recompute: {stats.recompute:12d}\n"
                    f"- compute:   {stats.compute:12d}\n"
                    f"- abort:     {stats.cancel:12d}\n"
                    + (f"- standby:   {stats.standby:12d}\n" if stats.standby else "")
                )
            elif stat in STAT_NAMES:
                out.append(str(stats.stat(stat)))
            else:
                out.append(f"Invalid stat type : {stat}")
            if node is not None:
                break
        return "".join(out)
