"""What every daemon command (`server`, `northd`) does around its own work, as OVS's
daemons do it: the logging options in command-line order, fatal errors, running the
event loop to the end, and dying of the signal that ended it.

Rules kept here:
- A logging option applies to what is logged after it; a bad one is one line on
  stderr and exit status 1. A `--log-file=FILE` that cannot be opened is the warning
  "failed to open FILE for logging: REASON" (on the console, if it is on) and exit
  status 1, as for the real daemons; a plain `--log-file` (the default file) that
  cannot be opened is only the warning.
- A fatal error is VLOG_FATAL's: the message at emer in the log file (not the console),
  then `PROGRAM: message` on stderr, exit status 1.
- A daemon stopped by a signal re-raises it with the default action once cleaned up,
  so its parent sees the signal, as with the real daemons.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from ..util import daemon, vlog
from . import options as opt


def fatal(program: str, module: str, message: str) -> int:
    vlog.current().log_quietly(module, logging.CRITICAL, message)
    sys.stderr.write(f"{program}: {message}\n")
    sys.stderr.flush()
    return 1


def logging_options(program: str, logdir: str, parsed: opt.Parsed, logs: vlog.Vlog) -> int:
    """-v, --log-file (default `logdir/program.log`) and the syslog options."""
    for name, value in parsed.options:
        try:
            if name == "verbose":
                logs.set_verbosity(value)
            elif name == "syslog-method":
                logs.set_syslog_method(value)
            elif name == "syslog-target":
                logs.set_syslog_target(value)
            elif name == "log-file":
                given = value or os.path.join(logdir, f"{program}.log")
                # On failure, the warning; then, for a file named on the command
                # line, exit status 1 with nothing more said (vlog.h's
                # VLOG_OPTION_HANDLERS); the default file is only warned about.
                if not logs.open_log_file(os.path.abspath(given), given) and value:
                    return 1
        except (ValueError, OSError) as e:
            print(f"{program}: {e}", file=sys.stderr)
            return 1
    logs.init_syslog()
    return 0


def run_to_end(program: str, module: str, d: daemon.Daemon,
               runner: Callable[[Coroutine[Any, Any, int]], int],
               main: Coroutine[Any, Any, int]) -> int:
    """Run the daemon's main coroutine; whatever the system refused at startup is one
    fatal line; the daemon's files are cleaned up in every case."""
    try:
        return runner(main)
    except daemon.Fatal as e:
        return fatal(program, module, str(e))
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        return fatal(program, module, f"{where}{e.strerror or e}")
    finally:
        d.cleanup()


def die_of(signum: int | None) -> None:
    """Re-raise the signal that stopped the daemon, with its default action."""
    if signum is not None:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
