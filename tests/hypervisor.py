"""Real OVN hypervisors and control planes for tests: `ovs-vswitchd` on a dummy datapath
with `ovn-controller` beside it, and NB + SB databases with the real `ovn-northd`
between them, each database served by our server ("ours") or the real ovsdb-server
("real").

Rules kept here:
- Every daemon runs in the foreground as our child (never `--detach`), in a directory
  of its own (OVS_RUNDIR, OVS_LOGDIR, OVS_DBDIR, OVN_RUNDIR, OVN_LOGDIR, OVN_DBDIR all
  point there, so two hypervisors never share a control socket or `br-int.mgmt`), with
  explicit pidfile and log file.
- A daemon is stopped by its own pid (SIGTERM, then SIGKILL), whatever happened: also
  when `start()` fails half-way, and nothing else is ever signalled.
- Only unix sockets and loopback addresses (encap IPs are 127.0.0.N).
- No kernel module: `--enable-dummy=override` makes every datapath and netdev a dummy,
  VIFs are `type=dummy` interfaces.
- Every wait polls against a deadline; a timeout raises with the tails of the logs of
  the daemons involved, so a failure in CI says which daemon was stuck and why.
- What ovn-northd would choose at random (svc_monitor_mac, mac_prefix) is fixed, and
  flow tables are compared only after `normalize_flows` has named what ovn-controller
  numbers in hash order (conntrack zones, a flood's member order): two runs of one
  scenario on the real server then give equal tables, so any difference left is a
  difference of the servers.
- The API (Hypervisor, ControlPlane and their methods) is only ever extended: other
  tests build on it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from procs import (
    NB_SCHEMA,
    SB_SCHEMA,
    VSWITCH_SCHEMA,
    ServerProcess,
    create_db,
    free_port,
    require,
    run,
    stop_process,
)

WAIT = 30.0
CTL_TIMEOUT = "--timeout=20"
BRIDGE = "br-int"
SVC_MONITOR_MAC = "0a:00:00:00:00:fe"
MAC_PREFIX = "0a:00:00"
# Fields of `ovs-ofctl dump-flows` that count or time traffic, not what a flow does.
VOLATILE_FLOW_FIELDS = ("cookie", "duration", "n_packets", "n_bytes", "idle_age", "hard_age")


class DaemonError(AssertionError):
    """A daemon did not come up or a wait timed out; the message carries log tails."""


def tail(path: str | Path, lines: int = 40) -> str:
    p = Path(path)
    if not p.exists():
        return f"--- {p.name}: (no log)"
    text = p.read_text(errors="replace").splitlines()[-lines:]
    return f"--- {p.name} (last {len(text)} lines):\n" + "\n".join(text)


def poll(pred: Callable[[], bool], what: str, logs: Callable[[], str],
         timeout: float = WAIT, interval: float = 0.1) -> None:
    """Wait for `pred()`; on timeout raise with `what` and the daemons' log tails."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise DaemonError(f"timed out after {timeout:.0f} s waiting for {what}\n{logs()}")
        time.sleep(interval)


class Daemon:
    """One OVS/OVN daemon as our foreground child, stopped by pid."""

    def __init__(self, name: str, cmd: list[str], workdir: Path, env: dict[str, str]) -> None:
        self.name = name
        self.cmd = cmd
        self.workdir = workdir
        self.env = env
        self.pidfile = str(workdir / f"{name}.pid")
        self.logfile = str(workdir / f"{name}.log")
        # What a daemon says before it opens its log file (a bad option, say).
        self.stderr = str(workdir / f"{name}.stderr")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if os.path.exists(self.pidfile):
            os.unlink(self.pidfile)
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(
                [*self.cmd, f"--pidfile={self.pidfile}", f"--log-file={self.logfile}",
                 "-vconsole:off", "--no-chdir"],
                cwd=self.workdir, env=self.env, stdout=subprocess.DEVNULL, stderr=err)

    def logs(self, lines: int = 40) -> str:
        out = tail(self.logfile, lines)
        if os.path.exists(self.stderr) and os.path.getsize(self.stderr):
            out += "\n" + tail(self.stderr, 10)
        return out

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_started(self, logs: Callable[[], str], timeout: float = WAIT) -> None:
        def ready() -> bool:
            if not self.alive():
                code = self.proc.returncode if self.proc else None
                raise DaemonError(f"{self.name} exited ({code}) during startup\n{logs()}")
            return os.path.exists(self.pidfile)
        poll(ready, f"{self.name}'s pidfile", logs, timeout)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.proc = None


def daemon_env(workdir: Path) -> dict[str, str]:
    """The environment that confines OVS and OVN daemons and tools to `workdir`."""
    env = dict(os.environ)
    for var in ("OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR",
                "OVN_RUNDIR", "OVN_LOGDIR", "OVN_DBDIR", "OVN_SYSCONFDIR"):
        env[var] = str(workdir)
    return env


def split_actions(actions: str) -> list[str]:
    """The top-level actions of a flow (commas inside parentheses do not split)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(actions):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(actions[start:i])
            start = i + 1
    out.append(actions[start:])
    return out


def _sorted_flood(actions: list[str]) -> list[str]:
    """A multicast group's flood (`set_field...,resubmit(...)` once per member port) in
    member order: ovn-controller walks the members in hash order, which follows row
    UUIDs, so two runs of one scenario list the same members in different orders."""
    chunks: list[list[str]] = [[]]
    for act in actions:
        chunks[-1].append(act)
        if act.startswith("resubmit("):
            chunks.append([])
    tail_, body = chunks[-1], chunks[:-1]
    if len(body) < 2 or any(not all(a.startswith("set_field:") for a in c[:-1])
                            for c in body):
        return actions
    return [a for c in sorted(body) for a in c] + tail_


def normalize_flow(line: str) -> str:
    """A `dump-flows` line without its counters and timers, and a flood's members in a
    fixed order: what the flow matches and does, comparable across two runs of the
    same scenario."""
    head, sep, actions = line.strip().partition(" actions=")
    fields = [f for f in head.replace(", ", ",").split(",")
              if f.strip() and f.split("=", 1)[0].strip() not in VOLATILE_FLOW_FIELDS]
    if sep:
        actions = ",".join(_sorted_flood(split_actions(actions)))
    return ",".join(f.strip() for f in fields) + sep + actions


ZONES_OF_DATAPATH = re.compile(r"set_field:(0x[0-9a-f]+)->reg11,set_field:(0x[0-9a-f]+)->reg12,"
                               r"set_field:(0x[0-9a-f]+)->metadata")
ZONE_OF_PORT = re.compile(r"set_field:(0x[0-9a-f]+)->reg13,(?:set_field:[^,]+->reg1[12],)*"
                          r"set_field:(0x[0-9a-f]+)->metadata,set_field:(0x[0-9a-f]+)->reg14")
ZONE_SET = re.compile(r"set_field:(0x[0-9a-f]+)->(reg11|reg12|reg13)\b")


def normalize_flows(lines: list[str]) -> list[str]:
    """A whole flow table normalized, sorted: each flow as `normalize_flow` makes it,
    and the conntrack zones (reg11 DNAT and reg12 SNAT of a logical datapath, reg13 of
    a logical port) named after their datapath's and port's tunnel keys, as the flow
    that enters the pipeline from a port shows them. ovn-controller hands zones out in
    the hash order of names that hold row UUIDs, so the numbers differ between two
    runs of one scenario even on the real server; whose zone it is does not. A zone no
    flow explains keeps its number."""
    flows = [normalize_flow(line) for line in lines]
    names: dict[tuple[str, str], str] = {}
    for f in flows:
        for dnat, snat, dp in ZONES_OF_DATAPATH.findall(f):
            names[(dnat, "reg11")] = f"dp{int(dp, 16)}-dnat"
            names[(snat, "reg12")] = f"dp{int(dp, 16)}-snat"
        for ct_zone, dp, port in ZONE_OF_PORT.findall(f):
            names[(ct_zone, "reg13")] = f"dp{int(dp, 16)}-port{int(port, 16)}"

    def zone(m: re.Match[str]) -> str:
        name = names.get((m.group(1), m.group(2)))
        return m.group(0) if name is None else f"set_field:<{name}>->{m.group(2)}"
    # (again through normalize_flow: a flood's order follows the zones' new names)
    return sorted(normalize_flow(ZONE_SET.sub(zone, f)) for f in flows)


class Hypervisor:
    """`ovs-vswitchd` (dummy datapath, bridge br-int) and `ovn-controller` bound to the
    SB at `sb_remote`, with its conf.db served by a `conf_db_server_kind` server."""

    def __init__(self, name: str, workdir: Path, sb_remote: str, encap_ip: str,
                 conf_db_server_kind: str = "ours", *, monitor_all: bool = False,
                 external_ids: dict[str, str] | None = None,
                 server_extra: list[str] | None = None,
                 controller_extra: list[str] | None = None) -> None:
        self.name = name
        self.workdir = Path(workdir)
        self.sb_remote = sb_remote
        self.encap_ip = encap_ip
        self.kind = conf_db_server_kind
        self.monitor_all = monitor_all
        self.extra_ids = dict(external_ids or {})
        self.server_extra = list(server_extra or [])  # more options for the conf.db server
        self.controller_extra = list(controller_extra or [])  # and for ovn-controller (PKI)
        self.env = daemon_env(self.workdir)
        self.conf: ServerProcess | None = None
        self.vswitchd = Daemon("ovs-vswitchd", [
            "ovs-vswitchd", "--enable-dummy=override",
            f"--unixctl={self.workdir / 'ovs-vswitchd.ctl'}",
        ], self.workdir, self.env)
        self.controller = Daemon("ovn-controller", ["ovn-controller"], self.workdir, self.env)

    # -- life cycle ------------------------------------------------------------------

    @property
    def system_id(self) -> str:
        return self.name

    @property
    def mgmt(self) -> str:
        """The bridge's OpenFlow management socket, as ovn-controller uses it."""
        return f"unix:{self.workdir / (BRIDGE + '.mgmt')}"

    @property
    def vswitchd_ctl(self) -> str:
        return str(self.workdir / "ovs-vswitchd.ctl")

    @property
    def controller_ctl(self) -> str:
        """ovn-controller 23.03 takes no --unixctl: its socket is named after its pid."""
        return str(self.workdir / f"ovn-controller.{self.controller.pid}.ctl")

    def start(self) -> Hypervisor:
        require("ovs-vswitchd", "ovn-controller", "ovs-vsctl", "ovs-ofctl", "ovs-appctl",
                "ovn-appctl")
        if self.kind == "real":
            require("ovsdb-server", "ovsdb-tool")
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        db = create_db(self.kind, self.workdir / "conf.db", VSWITCH_SCHEMA)
        self.conf = ServerProcess(self.kind, self.workdir, [db], name="conf",
                                  extra=self.server_extra).start()
        self.vswitchd.cmd = [*self.vswitchd.cmd[:3], self.conf.unix]
        self.controller.cmd = ["ovn-controller", *self.controller_extra, self.conf.unix]
        ids = {
            "system-id": self.system_id,
            "hostname": self.name,
            "ovn-remote": self.sb_remote,
            "ovn-encap-type": "geneve",
            "ovn-encap-ip": self.encap_ip,
            "ovn-bridge": BRIDGE,
            "ovn-monitor-all": "true" if self.monitor_all else "false",
            **self.extra_ids,
        }
        self.ovs_vsctl("init", "--", "set", "Open_vSwitch", ".",
                       *(f'external_ids:{k}="{v}"' for k, v in ids.items()))
        self.vswitchd.start()
        self.vswitchd.wait_started(self.logs)
        # Without --no-wait, ovs-vsctl returns once ovs-vswitchd has applied the change:
        # the bridge exists and its management socket listens.
        self.ovs_vsctl("add-br", BRIDGE, "--", "set", "Bridge", BRIDGE,
                       "datapath-type=dummy", "fail-mode=secure",
                       "other-config:disable-in-band=true", wait=True)
        poll(lambda: os.path.exists(self.mgmt[len("unix:"):]), "br-int.mgmt", self.logs)
        self.start_controller()

    def stop_controller(self, *, graceful: bool = True, timeout: float = WAIT) -> None:
        """Stop ovn-controller alone: by its `exit` command (it then removes its
        Chassis from the SB, as on a host's shutdown) or by SIGTERM (it leaves it)."""
        if graceful and self.controller.alive():
            self.controller_appctl("exit")
            assert self.controller.proc is not None
            try:
                self.controller.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass  # stop() below kills it
        self.controller.stop()

    def start_controller(self) -> None:
        """Start ovn-controller again after `stop_controller`."""
        self.controller.start()
        self.controller.wait_started(self.logs)
        poll(lambda: os.path.exists(self.controller_ctl), "ovn-controller's control socket",
             self.logs)

    def stop(self) -> None:
        """Stop ovn-controller, ovs-vswitchd and the conf.db server, each by its pid."""
        errors: list[BaseException] = []
        for stop in (self.controller.stop, self.vswitchd.stop,
                     self.conf.stop if self.conf else None):
            if stop is None:
                continue
            try:
                stop()
            except BaseException as e:  # keep stopping the others
                errors.append(e)
        if errors:
            raise errors[0]

    def __enter__(self) -> Hypervisor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self) -> str:
        parts = [self.controller.logs(), self.vswitchd.logs()]
        if self.conf is not None:
            parts.append(tail(self.conf.logfile, 20))
        return f"=== hypervisor {self.name} ({self.kind} conf.db)\n" + "\n".join(parts)

    # -- tools -----------------------------------------------------------------------

    def ovs_vsctl(self, *args: str, wait: bool = False, check: bool = True
                  ) -> subprocess.CompletedProcess[str]:
        """ovs-vsctl on this hypervisor's conf.db; `wait=True` returns only once
        ovs-vswitchd has applied the change."""
        assert self.conf is not None
        opts = [f"--db={self.conf.unix}", CTL_TIMEOUT] + ([] if wait else ["--no-wait"])
        return run(["ovs-vsctl", *opts, *args], check=check, env=self.env)

    def ofctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run(["ovs-ofctl", *args], check=check, env=self.env)

    def appctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """ovs-appctl to this hypervisor's ovs-vswitchd (ofproto/trace, ...)."""
        return run(["ovs-appctl", "-t", self.vswitchd_ctl, *args], check=check, env=self.env)

    def controller_appctl(self, *args: str, check: bool = True
                          ) -> subprocess.CompletedProcess[str]:
        return run(["ovn-appctl", "-t", self.controller_ctl, *args], check=check, env=self.env)

    # -- VIFs ------------------------------------------------------------------------

    def add_vif(self, iface: str, iface_id: str, mac: str, *,
                ofport: int | None = None) -> None:
        """A dummy interface on br-int bound to the logical port `iface_id`."""
        extra = [f"ofport_request={ofport}"] if ofport is not None else []
        self.ovs_vsctl("add-port", BRIDGE, iface, "--", "set", "Interface", iface,
                       "type=dummy", f'external_ids:iface-id="{iface_id}"',
                       f'external_ids:attached-mac="{mac}"', *extra, wait=True)

    def del_vif(self, iface: str) -> None:
        self.ovs_vsctl("del-port", BRIDGE, iface, wait=True)

    def interface_ids(self, iface: str) -> dict[str, str]:
        """The Interface row's external_ids (ovn-installed appears there)."""
        out = self.ovs_vsctl("--if-exists", "get", "Interface", iface, "external_ids").stdout
        return parse_ovs_map(out)

    def ofport(self, iface: str) -> int:
        return int(self.ovs_vsctl("get", "Interface", iface, "ofport").stdout.strip())

    def iface_of(self, iface_id: str) -> str | None:
        out = self.ovs_vsctl("--bare", "--columns=name", "find", "Interface",
                             f'external_ids:iface-id="{iface_id}"').stdout.split()
        return out[0] if out else None

    def wait_installed(self, iface_id: str, timeout: float = WAIT) -> None:
        """Until ovn-controller marks the VIF bound to `iface_id` `ovn-installed`: its
        flows are in br-int."""
        def installed() -> bool:
            iface = self.iface_of(iface_id)
            return iface is not None and \
                self.interface_ids(iface).get("ovn-installed") == "true"
        poll(installed, f"ovn-installed on {iface_id} at {self.name}", self.logs, timeout)

    # -- flows -----------------------------------------------------------------------

    def dump_flows(self) -> list[str]:
        """The flows of br-int as `ovs-ofctl dump-flows` prints them (header dropped)."""
        out = self.ofctl("-O", "OpenFlow15", "dump-flows", self.mgmt).stdout
        return [line for line in out.splitlines()
                if line.strip() and "_FLOW reply" not in line and "OFPST_FLOW" not in line]

    def flows(self) -> list[str]:
        """The flows normalized (see `normalize_flows`), sorted."""
        return normalize_flows(self.dump_flows())

    def flow_count(self) -> int:
        return len(self.dump_flows())

    def wait_flows_stable(self, settle: float = 1.0, timeout: float = WAIT) -> int:
        """Until the flow table has not changed for `settle` seconds; its flow count."""
        last: list[list[str]] = [self.flows()]
        since = [time.monotonic()]

        def stable() -> bool:
            now = self.flows()
            if now != last[0]:
                last[0], since[0] = now, time.monotonic()
                return False
            return time.monotonic() - since[0] >= settle
        poll(stable, f"a stable flow table at {self.name}", self.logs, timeout, 0.25)
        return len(last[0])


def parse_ovs_map(text: str) -> dict[str, str]:
    """An OVSDB map as ovs-vsctl prints it: {a="b", c=d}."""
    text = text.strip()
    if not text.startswith("{") or text == "{}":
        return {}
    out: dict[str, str] = {}
    body = text[1:-1]
    i = 0
    while i < len(body):
        while i < len(body) and body[i] in ", ":
            i += 1
        if i >= len(body):
            break
        key, i = _ovs_atom(body, i)
        assert body[i] == "=", text
        value, i = _ovs_atom(body, i + 1)
        out[key] = value
    return out


def _ovs_atom(s: str, i: int) -> tuple[str, int]:
    if s[i] == '"':
        j, buf = i + 1, []
        while s[j] != '"':
            if s[j] == "\\":
                j += 1
            buf.append(s[j])
            j += 1
        return "".join(buf), j + 1
    j = i
    while j < len(s) and s[j] not in ",=":
        j += 1
    return s[i:j], j


class ControlPlane:
    """NB and SB databases on a `kind` server ("ours" or "real") and a northd between
    them (`northd`: "real" for ovn-northd, "ours" for `pyovsdb northd`, with the same
    options); with `sb_cluster=N` the SB is an N-member Raft cluster (made with the
    kind's own tool, Raft on loopback ports) and every client is given all members'
    remotes, as central nodes are deployed."""

    def __init__(self, kind: str, workdir: Path, *, tcp: bool = False,
                 server_extra: list[str] | None = None, sb_cluster: int = 0,
                 northd: str = "real") -> None:
        if northd not in ("real", "ours"):
            raise ValueError(f"unknown northd {northd!r}")
        self.kind = kind
        self.northd_kind = northd
        self.workdir = Path(workdir)
        self.tcp = tcp  # NB and SB also on loopback TCP ports (ServerProcess.tcp)
        self.server_extra = list(server_extra or [])  # more options for NB and SB servers
        self.sb_cluster = sb_cluster
        self.env = daemon_env(self.workdir)
        self.nb: ServerProcess | None = None
        self.sb: ServerProcess | None = None  # the (first) SB server
        self.sb_members: list[ServerProcess] = []  # all SB servers (one if standalone)
        self.northd: Daemon | None = None

    @property
    def nb_remote(self) -> str:
        assert self.nb is not None
        return self.nb.unix

    @property
    def sb_remote(self) -> str:
        assert self.sb is not None
        return ",".join(m.unix for m in self.sb_members)

    def _tool(self) -> list[str]:
        return [sys.executable, "-m", "pyovsdb", "tool"] if self.kind == "ours" \
            else ["ovsdb-tool"]

    def _start_sb(self) -> None:
        if not self.sb_cluster:
            sb_db = create_db(self.kind, self.workdir / "sb.db", SB_SCHEMA)
            self.sb = ServerProcess(self.kind, self.workdir, [sb_db], name="sb", tcp=self.tcp,
                                    extra=self.server_extra)
            self.sb_members = [self.sb]
            self.sb.start()
            return
        raft = [f"tcp:127.0.0.1:{free_port()}" for _ in range(self.sb_cluster)]
        dbs = [str(self.workdir / f"sb{i + 1}.db") for i in range(self.sb_cluster)]
        run([*self._tool(), "create-cluster", dbs[0], SB_SCHEMA, raft[0]])
        for db, addr in zip(dbs[1:], raft[1:], strict=True):
            run([*self._tool(), "join-cluster", db, "OVN_Southbound", addr, raft[0]])
        self.sb_members = [ServerProcess(self.kind, self.workdir, [db], name=f"sb{i + 1}",
                                         tcp=self.tcp, extra=self.server_extra)
                           for i, db in enumerate(dbs)]
        self.sb = self.sb_members[0]
        for m in self.sb_members:
            m.start()

    def sb_leader(self) -> ServerProcess:
        """The running SB member that says it is the Raft leader (cluster/status)."""
        found: list[ServerProcess] = []

        def leader() -> bool:
            for m in self.sb_members:
                if m.proc is None:
                    continue
                st = m.appctl("cluster/status", "OVN_Southbound", check=False).stdout
                if re.search(r"^Role: leader$", st, re.M):
                    found.append(m)
                    return True
            return False
        poll(leader, "an SB leader", self.logs)
        return found[0]

    @property
    def northd_ctl(self) -> str:
        return str(self.workdir / "ovn-northd.ctl")

    def northd_command(self) -> list[str]:
        base = ["ovn-northd"] if self.northd_kind == "real" \
            else [sys.executable, "-m", "pyovsdb", "northd"]
        return [*base, f"--ovnnb-db={self.nb_remote}", f"--ovnsb-db={self.sb_remote}",
                f"--unixctl={self.northd_ctl}"]

    def start(self) -> ControlPlane:
        require("ovn-nbctl", "ovn-sbctl", *(["ovn-northd"] if self.northd_kind == "real"
                                            else []))
        if self.kind == "real":
            require("ovsdb-server", "ovsdb-tool")
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            nb_db = create_db(self.kind, self.workdir / "nb.db", NB_SCHEMA)
            self.nb = ServerProcess(self.kind, self.workdir, [nb_db], name="nb", tcp=self.tcp,
                                    extra=self.server_extra).start()
            self._start_sb()
            # northd picks these MACs at random when unset; fixed, two runs of one
            # scenario install the same flows.
            self.nbctl("init", "--", "set", "NB_Global", ".",
                       f'options:svc_monitor_mac="{SVC_MONITOR_MAC}"',
                       f'options:mac_prefix="{MAC_PREFIX}"')
            self.northd = Daemon("ovn-northd", self.northd_command(), self.workdir,
                                 self.env)
            self.northd.start()
            self.northd.wait_started(self.logs)
            # northd has connected to both when it has written SB_Global.
            poll(lambda: bool(self.sbctl("--bare", "--columns=_uuid", "list",
                                         "SB_Global").stdout.strip()),
                 f"the {self.northd_kind} northd to fill SB_Global", self.logs)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        errors: list[BaseException] = []
        for part in (self.northd, *self.sb_members, self.nb):
            if part is None:
                continue
            try:
                part.stop()
            except BaseException as e:
                errors.append(e)
        if errors:
            raise errors[0]

    def restart_sb(self, offline: list[dict[str, Any]] | None = None) -> None:
        """The SB server stopped and started again on the same database file: every
        client has to reconnect and resynchronize. `offline` operations are applied to
        the file meanwhile (with the kind's own tool), so clients can only learn of
        them from what the restarted server sends."""
        assert self.sb is not None and not self.sb_cluster
        self.sb.stop()
        if offline:
            out = run([*self._tool(), "transact", self.sb.dbs[0],
                       json.dumps(["OVN_Southbound", *offline])]).stdout
            assert '"error"' not in out, out
        self.sb.start()

    def chassis(self) -> list[str]:
        """The names of the SB's Chassis rows, sorted."""
        return sorted(self.sbctl("--bare", "--columns=name", "list", "Chassis").stdout.split())

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self) -> str:
        parts = [f"=== control plane ({self.kind})"]
        if self.northd is not None:
            parts.append(self.northd.logs())
        for srv in (self.nb, *self.sb_members):
            if srv is not None:
                parts.append(tail(srv.logfile, 20))
        return "\n".join(parts)

    def nbctl(self, *args: str, check: bool = True, timeout: float = 60
              ) -> subprocess.CompletedProcess[str]:
        return run(["ovn-nbctl", f"--db={self.nb_remote}", CTL_TIMEOUT, *args],
                   check=check, env=self.env, timeout=timeout)

    def sbctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run(["ovn-sbctl", f"--db={self.sb_remote}", CTL_TIMEOUT, *args],
                   check=check, env=self.env)

    # -- what the hypervisors did ----------------------------------------------------

    def port_chassis(self, lport: str) -> str | None:
        """The name of the chassis that claimed `lport` (Port_Binding.chassis), or None."""
        uuids = self.sbctl("--bare", "--columns=chassis", "find", "Port_Binding",
                           f'logical_port="{lport}"').stdout.split()
        if not uuids:
            return None
        name = self.sbctl("--bare", "--columns=name", "list", "Chassis", uuids[0],
                          check=False).stdout.strip()
        return name or None

    def port_up(self, lport: str) -> bool:
        """NB Logical_Switch_Port.up, as ovn-northd copies it from the SB."""
        out = self.nbctl("--bare", "--columns=up", "find", "Logical_Switch_Port",
                         f'name="{lport}"').stdout.strip()
        return out == "true"

    def wait_claimed(self, lport: str, chassis: str | None, *, up: bool | None = None,
                     timeout: float = WAIT, logs: Callable[[], str] | None = None) -> None:
        """Until `lport` is bound to `chassis` (None: to no chassis), and when `up` is
        given, until NB shows that `up`."""
        def done() -> bool:
            if self.port_chassis(lport) != chassis:
                return False
            return up is None or self.port_up(lport) == up
        poll(done, f"{lport} bound to {chassis} (up={up})",
             lambda: self.logs() + ("\n" + logs() if logs else ""), timeout)


class Deployment:
    """A control plane (`ControlPlane`: servers of `kind`, either northd) and two
    hypervisors, hv1 and hv2 (on 127.0.0.2 and .3), started and stopped together."""

    def __init__(self, kind: str, workdir: Path, *, northd: str = "real",
                 monitor_all: bool = False, sb_cluster: int = 0) -> None:
        self.cp = ControlPlane(kind, workdir / "cp", sb_cluster=sb_cluster, northd=northd)
        self.kind = kind
        self.monitor_all = monitor_all
        self.workdir = workdir
        self.hvs: dict[str, Hypervisor] = {}

    def start(self) -> None:
        self.cp.start()
        for i, name in enumerate(("hv1", "hv2")):
            hv = Hypervisor(name, self.workdir / name, self.cp.sb_remote, f"127.0.0.{i + 2}",
                            self.kind, monitor_all=self.monitor_all)
            self.hvs[name] = hv
            hv.start()

    def stop(self) -> None:
        """Stop everything, each part even if stopping another one failed."""
        errors: list[BaseException] = []
        parts: list[Hypervisor | ControlPlane] = [*self.hvs.values(), self.cp]
        for part in parts:
            try:
                part.stop()
            except BaseException as e:
                errors.append(e)
        if errors:
            raise errors[0]

    def logs(self) -> str:
        return "\n".join([self.cp.logs(), *(hv.logs() for hv in self.hvs.values())])

    def flow_counts(self) -> str:
        """The flow count of each hypervisor still up (for a failure's report)."""
        counts = []
        for name, hv in self.hvs.items():
            try:
                counts.append(f"{name}={hv.flow_count()}")
            except Exception as e:
                counts.append(f"{name}=? ({type(e).__name__})")
        return "flow counts when it broke off: " + ", ".join(counts)
