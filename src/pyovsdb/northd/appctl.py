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


def atoi(text: str) -> int:
    """C's atoi: leading blanks, a sign, digits; anything else ends it (0 if none)."""
    s = text.lstrip()
    sign = 1
    if s[:1] in ("-", "+"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    digits = ""
    for ch in s:
        if not ch.isdigit():
            break
        digits += ch
    return sign * int(digits) if digits else 0


def parse_uint(text: str) -> int | None:
    """str_to_uint: the whole text a decimal number fitting in an unsigned int."""
    s = text.strip()
    if s.startswith("+"):
        s = s[1:]
    if not s.isdigit() or not s.isascii():
        return None
    value = int(s)
    return value if value <= 0xFFFFFFFF else None
