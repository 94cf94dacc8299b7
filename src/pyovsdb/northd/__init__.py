"""northd: the OVN Northbound -> Southbound compiler on the incremental engine.

Pure except `daemon.py` (the only module with I/O: IDLs, lock, main loop, appctl)."""
