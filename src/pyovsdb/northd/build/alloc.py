"""Allocation state of one northd run: tunnel keys (and, in `ipam.py`, addresses).

Rules kept here:
- State is an object a builder creates and passes along, never a module global, so two
  runs (or two tests) never share it.
- The allocation walk is OVN 23.03's (`ovn_allocate_tnlid`): the first free key after
  the hint, wrapping from the top of the range to its bottom, then the hint moves to
  the key taken. Whether adding a key moves the hint is the caller's choice: ports move
  it to the highest key they keep (so a new port gets the key after the highest one in
  use), datapaths do not (a new datapath gets the lowest free key).
- Exhaustion is None, not an exception: 23.03 then leaves the row out.
"""

from __future__ import annotations

# Ranges of 23.03 (lib/ovn-util.h, lib/mcast-group-index.h).
DP_KEY_MIN = 1
DP_KEY_MAX = (1 << 24) - 1 - ((1 << 16) - 1)  # OVN_MAX_DP_KEY_LOCAL: the rest is global
DP_KEY_MAX_VXLAN = (1 << 12) - 1
PORT_KEY_MIN = 1
PORT_KEY_MAX = (1 << 15) - 1
PORT_KEY_MAX_VXLAN = (1 << 11) - 1
VXLAN_MIN_MULTICAST = 2048
IP_MCAST_KEY_MIN = 32773  # OVN_MIN_IP_MULTICAST, also the first hint
IP_MCAST_KEY_MAX = 65535


class TunnelKeys:
    """The keys taken in one key space (all datapaths, or one datapath's ports)."""

    __slots__ = ("hi", "hint", "hint_follows_adds", "lo", "used")

    def __init__(self, lo: int, hi: int, *, hint_follows_adds: bool = False,
                 hint: int = 0) -> None:
        self.lo = lo
        self.hi = hi
        self.used: set[int] = set()
        self.hint = hint
        self.hint_follows_adds = hint_follows_adds

    def add(self, key: int) -> bool:
        """Take `key` if it is free (a kept or requested key); False if it is taken."""
        if key in self.used:
            return False
        self.used.add(key)
        if self.hint_follows_adds and key > self.hint:
            self.hint = key
        return True

    def allocate(self) -> int | None:
        """The next free key after the hint, or None when every key is taken."""
        lo, hi, used = self.lo, self.hi, self.used
        if len(used) >= hi - lo + 1 and all(k in used for k in range(lo, hi + 1)):
            return None
        key = self.hint
        while True:
            key = key + 1 if key + 1 <= hi else lo
            if key not in used:
                used.add(key)
                self.hint = key
                return key
