"""Texts of northd's control commands (ovn-northd.c, lib/inc-proc-eng.c, lib/memory.c),
as pure functions of what they report; the daemon serves them.

Rules kept here:
- `inc-engine/show-stats` is the engine's own text (engine/stats.py).
- `status` is "Status: active|standby|paused".
- `memory/show` lists "key:value" pairs sorted by key, space-separated (simap order).
- `debug/chassis-features-list` names the three features 23.03 checks, aligned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class Features(Protocol):
    @property
    def ct_no_masked_label(self) -> bool: ...
    @property
    def ct_lb_related(self) -> bool: ...
    @property
    def mac_binding_timestamp(self) -> bool: ...


def status(paused: bool, active: bool) -> str:
    word = "paused" if paused else "active" if active else "standby"
    return f"Status: {word}\n"


def memory(usage: Mapping[str, int]) -> str:
    return " ".join(f"{k}:{usage[k]}" for k in sorted(usage)) + "\n"


def chassis_features(features: Features | None) -> str:
    """`debug/chassis-features-list` (None: before the first build, all supported)."""
    def word(value: bool) -> str:
        return "true" if value else "false"

    if features is None:
        return ("ct_no_masked_label:    true\nct_lb_related:         true\n"
                "mac_binding_timestamp: true\n")
    return (f"ct_no_masked_label:    {word(features.ct_no_masked_label)}\n"
            f"ct_lb_related:         {word(features.ct_lb_related)}\n"
            f"mac_binding_timestamp: {word(features.mac_binding_timestamp)}\n")
