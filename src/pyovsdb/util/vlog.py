"""Logging in the format and with the `-v` options of Open vSwitch daemons (lib/vlog.c).

Rules kept here:
- Destinations are "console" (stderr), "file" and "syslog"; levels are off, emer, err,
  warn, info, dbg. Every module starts at info on every destination, as in the real
  daemons (a detached daemon turns its console off: `console_off`).
- A spec is words separated by ' ', ',', ':' or tab, at most one module, one
  destination and one level each, in any order, case-insensitive; "any" is skipped; a
  missing destination means all of them, a missing level dbg. `PATTERN:DEST:FORMAT`
  sets a destination's line format and `FACILITY:NAME` the syslog facility. An empty
  spec (a bare `-v`, `vlog/set` with no argument) sets every module everywhere to dbg.
  Errors use the real wording ("cannot specify multiple levels", `no destination,
  level, or module "x"`).
- A line is built from its destination's pattern with the real escapes (%A %B %c %d
  %D %E %m %N %n %p %P %r %t %T, widths, `-` and `0`); the defaults give
  `2026-11-30T04:18:22.560Z|00001|module|INFO|message` in the file,
  `2026-11-30T04:18:22Z|00001|...` on the console. A message's sequence number counts
  the messages that reached at least one destination; a subprogram name (the
  `--monitor` supervisor, a restarted daemon) shows as `module(name)`. Text that
  holds bytes which are not UTF-8 (a client's string quoted in a message) is written
  as those bytes, as the real daemons write it (util/utf8.py).
- The log file is opened in append mode; opening logs "opened log file NAME" (module
  vlog, info; NAME as the user gave it, while the file is kept by absolute path);
  switching away from a file logs "closing log file" to it first, and `reopen` does
  both only when the path now names another file (log rotation).
- Syslog: `--syslog-method` libc (the local /dev/log, silently nothing if absent),
  null, unix:PATH or udp:HOST:PORT; `--syslog-target=HOST:PORT` also sends every
  syslog line as RFC 5424 over UDP.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import sys
import time
from collections.abc import Callable

from . import ratelimit
from .utf8 import to_bytes

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
# syslog priority of each level (the real table: emer is LOG_ALERT, info LOG_NOTICE).
_SYSLOG_LEVEL = {logging.CRITICAL: 1, logging.ERROR: 3, logging.WARNING: 4,
                 logging.INFO: 5, logging.DEBUG: 7}
DESTINATIONS = ("console", "syslog", "file")
DEFAULT_PATTERNS = {
    "console": "%D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c%T|%p|%m",
    "file": "%D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m",
    "syslog": "ovs|%05N|%c%T|%p|%m",
}
FACILITIES = {
    "kern": 0, "user": 1, "mail": 2, "daemon": 3, "auth": 4, "syslog": 5, "lpr": 6,
    "news": 7, "uucp": 8, "clock": 9, "ftp": 11, "ntp": 12, "audit": 13, "alert": 14,
    "clock2": 15, "local0": 16, "local1": 17, "local2": 18, "local3": 19, "local4": 20,
    "local5": 21, "local6": 22, "local7": 23,
}
MODULES = frozenset((
    # ours
    "jsonrpc", "ovsdb_server", "ovsdb_jsonrpc_server", "unixctl", "reconnect", "raft",
    "raft_rpc", "storage", "ovsdb_idl", "northd", "sandbox", "memory", "vlog",
    # the real daemons' usual ones, accepted so their command lines work unchanged
    "ovsdb_log", "ovsdb_file", "ovsdb_monitor", "ovsdb_trigger", "ovsdb_cs", "ovsdb_util",
    "stream", "stream_unix", "stream_tcp", "stream_ssl", "stream_fd", "socket_util",
    "poll_loop", "timeval", "fatal_signal", "daemon", "daemon_unix", "lockfile",
    "coverage", "stopwatch", "backtrace", "ovn_northd", "inc_proc_eng", "replication",
    "relay", "ovsdb_relay", "transaction_forward", "ovsdb_error", "json",
    "pstream", "stream_replay", "netlink_socket", "timer", "process",
    # ovn-northd's, where it reports bad NB data and its housekeeping
    "ovn_util", "lb", "ipam", "memory_trim", "en_northd", "en_lflow", "en_sync_to_sb",
    "inc_proc_northd", "mac_binding_aging",
))
_SEPARATORS = " ,:\t"


def _tokens(s: str) -> list[str]:
    out, word = [], ""
    for ch in s:
        if ch in _SEPARATORS:
            if word:
                out.append(word)
            word = ""
        else:
            word += ch
    if word:
        out.append(word)
    return out


def _split_first(s: str) -> tuple[str, str]:
    """The first word of `s` and what follows the separator after it (strtok_r's
    save pointer)."""
    i = 0
    while i < len(s) and s[i] in _SEPARATORS:
        i += 1
    j = i
    while j < len(s) and s[j] not in _SEPARATORS:
        j += 1
    return s[i:j], s[j + 1:]


Piece = Callable[[logging.LogRecord, int, "Vlog"], str]


def _strftime(fmt: str, created: float, utc: bool) -> str:
    t = time.gmtime(created) if utc else time.localtime(created)
    ms = f"{int(created * 1000) % 1000:03d}"
    return time.strftime(fmt, t).replace("###", ms)


def compile_pattern(pattern: str) -> list[Piece]:
    """A pattern as a list of functions (record, sequence number, vlog) -> text."""
    pieces: list[Piece] = []
    i = 0
    n = len(pattern)
    while i < n:
        if pattern[i] != "%":
            j = pattern.find("%", i)
            lit = pattern[i:] if j < 0 else pattern[i:j]
            pieces.append(functools.partial(_literal, lit))
            i += len(lit)
            continue
        i += 1
        left = zero = False
        if i < n and pattern[i] == "-":
            left, i = True, i + 1
        if i < n and pattern[i] == "0":
            zero, i = True, i + 1
        width = 0
        while i < n and pattern[i].isdigit():
            width = width * 10 + int(pattern[i])
            i += 1
        if i >= n:
            break
        c = pattern[i]
        i += 1
        arg = None
        if c in "cdD" and i < n and pattern[i] == "{":
            end = pattern.find("}", i)
            end = n if end < 0 else end
            arg, i = pattern[i + 1:end], end + 1
        piece = _escape(c, arg)
        if width:
            piece = _padded(piece, width, left, "0" if zero else " ")
        pieces.append(piece)
    return pieces


def _escape(c: str, arg: str | None) -> Piece:
    if c == "A":
        return lambda r, s, v: v.program
    if c == "B":
        return lambda r, s, v: str((v.facility if v.facility is not None else 16) * 8
                                   + _SYSLOG_LEVEL.get(r.levelno, 7))
    if c == "c":
        return lambda r, s, v: r.name
    if c in "dD":
        fmt = arg or "%Y-%m-%d %H:%M:%S.###"
        utc = c == "D"
        return lambda r, s, v: _strftime(fmt, r.created, utc)
    if c == "E":
        return lambda r, s, v: socket.gethostname()
    if c == "m":
        return lambda r, s, v: v.message(r)
    if c == "N":
        return lambda r, s, v: str(s)
    if c == "n":
        return lambda r, s, v: "\n"
    if c == "p":
        return lambda r, s, v: _NAMES.get(r.levelno, r.levelname)
    if c == "P":
        return lambda r, s, v: str(os.getpid())
    if c == "r":
        return lambda r, s, v: str(int((r.created - v.boot) * 1000))
    if c == "t":
        return lambda r, s, v: v.subprogram or "main"
    if c == "T":
        return lambda r, s, v: f"({v.subprogram})" if v.subprogram else ""
    return functools.partial(_literal, c)


def _literal(text: str, record: logging.LogRecord, seq: int, vlog: Vlog) -> str:
    return text


def _padded(piece: Piece, width: int, left: bool, pad: str) -> Piece:
    if left:
        return lambda r, s, v: piece(r, s, v).ljust(width, pad)
    return lambda r, s, v: piece(r, s, v).rjust(width, pad)


_RFC5424 = compile_pattern("<%B>1 %D{%Y-%m-%dT%H:%M:%S.###Z} %E %A %P %c - \ufeff%m")


class _Handler(logging.Handler):
    """One handler for the three destinations, so that a message gets one sequence
    number whatever reaches it."""

    def __init__(self, vlog: Vlog) -> None:
        super().__init__(logging.DEBUG)
        self.vlog = vlog

    def emit(self, record: logging.LogRecord) -> None:
        self.vlog.emit(record)

    def handle(self, record: logging.LogRecord) -> bool:  # no handler lock needed
        self.vlog.emit(record)
        return True


class Vlog:
    """Levels per (module, destination), patterns, and the destinations themselves."""

    def __init__(self) -> None:
        self.defaults: dict[str, int] = {d: LEVELS["info"] for d in DESTINATIONS}
        self.levels: dict[tuple[str, str], int] = {}
        self.patterns = dict(DEFAULT_PATTERNS)
        self._compiled = {d: compile_pattern(p) for d, p in self.patterns.items()}
        self.program = "ovsdb-server"
        self.subprogram = ""
        self.facility: int | None = None
        self.boot = time.time()
        self.seq = 0
        self.log_file: str | None = None
        self.log_name: str | None = None
        self._fd = -1
        self._syslog: socket.socket | None = None
        self._syslog_addr: str | tuple[str, int] | None = None
        self._syslog_method: str | None = None
        self._syslog_target: socket.socket | None = None
        self._console = True
        self._handler = _Handler(self)

    def install(self) -> None:
        """Make this the destination of every logger (one instance per process)."""
        root = logging.getLogger()
        if self._handler not in root.handlers:
            root.addHandler(self._handler)
        self._sync_root()

    # -- levels ------------------------------------------------------------------------

    def level(self, module: str, dest: str) -> int:
        return self.levels.get((module, dest), self.defaults[dest])

    def set_spec(self, spec: str) -> None:
        """Apply one `-v`/`vlog/set` spec; ValueError with the real wording if bad."""
        first, rest = _split_first(spec)
        if first.lower() == "pattern":
            named, fmt = _split_first(rest)
            if not named:
                raise ValueError("missing destination")
            dests = self._dests(named)
            if dests is None:
                raise ValueError(f'unknown destination "{named}"')
            for d in dests:
                self.patterns[d] = fmt
                self._compiled[d] = compile_pattern(fmt)
            return
        if first.lower() == "facility":
            value = FACILITIES.get(rest.lower())
            if value is None:
                raise ValueError("invalid facility")
            self.facility = value
            return
        module: str | None = None
        dest: str | None = None
        level = None
        for word in _tokens(spec):
            w = word.lower()
            if w == "any":
                continue
            if w in DESTINATIONS:
                if dest is not None:
                    raise ValueError("cannot specify multiple destinations")
                dest = w
            elif w in LEVELS:
                if level is not None:
                    raise ValueError("cannot specify multiple levels")
                level = LEVELS[w]
            elif w in MODULES:
                if module is not None:
                    raise ValueError("cannot specify multiple modules")
                module = w
            else:
                raise ValueError(f'no destination, level, or module "{word}"')
        self.set_levels(module, dest, LEVELS["dbg"] if level is None else level)

    def set_levels(self, module: str | None, dest: str | None, level: int) -> None:
        for d in DESTINATIONS if dest is None else (dest,):
            if module is None:
                self.defaults[d] = level
                for key in [k for k in self.levels if k[1] == d]:
                    del self.levels[key]
            else:
                self.levels[(module, d)] = level
        self._sync_root()

    def set_verbosity(self, spec: str | None) -> None:
        """The `-v[SPEC]` option; ValueError as `processing "SPEC": why`."""
        if not spec:
            self.set_levels(None, None, LEVELS["dbg"])
            return
        try:
            self.set_spec(spec)
        except ValueError as e:
            raise ValueError(f'processing "{spec}": {e}') from None

    @staticmethod
    def _dests(word: str) -> tuple[str, ...] | None:
        w = word.lower()
        if w == "any":
            return DESTINATIONS
        return (w,) if w in DESTINATIONS else None

    def console_off(self) -> None:
        """What a detached daemon does once its standard streams are /dev/null."""
        self.set_levels(None, "console", LEVELS["off"])

    def list(self) -> str:
        lines = []
        for m in MODULES:
            c, s, f = (_LEVEL_NAMES[self.level(m, d)] for d in DESTINATIONS)
            limits = "" if ratelimit.honors(m) else "    (rate limiting disabled)"
            lines.append(f"{m:<16}  {c:>4}       {s:>4}       {f:>4}{limits}\n")
        return ("                 console    syslog    file\n"
                "                 -------    ------    ------\n" + "".join(sorted(lines)))

    def list_patterns(self) -> str:
        out = ["         prefix                            format\n",
               "         ------                            ------\n"]
        for d in DESTINATIONS:
            prefix = "<%B>1 %D{%Y-%m-%dT%H:%M:%S.###Z} %E %A %P %c - \ufeff" \
                if d == "syslog" and self._syslog_target is not None else "none"
            out.append(f"{d:<7}  {prefix:<32}  {self.patterns[d]}\n")
        return "".join(out)

    # -- output ------------------------------------------------------------------------

    def message(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + logging.Formatter().formatException(record.exc_info)
        return msg.rstrip("\n")

    def format(self, dest: str, record: logging.LogRecord, seq: int) -> str:
        return "".join(p(record, seq, self) for p in self._compiled[dest])

    def emit(self, record: logging.LogRecord) -> None:
        name, lv = record.name, record.levelno
        to_console = self._console and lv >= self.level(name, "console")
        to_file = self._fd >= 0 and lv >= self.level(name, "file")
        to_syslog = (self._syslog_addr is not None or self._syslog_target is not None) \
            and lv >= self.level(name, "syslog")
        if not (to_console or to_file or to_syslog):
            return
        self.seq += 1
        try:
            if to_console:
                sys.stderr.write(self.format("console", record, self.seq) + "\n")
                sys.stderr.flush()
            if to_syslog:
                self._send_syslog(record)
            if to_file:
                os.write(self._fd, to_bytes(self.format("file", record, self.seq) + "\n"))
        except (OSError, ValueError):
            pass  # a log line that cannot be written is not a reason to fail

    def log_quietly(self, module: str, level: int, message: str) -> None:
        """Log to the file and syslog only (a fatal error is printed separately)."""
        console, self._console = self._console, False
        try:
            logging.getLogger(module).log(level, "%s", message)
        finally:
            self._console = console

    def _send_syslog(self, record: logging.LogRecord) -> None:
        facility = self.facility if self.facility is not None else 3  # daemon
        pri = facility * 8 + _SYSLOG_LEVEL.get(record.levelno, 7)
        if self._syslog_addr is not None:
            text = self.format("syslog", record, self.seq)
            # libc's syslog() adds a time stamp and the program; the direct methods
            # send the priority and the line only, as lib/syslog-direct.c does.
            head = f"<{pri}>"
            if self._syslog_method == "libc":
                stamp = time.strftime("%b %e %H:%M:%S", time.localtime(record.created))
                head += f"{stamp} {self.program}: "
            for line in text.split("\n"):
                if line:
                    self._syslog_send(to_bytes(f"{head}{line}"))
        if self._syslog_target is not None:
            line = "".join(p(record, self.seq, self) for p in _RFC5424)
            try:
                self._syslog_target.send(to_bytes(line))
            except OSError:
                pass

    def _syslog_send(self, data: bytes) -> None:
        addr = self._syslog_addr
        try:
            if self._syslog is None:
                family = socket.AF_UNIX if isinstance(addr, str) else socket.AF_INET
                s = socket.socket(family, socket.SOCK_DGRAM)
                s.connect(addr)  # type: ignore[arg-type]
                self._syslog = s
            self._syslog.send(data)
        except OSError:
            if self._syslog is not None:
                self._syslog.close()
            self._syslog = None

    def set_syslog_method(self, method: str) -> None:
        """`--syslog-method`; the first one given wins, as in the real daemons."""
        if self._syslog_method is not None:
            return
        if method == "null":
            addr: str | tuple[str, int] | None = None
        elif method == "libc":
            addr = "/dev/log"
        elif method.startswith("unix:"):
            addr = method[5:]
        elif method.startswith("udp:"):
            host, _, port = method[4:].rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"{method}: bad peer name format")
            addr = (host, int(port))
        else:
            raise ValueError(f"unsupported syslog method '{method}'")
        self._syslog_method = method
        self._syslog_addr = addr
        self._sync_root()

    def set_syslog_target(self, target: str) -> None:
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{target}: bad peer name format")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect((host, int(port)))
        except OSError:
            s.close()
            raise
        old = self._syslog_target
        first = old is None
        if old is not None:
            old.close()
        self._syslog_target = s
        self._sync_root()
        if first:
            logging.getLogger("vlog").warning("--syslog-target flag is deprecated, use "
                                              "--syslog-method instead")

    def init_syslog(self) -> None:
        """The default syslog method (OVS_SYSLOG_METHOD, else libc), set at startup."""
        if self._syslog_method is None:
            self.set_syslog_method(os.environ.get("OVS_SYSLOG_METHOD") or "libc")

    # -- the log file ------------------------------------------------------------------

    def set_log_file(self, path: str | None, name: str | None = None) -> None:
        """Switch to `path` (None: close), called `name` in the log (the name as the
        user gave it; `path` is absolute so that a reopen after a chdir finds it).
        OSError if it cannot be opened; the old file stays in use then."""
        new_fd = -1
        if path is not None:
            new_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                             0o660)
        if self._fd >= 0 and new_fd >= 0:
            a, b = os.fstat(self._fd), os.fstat(new_fd)
            if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
                os.close(new_fd)
                self.log_file = path
                self.log_name = name or path
                return
        if self._fd < 0 and new_fd < 0:
            return
        if self._fd >= 0:
            logging.getLogger("vlog").info("closing log file")
            os.close(self._fd)
        self._fd = new_fd
        self.log_file = path
        self.log_name = name or path
        self._sync_root()
        if path is not None:
            logging.getLogger("vlog").info("opened log file %s", self.log_name)

    def open_log_file(self, path: str, name: str | None = None) -> bool:
        """`--log-file`: False (after the real warning) if it cannot be opened."""
        try:
            self.set_log_file(path, name)
        except OSError as e:
            logging.getLogger("vlog").warning("failed to open %s for logging: %s",
                                              name or path, e.strerror)
            return False
        return True

    def reopen(self) -> None:
        """`vlog/reopen`: OSError if the file cannot be opened again."""
        if self.log_file is not None:
            self.set_log_file(self.log_file, self.log_name)

    def close(self) -> None:
        """`vlog/close`: stop writing to the file but remember its name for `reopen`."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._sync_root()

    def suspend_file(self) -> tuple[str, str] | None:
        """Close the log file (logging "closing log file"), returning (path, name) for
        `open_log_file`."""
        if self.log_file is None:
            return None
        saved = (self.log_file, self.log_name or self.log_file)
        self.set_log_file(None)
        return saved

    def _sync_root(self) -> None:
        active = [d for d in DESTINATIONS
                  if (d == "console" and self._console) or (d == "file" and self._fd >= 0)
                  or (d == "syslog" and (self._syslog_addr is not None
                                         or self._syslog_target is not None))]
        levels = [self.defaults[d] for d in active]
        levels += [lv for (_, d), lv in self.levels.items() if d in active]
        logging.getLogger().setLevel(min(levels) if levels else LEVELS["off"])


_current: Vlog | None = None


def current() -> Vlog:
    global _current
    if _current is None:
        _current = Vlog()
        _current.install()
    return _current
