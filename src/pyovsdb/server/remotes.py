"""Remote (listener) names, as `ovsdb-server --remote` takes them.

Rules kept here:
- `punix:PATH` listens on a unix socket; a relative PATH is in the run directory
  ($OVS_RUNDIR), as the real server binds it, while the remote keeps its name as
  given. `ptcp:PORT[:IP]` listens on TCP (IP defaults to 0.0.0.0, IPv6 literals in
  brackets); port 0 picks a free port, reported afterwards; a bare `ptcp:` is the
  OVSDB port 6640, as for the real server. `pssl:PORT[:IP]` is the same with TLS
  (`jsonrpc.tls`). `tcp:HOST:PORT`, `ssl:HOST:PORT` and `unix:PATH` are active remotes
  (`server.active`): the server connects out.
- `db:DB,TABLE,COLUMN` names a column whose values are more remotes (resolved by the
  server, not here). Its three names are read as the real server reads them (C's
  `strtok` on commas: empty names are skipped, anything after the third is ignored);
  fewer than three is the real server's `"db:...": invalid syntax`, reported where
  the database is looked up (`db_column`).
- Probing: by default the real server sends inactivity probes on TCP connections only
  (every 5 s), never on unix sockets; a Connection row's `inactivity_probe` overrides
  that for its remote, unix or TCP.
- Options of a remote (`RemoteOptions`) are the defaults of its kind, or for a remote
  read from a Connection/Manager row, what the real server reads from that row:
  `max_backoff`, `inactivity_probe` (ms, 0 disables, anything else at least 1000),
  `read_only`, `role`, and `other_config:dscp` (C `atoi`; outside 0..63 keeps the
  default 48). A column of another type than the real server expects is ignored.
  `max_backoff` only matters for active remotes.
- Anything else is a clear error naming the remote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..jsonrpc.client import unix_path
from ..ovsdb.errors import OvsdbError
from ..ovsdb.rbac import read_bool, read_map_value, read_string
from ..ovsdb.schema import TableSchema
from ..util.ovshash import calc_mask, hash_string, shash_order

DEFAULT_PROBE_INTERVAL = 5.0
OVSDB_PORT = 6640
DEFAULT_MAX_BACKOFF_MS = 8000
DSCP_DEFAULT = 48  # the IP precedence "internetwork control", as the real server
MIN_PROBE_MS = 1000


@dataclass(frozen=True)
class Remote:
    kind: str  # "punix" | "ptcp" | "pssl" | "db", or active: "unix" | "tcp" | "ssl"
    path: str = ""
    host: str = ""
    port: int = 0
    name: str = ""

    @property
    def probe_interval(self) -> float:
        return DEFAULT_PROBE_INTERVAL if self.kind in ("ptcp", "pssl", "tcp", "ssl") else 0.0


def parse_remote(name: str) -> Remote:
    kind, sep, rest = name.partition(":")
    if not sep:
        raise OvsdbError("syntax error", f"{name}: unknown remote type (expected punix:, "
                                         "ptcp:, pssl: or db:)")
    if kind == "punix":
        if not rest:
            raise OvsdbError("syntax error", f"{name}: punix: requires a socket path")
        return Remote("punix", path=unix_path(rest), name=name)
    if kind in ("ptcp", "pssl"):
        if not rest:
            return Remote(kind, host="0.0.0.0", port=OVSDB_PORT, name=name)
        port_s, _, host = rest.partition(":")
        try:
            port = int(port_s) if port_s else 0
        except ValueError:
            raise OvsdbError("syntax error", f"{name}: bad port number \"{port_s}\"") from None
        if not 0 <= port <= 65535:
            raise OvsdbError("syntax error", f"{name}: port {port} out of range")
        host = host.strip("[]") if host else "0.0.0.0"
        return Remote(kind, host=host, port=port, name=name)
    if kind == "db":
        return Remote("db", path=rest, name=name)
    if kind == "unix":
        if not rest:
            raise OvsdbError("syntax error", f"{name}: unix: requires a socket path")
        return Remote("unix", path=unix_path(rest), name=name)
    if kind in ("tcp", "ssl"):
        host, _, port_s = rest.rpartition(":")
        try:
            port = int(port_s) if port_s else OVSDB_PORT
        except ValueError:
            raise OvsdbError("syntax error", f"{name}: bad port number \"{port_s}\"") from None
        if not host or not 0 < port <= 65535:
            raise OvsdbError("syntax error", f"{name}: {kind}: requires HOST:PORT")
        return Remote(kind, host=host.strip("[]"), port=port, name=name)
    raise OvsdbError("syntax error", f"{name}: unknown remote type \"{kind}\"")


def db_column(name: str) -> tuple[str, str, str] | None:
    """The (database, table, column) a `db:` remote names, read as the real server
    reads them; None if it names fewer than three."""
    parts = [p for p in name.partition(":")[2].split(",") if p][:3]
    if len(parts) < 3:
        return None
    return parts[0], parts[1], parts[2]


def walk_order(names: Iterable[str]) -> list[str]:
    """The configured remotes (distinct, in the order given) in the order the real
    server walks them once started, which is the order of its errors about them: it
    keeps them in a hash set, writes that set to its restart file in walk order and
    reads it back into the same, emptied, table (which keeps its size)."""
    given = list(names)
    mask = 0
    for n in range(1, len(given) + 1):
        if n // 2 > mask:
            mask = max(mask, calc_mask(n))

    def walk(order: list[str]) -> list[str]:
        buckets: list[list[str]] = [[] for _ in range(mask + 1)]
        for s in order:
            buckets[hash_string(s) & mask].insert(0, s)
        return [s for b in buckets for s in b]

    return walk(list(shash_order(given)))


@dataclass(frozen=True)
class RemoteOptions:
    probe_interval_ms: int
    max_backoff_ms: int = DEFAULT_MAX_BACKOFF_MS
    read_only: bool = False
    role: str | None = None
    dscp: int = DSCP_DEFAULT

    @property
    def probe_interval(self) -> float:
        """Seconds; the real reconnect FSM raises any nonzero interval to a second."""
        ms = self.probe_interval_ms
        return 0.0 if ms == 0 else max(MIN_PROBE_MS, ms) / 1000.0


def default_options(remote: Remote) -> RemoteOptions:
    return RemoteOptions(probe_interval_ms=int(remote.probe_interval * 1000))


def _read_integer(ts: TableSchema, data: dict[str, Any], name: str) -> int | None:
    col = ts.columns.get(name)
    if col is None or col.type.key.type != "integer" or col.type.value is not None \
            or col.type.max != 1:
        return None
    v = data[name]
    atoms = v if type(v) is tuple else (v,)
    return int(atoms[0]) if atoms else None


_ATOI = re.compile(r"\s*([+-]?\d+)")


def _atoi(s: str) -> int:
    m = _ATOI.match(s)
    return int(m.group(1)) if m else 0


def row_target(ts: TableSchema, data: dict[str, Any]) -> str | None:
    """The remote a Connection/Manager row names, None when it names none."""
    return read_string(ts, data, "target")


def row_options(ts: TableSchema, data: dict[str, Any], base: RemoteOptions) -> RemoteOptions:
    """`base` (the target's defaults) updated from a Connection/Manager row."""
    changes: dict[str, Any] = {}
    max_backoff = _read_integer(ts, data, "max_backoff")
    if max_backoff is not None:
        changes["max_backoff_ms"] = max_backoff
    probe = _read_integer(ts, data, "inactivity_probe")
    if probe is not None:
        changes["probe_interval_ms"] = probe
    read_only = read_bool(ts, data, "read_only")
    if read_only is not None:
        changes["read_only"] = read_only
    changes["role"] = read_string(ts, data, "role")
    dscp = DSCP_DEFAULT
    dscp_s = read_map_value(ts, data, "other_config", "dscp")
    if dscp_s is not None and 0 <= _atoi(dscp_s) <= 63:
        dscp = _atoi(dscp_s)
    changes["dscp"] = dscp
    return replace(base, **changes)
