"""The server's PKI options (`--private-key`, `--certificate`, `--ca-cert`,
`--ssl-protocols`, `--ssl-ciphers`) and the TLS context they give now.

Rules kept here:
- An option is a value (a file name, a protocol or cipher list) or
  `db:DB,TABLE,COLUMN`, read as the real server's `query_db_string` reads it: the first
  non-empty string of that column, walking the table's rows in the real server's hash
  order. A column with no such string leaves the option unset. A name that is no
  database, table or column is logged (WARN, once each time the set of problems
  changes) and leaves it unset too.
- It is read each time a connection needs a context, so a row of OVN's or Open
  vSwitch's `SSL` table written at run time takes effect for the next connection, as
  in the real server, which reads it on every pass of its main loop.
- Unset options and unreadable files are `jsonrpc.tls`'s to report.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..jsonrpc.tls import PkiFiles, TlsContexts
from ..storage.jsonorder import uuid_hmap_order
from .remotes import db_column

if TYPE_CHECKING:
    from .hosted import HostedDb

log = logging.getLogger("ovsdb_server")

PKI_OPTIONS = ("private-key", "certificate", "ca-cert", "ssl-protocols", "ssl-ciphers",
               "peer-ca-cert", "bootstrap-ca-cert")


class ServerPki:
    def __init__(self, dbs: Mapping[str, HostedDb]) -> None:
        self.dbs = dbs
        self.options: dict[str, str] = {}  # option name -> as given
        self.contexts = TlsContexts()
        self._last_problems = ""

    def files(self) -> PkiFiles:
        problems: list[str] = []
        values = [self._resolve(self.options.get(name), problems) for name in PKI_OPTIONS]
        text = "\n".join(problems)
        if text and text != self._last_problems:
            log.warning("%s", text)
        self._last_problems = text
        key, cert, ca, protocols, ciphers, peer_ca, bootstrap = values
        return PkiFiles(key, cert, ca or bootstrap, protocols, ciphers, peer_ca,
                        bootstrap=bool(bootstrap) and not ca)

    def server_context(self) -> ssl.SSLContext | None:
        return self.contexts.context(self.files(), server_side=True)

    def client_context(self) -> ssl.SSLContext | None:
        """(an active `ssl:` remote) the same PKI, for connecting out."""
        return self.contexts.context(self.files(), server_side=False)

    def _resolve(self, value: str | None, problems: list[str]) -> str | None:
        if value is None or not value.startswith("db:"):
            return value
        parts = db_column(value)
        if parts is None:
            problems.append(f'"{value}": invalid syntax')
            return None
        db_name, table_name, column = parts
        hosted = self.dbs.get(db_name)
        if hosted is None:
            problems.append(f'"{value}": no database named {db_name}')
            return None
        table = hosted.db.tables.get(table_name)
        if table is None:
            problems.append(f'"{value}": no table named {table_name}')
            return None
        if column not in table.schema.columns:
            problems.append(f'"{value}": table "{table_name}" has no column "{column}"')
            return None
        for uuid in uuid_hmap_order(list(table.rows)):
            datum = table.rows[uuid].data.get(column)
            for atom in datum if isinstance(datum, tuple) else (datum,):
                if isinstance(atom, str) and atom:
                    return atom
        return None
