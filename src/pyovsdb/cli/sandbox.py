"""`pyovsdb sandbox`: a local OVN control plane (Northbound and Southbound databases) in
one command, with the OVN schemas shipped in the package.

Rules kept here:
- Everything lives in one directory (default `./sandbox`): database files, unix
  sockets, pidfiles, control sockets, logs. Existing databases are reused.
- Servers listen on unix sockets in that directory and on 127.0.0.1 (6641 for NB and
  6642 for SB, like ovn-central; free ports if those are taken).
- The sandbox runs in the foreground and, on Ctrl-C or SIGTERM, stops exactly the
  processes it started, by pid.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from importlib.resources import files

from ..storage import standalone
from . import options as opt

USAGE = """\
usage: pyovsdb sandbox [--dir=DIR] [--nb-port=PORT] [--sb-port=PORT]
Runs OVN Northbound and Southbound database servers locally until interrupted.
"""

LONG = {"dir": opt.REQUIRED, "nb-port": opt.REQUIRED, "sb-port": opt.REQUIRED,
        "help": opt.NONE, "ready-file": opt.REQUIRED}


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pick_port(preferred: int) -> int:
    if preferred and _port_free(preferred):
        return preferred
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    try:
        parsed = opt.parse(argv, LONG, {"h": ("help", opt.NONE)})
    except opt.UsageError as e:
        print(f"pyovsdb sandbox: {e}", file=sys.stderr)
        return 1
    if parsed.has("help"):
        print(USAGE, end="")
        return 0
    directory = os.path.abspath(parsed.get("dir", "sandbox"))
    os.makedirs(directory, exist_ok=True)
    dbs = {"nb": ("ovn-nb.ovsschema", int(parsed.get("nb-port", 6641))),
           "sb": ("ovn-sb.ovsschema", int(parsed.get("sb-port", 6642)))}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    endpoints: dict[str, tuple[str, str]] = {}

    def stop(*_: object) -> None:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
        for p in procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

    try:
        for name, (schema_file, port) in dbs.items():
            path = os.path.join(directory, f"{name}.db")
            if not os.path.exists(path):
                schema = files("pyovsdb.schemas").joinpath(schema_file).read_bytes()
                import orjson

                standalone.create(path, orjson.loads(schema))
            port = _pick_port(port)
            sock = os.path.join(directory, f"{name}.sock")
            cmd = [sys.executable, "-m", "pyovsdb", "server", f"--remote=punix:{sock}",
                   f"--remote=ptcp:{port}:127.0.0.1",
                   f"--unixctl={os.path.join(directory, name + '.ctl')}",
                   f"--pidfile={os.path.join(directory, name + '.pid')}",
                   f"--log-file={os.path.join(directory, name + '.log')}",
                   "-vconsole:off", path]
            procs[name] = subprocess.Popen(cmd)
            endpoints[name] = (f"unix:{sock}", f"tcp:127.0.0.1:{port}")
        for name in procs:
            sock = endpoints[name][0][5:]
            deadline = time.monotonic() + 30
            while not os.path.exists(sock):
                if procs[name].poll() is not None:
                    raise SystemExit(f"pyovsdb sandbox: {name} server exited during startup "
                                     f"(see {directory}/{name}.log)")
                if time.monotonic() > deadline:
                    raise SystemExit(f"pyovsdb sandbox: {name} server did not start")
                time.sleep(0.05)
        nb_unix, nb_tcp = endpoints["nb"]
        sb_unix, sb_tcp = endpoints["sb"]
        print(f"""\
pyovsdb sandbox running in {directory}
  Northbound: {nb_unix}  {nb_tcp}
  Southbound: {sb_unix}  {sb_tcp}

Try:
  ovn-nbctl --db={nb_unix} ls-add sw0
  ovn-nbctl --db={nb_tcp} show
  ovn-sbctl --db={sb_unix} show
  ovsdb-client dump {nb_unix} OVN_Northbound
  pyovsdb client dump {nb_unix} OVN_Northbound
  ovs-appctl -t {directory}/nb.ctl memory/show

Press Ctrl-C to stop.""", flush=True)
        ready = parsed.get("ready-file")
        if ready:
            with open(ready, "w") as f:
                f.write(f"{nb_unix} {nb_tcp} {sb_unix} {sb_tcp}\n")
        signal.signal(signal.SIGTERM, _interrupt)
        while all(p.poll() is None for p in procs.values()):
            time.sleep(0.2)
        failed = [n for n, p in procs.items() if p.poll() is not None]
        print(f"pyovsdb sandbox: {', '.join(failed)} server exited", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()
