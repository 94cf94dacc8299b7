"""Remote (listener) names, as `ovsdb-server --remote` takes them.

Rules kept here:
- `punix:PATH` listens on a unix socket; `ptcp:PORT[:IP]` on TCP (IP defaults to
  0.0.0.0, IPv6 literals in brackets); port 0 picks a free port, reported afterwards.
- `db:DB,TABLE,COLUMN` names a column whose values are more remotes (resolved by the
  server, not here).
- Probing: the real server sends inactivity probes on TCP connections only (5 s by
  default), never on unix sockets.
- Anything else is a clear error naming the remote.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ovsdb.errors import OvsdbError

DEFAULT_PROBE_INTERVAL = 5.0


@dataclass(frozen=True)
class Remote:
    kind: str  # "punix" | "ptcp" | "db"
    path: str = ""
    host: str = ""
    port: int = 0
    name: str = ""

    @property
    def probe_interval(self) -> float:
        return DEFAULT_PROBE_INTERVAL if self.kind == "ptcp" else 0.0


def parse_remote(name: str) -> Remote:
    kind, sep, rest = name.partition(":")
    if not sep:
        raise OvsdbError("syntax error", f"{name}: unknown remote type (expected punix:, "
                                         "ptcp: or db:)")
    if kind == "punix":
        if not rest:
            raise OvsdbError("syntax error", f"{name}: punix: requires a socket path")
        return Remote("punix", path=rest, name=name)
    if kind == "ptcp":
        port_s, _, host = rest.partition(":")
        try:
            port = int(port_s) if port_s else 0
        except ValueError:
            raise OvsdbError("syntax error", f"{name}: bad port number \"{port_s}\"") from None
        if not 0 <= port <= 65535:
            raise OvsdbError("syntax error", f"{name}: port {port} out of range")
        host = host.strip("[]") if host else "0.0.0.0"
        return Remote("ptcp", host=host, port=port, name=name)
    if kind == "db":
        parts = rest.split(",")
        if len(parts) != 3 or not all(parts):
            raise OvsdbError("syntax error", f"{name}: db: remote must be db:DB,TABLE,COLUMN")
        return Remote("db", path=rest, name=name)
    if kind in ("pssl", "ssl", "tcp", "unix"):
        raise OvsdbError("not supported", f"{name}: {kind}: remotes are not supported yet")
    raise OvsdbError("syntax error", f"{name}: unknown remote type \"{kind}\"")
