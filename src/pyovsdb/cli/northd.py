"""`pyovsdb northd`: a drop-in for `ovn-northd` command lines (OVN 23.03).

Rules kept here:
- It is `ovn-northd` to the tools around it: process name, the `ovn-northd: ` prefix
  of its fatal errors, default files where the real one puts them: the pidfile and
  control socket in OVN's run directory ($OVN_RUNDIR/ovn-northd.pid,
  $OVN_RUNDIR/ovn-northd.PID.ctl; a relative --pidfile or --unixctl is in
  $OVN_RUNDIR), so `ovn-appctl -t ovn-northd` finds it by name, but the log file in
  Open vSwitch's log directory ($OVS_LOGDIR/ovn-northd.log, the logging library's
  rule), and the default databases `unix:$OVN_RUNDIR/ovnnb_db.sock` and
  `.../ovnsb_db.sock` ($OVN_NB_DB and $OVN_SB_DB first, as the real one reads them).
  A directory variable set to the empty string counts as unset. `--help` names these
  defaults (23.03's names the pidfile in $OVS_RUNDIR, where it does not put it).
- Options are the real ones (`--ovnnb-db`, `--ovnsb-db` each a comma-separated list of
  remotes, `--dry-run` starts paused, `--n-threads` accepted and clamped with the real
  warnings: the engine runs in one thread, `--unixctl`, `-o/--options`, the daemon,
  logging and SSL options); usage and version texts follow the real ones, the version
  ending with the OVN release we reproduce.
- One option of ours is left out of `--help` as it has no counterpart in ovn-northd:
  `--seq-delay-ms=MS`, the delay of the main loop's wake-up after a database change
  (seed 004: coalesces a burst of changes; 0, the default, wakes at once).
- Startup order is the real one: options, detach/monitor/pidfile, control socket,
  then the daemon is ready (the `--detach` parent returns) and connects to the
  databases; an unreachable database is retried, never fatal.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from .. import __version__
from ..jsonrpc import tls
from ..util import daemon, gctune, procname, vlog
from ..util.metrics_http import option_problem
from . import daemon_main as dm
from . import options as opt
from .server import OVS_COMPAT_VERSION

PROGRAM = "ovn-northd"
OVN_COMPAT_VERSION = "23.03.1"
VERSION_TEXT = (f"{PROGRAM} (pyovsdb {__version__}) {OVN_COMPAT_VERSION}\n"
                f"Open vSwitch Library {OVS_COMPAT_VERSION}")
MAX_THREADS = 256  # OVN_MAX_SUPPORTED_THREADS

USAGE = """\
{prog}: OVN northbound management daemon
usage: {prog} [OPTIONS]

Options:
  --ovnnb-db=DATABASE       connect to ovn-nb database at DATABASE
                            (default: {nb})
  --ovnsb-db=DATABASE       connect to ovn-sb database at DATABASE
                            (default: {sb})
  --dry-run                 start in paused state (do not commit db changes)
  --n-threads=N             specify number of threads
  --unixctl=SOCKET          override default control socket name
  -h, --help                display this help message
  -o, --options             list available options
  -V, --version             display version information

{daemon_usage}
Active database connection methods:
  tcp:HOST:PORT           PORT at remote HOST
  ssl:HOST:PORT           SSL PORT at remote HOST
  unix:FILE               Unix domain socket named FILE
PKI configuration (required to use SSL):
  -p, --private-key=FILE  file with private key
  -c, --certificate=FILE  file with certificate for private key
  -C, --ca-cert=FILE      file with peer CA certificate
Options of pyovsdb's own:
  --metrics=ptcp:PORT[:IP]  serve metrics (engine runs, recomputes per node, run
                            durations, transaction sizes) over HTTP at /metrics
"""

SSL_OPTIONS = ("private-key", "certificate", "ca-cert", "ssl-protocols", "ssl-ciphers")
LONG = {
    "ovnsb-db": opt.REQUIRED,
    "ovnnb-db": opt.REQUIRED,
    "options": opt.NONE,
    "dry-run": opt.NONE,
    "n-threads": opt.REQUIRED,
    "seq-delay-ms": opt.REQUIRED,
    "self-check": opt.NONE,
    "metrics": opt.REQUIRED,
    **opt.DAEMON_LONG,
    **{name: opt.REQUIRED for name in SSL_OPTIONS},
}
SHORT = {**opt.DAEMON_SHORT, "d": ("ovnsb-db", opt.REQUIRED), "D": ("ovnnb-db", opt.REQUIRED),
         "u": ("unixctl", opt.REQUIRED), "o": ("options", opt.NONE),
         "p": ("private-key", opt.REQUIRED), "c": ("certificate", opt.REQUIRED),
         "C": ("ca-cert", opt.REQUIRED)}
HIDDEN = ("seq-delay-ms", "self-check")


def ovn_rundir() -> str:
    return os.environ.get("OVN_RUNDIR") or "/var/run/ovn"


def default_nb_db() -> str:
    return os.environ.get("OVN_NB_DB") or f"unix:{ovn_rundir()}/ovnnb_db.sock"


def default_sb_db() -> str:
    return os.environ.get("OVN_SB_DB") or f"unix:{ovn_rundir()}/ovnsb_db.sock"


def _fatal(message: str, module: str = "ovn_northd") -> int:
    return dm.fatal(PROGRAM, module, message)


def _print_options() -> None:
    """`-o`: every long option and its short form, as ovs_cmdl_print_options does."""
    letters = {long: letter for letter, (long, _) in SHORT.items()}
    for name, kind in LONG.items():
        if name in HIDDEN:
            continue
        arg = {opt.NONE: "", opt.REQUIRED: "=ARG", opt.OPTIONAL: "=[ARG]"}[kind]
        print(f"--{name}{arg}")
        short_arg = {opt.NONE: "", opt.REQUIRED: " ARG", opt.OPTIONAL: " [ARG]"}[kind]
        print(f"-{letters.get(name, '')}{short_arg}")


def _n_threads(value: str) -> int:
    """ovn-northd's clamping of --n-threads, with its warnings (strtoul: a bad number
    is 0)."""
    digits = ""
    for ch in value.strip():
        if not ch.isdigit():
            break
        digits += ch
    n = int(digits) if digits else 0
    log = logging.getLogger("ovn_northd")
    if n < 1:
        n = 1
        log.warning("Setting n_threads to %d as --n-threads option was set to : [%s]",
                    n, value)
    if n > MAX_THREADS:
        n = MAX_THREADS
        log.warning("Setting n_threads to %d as --n-threads option was set to : [%s]",
                    n, value)
    if n != 1:
        log.info("Using %d threads", n)
    return n


def main(argv: list[str]) -> int:
    try:
        parsed = opt.parse(argv, LONG, SHORT)
    except opt.UsageError as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 1
    if parsed.has("help"):
        places = {"prog": PROGRAM, "rundir": ovn_rundir(), "logdir": daemon.logdir()}
        print(USAGE.format(daemon_usage=opt.DAEMON_USAGE.format(**places), **places,
                           nb=default_nb_db(), sb=default_sb_db()), end="")
        return 0
    if parsed.has("options"):
        _print_options()
        return 0
    if parsed.has("version"):
        print(VERSION_TEXT)
        return 0
    if parsed.args:
        print(f"{PROGRAM}: unexpected argument '{parsed.args[0]}'", file=sys.stderr)
        return 1
    procname.set_name(PROGRAM)
    logs = vlog.current()
    logs.program = PROGRAM
    rc = dm.logging_options(PROGRAM, daemon.logdir(), parsed, logs)
    if rc:
        return rc
    for name in ("ovnnb-db", "ovnsb-db"):
        for remote in (parsed.get(name) or "").split(","):
            if remote.startswith("pssl:"):
                print(f"{PROGRAM}: {remote}: passive SSL remotes are not supported",
                      file=sys.stderr)
                return 1
    # (`ssl:` databases: the key and certificate are read again at each connection)
    tls.set_client_pki(tls.PkiFiles(*(parsed.get(name) for name in SSL_OPTIONS)))
    metrics = parsed.get("metrics")
    problem = option_problem(metrics)
    if problem is not None:
        print(f"{PROGRAM}: {problem}", file=sys.stderr)
        return 1
    n_threads = 1
    for value in parsed.all("n-threads"):
        n_threads = _n_threads(value)
    try:
        seq_delay = float(parsed.get("seq-delay-ms", "0"))
    except ValueError:
        seq_delay = -1.0
    if seq_delay < 0:
        print(f"{PROGRAM}: --seq-delay-ms requires a non-negative number", file=sys.stderr)
        return 1
    from ..northd.daemon import Config, Northd

    config = Config(
        nb_remotes=(parsed.get("ovnnb-db") or default_nb_db()).split(","),
        sb_remotes=(parsed.get("ovnsb-db") or default_sb_db()).split(","),
        paused=parsed.has("dry-run"),
        n_threads=n_threads,
        seq_delay_ms=seq_delay,
        version_text=VERSION_TEXT,
        self_check=parsed.has("self-check"),
        metrics=metrics,
    )
    pidfile = None
    if parsed.has("pidfile"):
        pidfile = os.path.join(ovn_rundir(), parsed.get("pidfile") or f"{PROGRAM}.pid")
    unixctl = parsed.get("unixctl")
    if unixctl is None:
        unixctl = os.path.join(ovn_rundir(), f"{PROGRAM}.{{pid}}.ctl")
    elif unixctl != "none":
        unixctl = os.path.join(ovn_rundir(), unixctl)
    try:
        if parsed.has("user"):
            daemon.become_user(parsed.get("user"), pidfile, logs.log_file)
        d = daemon.Daemon(detach=parsed.has("detach"), monitor=parsed.has("monitor"),
                          pidfile=pidfile, overwrite_pidfile=parsed.has("overwrite-pidfile"),
                          chdir=not parsed.has("no-chdir"))
        d.start()
    except daemon.Fatal as e:
        return _fatal(str(e), "daemon_unix")
    config.unixctl = None if unixctl == "none" else unixctl.replace("{pid}", str(os.getpid()))
    gctune.tune()
    northd = Northd(config, ready=d.complete)
    status = dm.run_to_end(PROGRAM, "ovn_northd", d, asyncio.run, northd.serve())
    dm.die_of(northd.signal)
    return status

