"""Command-line parsing with the real tools' conventions (getopt_long).

Rules kept here:
- Long options take a required argument as `--opt=VALUE` or `--opt VALUE`; an optional
  argument only as `--opt=VALUE` (so `--pidfile db.db` leaves db.db a positional), and
  a flag takes none.
- A unique prefix of a long option is accepted, as getopt_long does.
- Short options `-vSPEC` (verbosity), `-h`, `-V`, `-t SECS`, `-f FMT`, `-m`, `-d FMT`
  as declared by each command; `--` ends the options.
- Errors are `UsageError` with the real tools' wording; the caller prints one line and
  exits non-zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NONE, REQUIRED, OPTIONAL = "none", "required", "optional"


class UsageError(Exception):
    pass


@dataclass
class Parsed:
    options: list[tuple[str, Any]] = field(default_factory=list)
    args: list[str] = field(default_factory=list)

    def get(self, name: str, default: Any = None) -> Any:
        value = default
        for n, v in self.options:
            if n == name:
                value = v
        return value

    def all(self, name: str) -> list[Any]:
        return [v for n, v in self.options if n == name]

    def has(self, name: str) -> bool:
        return any(n == name for n, _ in self.options)


def parse(
    argv: list[str],
    long_opts: dict[str, str],
    short_opts: dict[str, tuple[str, str]] | None = None,
    *,
    interleave: bool = True,
) -> Parsed:
    """`long_opts`: name -> arg kind. `short_opts`: letter -> (long name, arg kind)."""
    short_opts = short_opts or {}
    out = Parsed()
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--":
            out.args.extend(argv[i:])
            break
        if a.startswith("--") and len(a) > 2:
            name, eq, value = a[2:].partition("=")
            name = _resolve(name, long_opts)
            kind = long_opts[name]
            if kind == NONE:
                if eq:
                    raise UsageError(f"option '--{name}' doesn't allow an argument")
                out.options.append((name, True))
            elif kind == REQUIRED:
                if not eq:
                    if i >= len(argv):
                        raise UsageError(f"option '--{name}' requires an argument")
                    value = argv[i]
                    i += 1
                out.options.append((name, value))
            else:
                out.options.append((name, value if eq else None))
            continue
        if a.startswith("-") and len(a) > 1:
            letter = a[1]
            spec = short_opts.get(letter)
            if spec is None:
                raise UsageError(f"invalid option -- '{letter}'")
            name, kind = spec
            rest = a[2:]
            if kind == NONE:
                out.options.append((name, True))
                for extra in rest:
                    spec2 = short_opts.get(extra)
                    if spec2 is None or spec2[1] != NONE:
                        raise UsageError(f"invalid option -- '{extra}'")
                    out.options.append((spec2[0], True))
            elif kind == REQUIRED:
                if not rest:
                    if i >= len(argv):
                        raise UsageError(f"option requires an argument -- '{letter}'")
                    rest = argv[i]
                    i += 1
                out.options.append((name, rest))
            else:
                out.options.append((name, rest if rest else None))
            continue
        out.args.append(a)
        if not interleave:
            out.args.extend(argv[i:])
            break
    return out


def _resolve(name: str, long_opts: dict[str, str]) -> str:
    if name in long_opts:
        return name
    matches = [o for o in long_opts if o.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(f"unrecognized option '--{name}'")
    raise UsageError(f"option '--{name}' is ambiguous")


# The help text of those options (daemon_usage() and vlog_usage() of OVS), with
# {rundir}, {logdir} and {prog} left for the caller's format().
DAEMON_USAGE = """\
Daemon options:
  --detach                run in background as daemon
  --monitor               creates a process to monitor this daemon
  --user=username[:group] changes the effective daemon user:group
  --no-chdir              do not chdir to '/'
  --pidfile[=FILE]        create pidfile (default: {rundir}/{prog}.pid)
  --overwrite-pidfile     with --pidfile, start even if already running

Logging options:
  -vSPEC, --verbose=SPEC   set logging levels
  -v, --verbose            set maximum verbosity level
  --log-file[=FILE]        enable logging to specified FILE
                           (default: {logdir}/{prog}.log)
  --syslog-method=(libc|unix:file|udp:ip:port)
                           specify how to send messages to syslog daemon
  --syslog-target=HOST:PORT  also send syslog msgs to HOST:PORT via UDP
"""

# Options every OVS daemon accepts (lib/daemon.h, lib/vlog.h).
DAEMON_LONG = {
    "detach": NONE,
    "no-chdir": NONE,
    "pidfile": OPTIONAL,
    "overwrite-pidfile": NONE,
    "monitor": NONE,
    "user": REQUIRED,
    "log-file": OPTIONAL,
    "verbose": OPTIONAL,
    "syslog-target": REQUIRED,
    "syslog-method": REQUIRED,
    "unixctl": REQUIRED,
    "help": NONE,
    "version": NONE,
    "no-self-confinement": NONE,
}
DAEMON_SHORT = {"v": ("verbose", OPTIONAL), "h": ("help", NONE), "V": ("version", NONE)}
