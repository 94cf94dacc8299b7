"""`pyovsdb <command>`: one entry point for the server, tools, client and sandbox.

Rules kept here:
- Every command reports failures as one line on stderr and a non-zero exit status; a
  Python traceback reaching the user is a bug.
- Installed (or linked) under the name of a real tool (`ovsdb-server`, `ovsdb-tool`,
  `ovsdb-client`, `ovn-northd`), the entry point runs the matching command with all
  its arguments, so it drops into scripts that call the real one by name.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

USAGE = """\
usage: pyovsdb COMMAND [ARG...]

commands:
  server    OVSDB server (drop-in for ovsdb-server)
  tool      database file utility (drop-in for ovsdb-tool)
  client    OVSDB client (drop-in for ovsdb-client)
  sandbox   run a local OVN Northbound + Southbound control plane
  northd    OVN Northbound -> Southbound compiler (drop-in for ovn-northd)
  scale     an OVN control plane with simulated chassis under a CMS scenario
  version   print the version
"""


COMMANDS = ("server", "tool", "client", "sandbox", "northd", "scale")
# Commands that import only their own module, so that a run stays quick (the tools) or
# its children are not slowed by modules they never use (scale). The daemons import
# everything first: they may drop privileges (--user) and then no longer be able to
# read the modules they import later.
QUICK = ("tool", "client", "scale")


def _command(name: str) -> Callable[[list[str]], int]:
    """The command's `main`."""
    import importlib

    if name not in QUICK:
        for other in COMMANDS:
            importlib.import_module(f"{__package__}.{other}")
    main: Callable[[list[str]], int] = importlib.import_module(f"{__package__}.{name}").main
    return main


def _commands() -> dict[str, Callable[[list[str]], int]]:
    """Every command's `main` (importing them all)."""
    return {name: _command(name) for name in COMMANDS}


DROP_INS = {"ovsdb-server": "server", "ovsdb-tool": "tool", "ovsdb-client": "client",
            "ovn-northd": "northd"}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    as_real = DROP_INS.get(os.path.basename(sys.argv[0])) if argv is None else None
    if as_real is not None:
        args = [as_real, *args]
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 1
    if args[0] in ("version", "-V", "--version"):
        from .. import __version__

        print(f"pyovsdb {__version__}")
        return 0
    if args[0] not in COMMANDS:
        print(f"pyovsdb: unknown command '{args[0]}'; use --help for help", file=sys.stderr)
        return 1
    cmd = _command(args[0])
    try:
        return cmd(args[1:])
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
