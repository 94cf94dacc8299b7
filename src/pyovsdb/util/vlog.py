"""Logging in the format and with the `-v` options of Open vSwitch daemons.

Rules kept here:
- Destinations are "console" (stderr), "file" and "syslog"; levels are off, emer, err,
  warn, info, dbg. A spec is `[module][:destination][:level]` in any order, separated by
  ':' or ','; a bare `-v` means debug everywhere on the console.
- Modules are the ones this program logs under plus the real daemons' common ones, so a
  command line written for ovsdb-server is accepted; an unknown word in a spec is an
  error with the real wording.
- Lines look like OVS's: `2026-11-30T04:18:22.560Z|00001|module|INFO|message`.
- `reopen` closes and reopens the log file (for log rotation); `close` closes it.
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
_LEVEL_NAMES = {v: k.upper() for k, v in LEVELS.items()}
DESTINATIONS = ("console", "syslog", "file")
MODULES = frozenset((
    # ours
    "jsonrpc", "ovsdb_server", "ovsdb_jsonrpc_server", "unixctl", "reconnect", "raft",
    "raft_rpc", "storage", "ovsdb_idl", "northd", "sandbox", "memory", "vlog",
    # the real daemons' usual ones, accepted so their command lines work unchanged
    "ovsdb_log", "ovsdb_file", "ovsdb_monitor", "ovsdb_trigger", "ovsdb_cs", "ovsdb_util",
    "stream", "stream_unix", "stream_tcp", "stream_ssl", "stream_fd", "socket_util",
    "poll_loop", "timeval", "fatal_signal", "daemon", "daemon_unix", "lockfile",
    "coverage", "stopwatch", "backtrace", "ovn_northd", "inc_proc_eng", "replication",
    "relay", "ovsdb_relay", "transaction_forward", "ovsdb_error", "json", "reconnect",
    "pstream", "stream_replay", "netlink_socket", "timer",
))


class OvsFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self.seq = 0

    def format(self, record: logging.LogRecord) -> str:
        self.seq += 1
        t = time.gmtime(record.created)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{int(record.msecs):03d}Z"
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        level = _NAMES.get(record.levelno, record.levelname)
        return f"{stamp}|{self.seq:05d}|{record.name}|{level}|{msg}"


class _DestFilter(logging.Filter):
    def __init__(self, vlog: Vlog, dest: str) -> None:
        super().__init__()
        self.vlog = vlog
        self.dest = dest

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.vlog.level(record.name, self.dest)


class Vlog:
    """Levels per (module, destination) and the handlers that apply them."""

    def __init__(self) -> None:
        self.defaults: dict[str, int] = {"console": LEVELS["warn"], "file": LEVELS["info"],
                                         "syslog": LEVELS["off"]}
        self.levels: dict[tuple[str, str], int] = {}
        self.log_file: str | None = None
        self._formatter = OvsFormatter()
        self._file_handler: logging.FileHandler | None = None
        self._console: logging.Handler | None = None

    def level(self, module: str, dest: str) -> int:
        return self.levels.get((module, dest), self.defaults[dest])

    def set_spec(self, spec: str) -> None:
        """Apply one `-v`/`vlog/set` spec; ValueError with the real wording if bad."""
        if spec == "":
            self.defaults["console"] = LEVELS["dbg"]
            self._sync_root()
            return
        if spec.startswith(("PATTERN:", "FACILITY:")):
            return
        module = dest = None
        level = None
        for word in spec.replace(",", ":").split(":"):
            w = word.lower()
            if not w:
                continue
            if w in LEVELS:
                level = LEVELS[w]
            elif w in DESTINATIONS or w == "any":
                dest = w
            elif w in MODULES or w == "any":
                module = w
            else:
                raise ValueError(f'no destination, level, or module "{word}"')
        if level is None:
            level = LEVELS["dbg"]
        for d in DESTINATIONS if dest in (None, "any") else (dest,):
            if module in (None, "any"):
                self.defaults[d] = level
                for key in [k for k in self.levels if k[1] == d]:
                    del self.levels[key]
            else:
                self.levels[(module, d)] = level
        self._sync_root()

    def list(self) -> str:
        lines = ["                 console    syslog    file",
                 "                 -------    ------    ------"]
        for m in sorted(MODULES):
            c, s, f = (_LEVEL_NAMES[self.level(m, d)] for d in DESTINATIONS)
            lines.append(f"{m:<16} {c:>7}    {s:>6}    {f:>6}")
        return "\n".join(lines) + "\n"

    def start(self, log_file: str | None, console: bool = True) -> None:
        root = logging.getLogger()
        for h in list(root.handlers):
            root.removeHandler(h)
        if console:
            self._console = logging.StreamHandler(sys.stderr)
            self._console.setFormatter(self._formatter)
            self._console.addFilter(_DestFilter(self, "console"))
            root.addHandler(self._console)
        self.log_file = log_file
        self._open_file()
        self._sync_root()
        if log_file:
            logging.getLogger("vlog").info("opened log file %s", log_file)

    def _open_file(self) -> None:
        if not self.log_file:
            return
        fh = logging.FileHandler(self.log_file)
        fh.setFormatter(self._formatter)
        fh.addFilter(_DestFilter(self, "file"))
        logging.getLogger().addHandler(fh)
        self._file_handler = fh

    def reopen(self) -> None:
        self.close()
        self._open_file()

    def close(self) -> None:
        fh = self._file_handler
        if fh is not None:
            logging.getLogger().removeHandler(fh)
            fh.close()
            self._file_handler = None

    def _sync_root(self) -> None:
        logging.getLogger().setLevel(min([*self.defaults.values(), *self.levels.values()]))


_current = Vlog()


def current() -> Vlog:
    return _current
