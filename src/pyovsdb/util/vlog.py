"""Logging in the format and with the `-v` options of Open vSwitch daemons.

Rules kept here:
- Destinations are "console" (stderr), "file" and "syslog"; levels are off, emer, err,
  warn, info, dbg. `-vSPEC` takes `[module][:destination][:level]` parts in any order,
  separated by ':' or ',', as OVS does; a bare `-v` means debug on the console.
- Lines look like OVS's: `2026-11-30T04:18:22.560Z|00001|module|INFO|message`.
- Unknown modules are accepted (our module names differ from the real daemons'); a
  malformed spec is an error.
"""

from __future__ import annotations

import logging
import sys
import time

LEVELS = {
    "off": logging.CRITICAL + 10,
    "emer": logging.CRITICAL,
    "err": logging.ERROR,
    "warn": logging.WARNING,
    "info": logging.INFO,
    "dbg": logging.DEBUG,
}
_NAMES = {logging.CRITICAL: "EMER", logging.ERROR: "ERR", logging.WARNING: "WARN",
          logging.INFO: "INFO", logging.DEBUG: "DBG"}
DESTINATIONS = ("console", "file", "syslog")


class OvsFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self.seq = 0

    def format(self, record: logging.LogRecord) -> str:
        self.seq += 1
        t = time.gmtime(record.created)
        ms = int(record.msecs)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{ms:03d}Z"
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        level = _NAMES.get(record.levelno, record.levelname)
        return f"{stamp}|{self.seq:05d}|{record.name}|{level}|{msg}"


class VlogConfig:
    """Levels per (module, destination); the root logger carries the minimum."""

    def __init__(self) -> None:
        self.levels: dict[str, int] = {"console": LEVELS["warn"], "file": LEVELS["info"],
                                       "syslog": LEVELS["off"]}
        self.module_levels: dict[tuple[str, str], int] = {}

    def apply_spec(self, spec: str) -> None:
        if spec == "":
            self.levels["console"] = LEVELS["dbg"]
            return
        if spec.startswith("PATTERN:") or spec.startswith("FACILITY:"):
            return
        module = None
        dest = None
        level = None
        for word in spec.replace(",", ":").split(":"):
            w = word.lower()
            if not w:
                continue
            if w in LEVELS:
                level = LEVELS[w]
            elif w in DESTINATIONS or w == "any":
                dest = w
            elif module is None:
                module = word
            else:
                raise ValueError(f'unknown destination or level "{word}" in -v{spec}')
        if level is None:
            level = LEVELS["dbg"]
        dests = DESTINATIONS if dest in (None, "any") else (dest,)
        for d in dests:
            if module is None or module.lower() == "any":
                self.levels[d] = level
            else:
                self.module_levels[(module, d)] = level


class _DestFilter(logging.Filter):
    def __init__(self, cfg: VlogConfig, dest: str) -> None:
        super().__init__()
        self.cfg = cfg
        self.dest = dest

    def filter(self, record: logging.LogRecord) -> bool:
        lvl = self.cfg.module_levels.get((record.name, self.dest), self.cfg.levels[self.dest])
        return record.levelno >= lvl


def configure(cfg: VlogConfig, log_file: str | None, console: bool = True) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    fmt = OvsFormatter()
    if console:
        ch = logging.StreamHandler(sys.stderr)
        ch.setFormatter(fmt)
        ch.addFilter(_DestFilter(cfg, "console"))
        root.addHandler(ch)
    if log_file:
        fh = logging.FileHandler(log_file)
        fh.setFormatter(fmt)
        fh.addFilter(_DestFilter(cfg, "file"))
        root.addHandler(fh)
    all_levels = list(cfg.levels.values()) + list(cfg.module_levels.values())
    root.setLevel(min(all_levels))
