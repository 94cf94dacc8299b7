"""Every NB column northd writes back is write-changed-only in the daemon's NB IDL, so
an unchanged value is never sent (seed 002): a builder that starts writing a new NB
column must be listed in `daemon.NB_WRITES` too."""

from __future__ import annotations

from pyovsdb.northd import daemon
from pyovsdb.northd.build import core, global_cfg, ipam, lsp_up, ports_bfd


def test_every_nb_write_back_is_write_changed_only() -> None:
    written = {("Logical_Switch_Port", c) for c in
               (*core.NB_LSP_COLUMNS, *lsp_up.NB_LSP_COLUMNS, *ipam.NB_LSP_COLUMNS)}
    written |= {("Logical_Router_Port", c) for c in core.NB_LRP_COLUMNS}
    written |= {("NB_Global", c) for c in global_cfg.NB_GLOBAL_COLUMNS}
    written |= {("BFD", c) for c in ports_bfd.NB_COLUMNS}
    assert written - set(daemon.NB_WRITES) == set()
