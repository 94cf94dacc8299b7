"""Differential northd harness: one NB script, run against a northd (the real
`ovn-northd` or ours), on real NB and SB `ovsdb-server`s, gives a normalized dump.

Rules kept here:
- Both northds run on the same real `ovsdb-server` binary, in a directory the caller
  owns, on unix sockets; every process started here is stopped by its pid, also when
  a step fails.
- A script is plain text, one command a line (`#` starts a comment):
    `nbctl ARGS...`  one `ovn-nbctl` call; `--wait=sb` is added unless the line gives its
                     own `--wait=...`/`--no-wait`, so each line is one northd run and
                     23.03's tunnel-key choice is deterministic; with `--wait=hv` the
                     simulated chassis echo `nb_cfg` while the call waits.
    `sbctl ARGS...`  one `ovn-sbctl` call (what a chassis would write: `lsp-bind`, `set
                     Port_Binding p1 up=true`), followed by a `--wait=sb sync`.
    `sim chassis NAME IP [KEY=VALUE...]`  a simulated chassis: `Chassis` (with its encap
                     and `other_config` pairs) plus a `Chassis_Private` row.
    `sim echo`       every simulated chassis copies SB `nb_cfg` into its `Chassis_Private`.
  In `nbctl`/`sbctl` lines, `uuid(TABLE,COLUMN=VALUE)` is replaced by the UUID of the one
  row of that database's TABLE whose COLUMN (or COLUMN:KEY of a map) is VALUE: rows the
  tools cannot name, such as a `Load_Balancer_Group` or an `HA_Chassis_Group` in a
  reference column.
  A header line `#! renumber TABLE...` asks for canonical tunnel keys in those tables
  (see `normalize`).
- Before northd starts, NB_Global gets fixed `mac_prefix` and `svc_monitor_mac`: 23.03
  picks both at random otherwise, and IPAM MACs depend on the prefix.
- After the script the harness syncs until two dumps in a row are equal, so the result
  does not depend on when northd's NB write-backs land.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from normalize import NB_WRITTEN, SB_CONTEXT, SB_OWNED, RawDump, Snapshot, normalize

from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db, run, stop_process

CORPUS = Path(__file__).resolve().parent / "corpus"
MAC_PREFIX = "0a:00:00"
SVC_MONITOR_MAC = "0a:00:00:ff:ff:fe"
TIMEOUT = 30
UUID_OF = re.compile(r"uuid\((\w+),([\w:]+)=([^)]*)\)")


@dataclass(frozen=True)
class Step:
    tool: str  # "nbctl", "sbctl" or "sim"
    args: tuple[str, ...]
    lineno: int

    def __str__(self) -> str:
        return f"{self.lineno}: {self.tool} {shlex.join(self.args)}"


@dataclass(frozen=True)
class Script:
    name: str
    steps: tuple[Step, ...]
    renumber: frozenset[str] = frozenset()


def parse_script(text: str, name: str = "script") -> Script:
    steps: list[Step] = []
    renumber: set[str] = set()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#!"):
            words = line[2:].split()
            if not words or words[0] != "renumber":
                raise ValueError(f"{name}:{n}: unknown directive {line!r}")
            renumber.update(words[1:])
            continue
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        if words[0] not in ("nbctl", "sbctl", "sim"):
            raise ValueError(f"{name}:{n}: a line starts with nbctl, sbctl or sim: {line!r}")
        steps.append(Step(words[0], tuple(words[1:]), n))
    return Script(name, tuple(steps), frozenset(renumber))


def load_corpus(directory: Path = CORPUS) -> list[Script]:
    return [parse_script(p.read_text(), p.stem) for p in sorted(directory.glob("*.txt"))]


def northd_command(kind: str, nb: str, sb: str, workdir: Path) -> list[str]:
    if kind == "real":
        base = ["ovn-northd"]
    elif kind == "ours":
        # self-checked: every incremental run is also computed from scratch (`check_self`)
        base = [sys.executable, "-m", "pyovsdb", "northd", "--self-check"]
    else:
        raise ValueError(f"unknown northd {kind!r}")
    return [*base, f"--ovnnb-db={nb}", f"--ovnsb-db={sb}",
            f"--unixctl={workdir / 'northd.ctl'}", f"--pidfile={workdir / 'northd.pid'}",
            f"--log-file={workdir / 'northd.log'}", "-vconsole:off", "--no-chdir"]


class ScriptError(AssertionError):
    pass


@dataclass
class Run:
    """One script against one northd: the servers, the northd, the simulated chassis."""

    kind: str
    workdir: Path
    nb: ServerProcess | None = None
    sb: ServerProcess | None = None
    northd: subprocess.Popen[bytes] | None = None
    chassis: list[str] = field(default_factory=list)

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        nbdb = create_db("real", self.workdir / "nb.db", NB_SCHEMA)
        sbdb = create_db("real", self.workdir / "sb.db", SB_SCHEMA)
        self.nb = ServerProcess("real", self.workdir, [nbdb], name="nb").start()
        self.sb = ServerProcess("real", self.workdir, [sbdb], name="sb").start()
        self.nbctl("--no-wait", "init")
        self.nbctl("--no-wait", "set", "NB_Global", ".", f"options:mac_prefix={MAC_PREFIX}",
                   f'options:svc_monitor_mac="{SVC_MONITOR_MAC}"')
        log = open(self.workdir / "northd.stderr", "wb")  # noqa: SIM115 (owned by Popen)
        try:
            self.northd = subprocess.Popen(
                northd_command(self.kind, self.nb.unix, self.sb.unix, self.workdir),
                cwd=self.workdir, stdout=subprocess.DEVNULL, stderr=log)
        finally:
            log.close()
        self.nbctl("--wait=sb", "sync")

    def stop(self) -> None:
        if self.northd is not None:
            stop_process(self.northd)
            self.northd = None
        for srv in (self.sb, self.nb):
            if srv is not None:
                srv.stop()

    def _check_northd(self) -> None:
        if self.northd is not None and self.northd.poll() is not None:
            raise ScriptError(f"{self.kind} northd exited {self.northd.returncode}:\n"
                              f"{self.logs()}")

    def check_self(self) -> None:
        """For our northd: no incremental run differed from its recompute (the daemon's
        `inc-engine/self-check` counters; the differences themselves are in its log)."""
        if self.kind != "ours":
            return
        out = run(["ovn-appctl", "-t", str(self.workdir / "northd.ctl"),
                   "inc-engine/self-check"], check=True, timeout=TIMEOUT).stdout
        m = re.search(r"(\d+) runs checked, (\d+) differed", out)
        if m is None:
            raise ScriptError(f"inc-engine/self-check answered {out!r}")
        if int(m.group(2)) > 0:
            raise ScriptError(f"our northd's incremental runs differ from recomputes: "
                              f"{out.strip()}\n{self.logs()}")

    def logs(self) -> str:
        out = []
        for name in ("northd.stderr", "northd.log"):
            p = self.workdir / name
            if p.exists():
                out.append(f"--- {name}\n{p.read_text()[-4000:]}")
        return "\n".join(out)

    def nbctl(self, *args: str, timeout: float = TIMEOUT) -> str:
        assert self.nb is not None
        cmd = ["ovn-nbctl", f"--db={self.nb.unix}", f"--timeout={int(timeout)}", *args]
        return self._tool(cmd, timeout)

    def sbctl(self, *args: str, timeout: float = TIMEOUT) -> str:
        assert self.sb is not None
        return self._tool(["ovn-sbctl", f"--db={self.sb.unix}", *args], timeout)

    def _tool(self, cmd: list[str], timeout: float) -> str:
        try:
            p = run(cmd, check=False, timeout=timeout + 5)
        except subprocess.TimeoutExpired as e:
            self._check_northd()
            raise ScriptError(f"{shlex.join(cmd)} timed out\n{self.logs()}") from e
        if p.returncode != 0:
            self._check_northd()
            raise ScriptError(f"{shlex.join(cmd)} exited {p.returncode}: {p.stderr}")
        return p.stdout

    def step(self, step: Step) -> None:
        try:
            if step.tool == "nbctl":
                self._nbctl_step(self._resolve(self.nbctl, step.args))
            elif step.tool == "sbctl":
                self.sbctl(*self._resolve(self.sbctl, step.args))
                self.nbctl("--wait=sb", "sync")
            else:
                self._sim(step.args)
        except ScriptError as e:
            raise ScriptError(f"{self.kind} northd, line {step}: {e}") from e

    @staticmethod
    def _resolve(tool: Any, args: Sequence[str]) -> list[str]:
        def one(m: re.Match[str]) -> str:
            table, column, value = m.groups()
            found = tool("--bare", "--columns=_uuid", "find", table,
                         f"{column}={value}").split()
            if len(found) != 1:
                raise ScriptError(f"{m.group(0)} names {len(found)} rows")
            return str(found[0])

        return [UUID_OF.sub(one, a) for a in args]

    def _nbctl_step(self, args: Sequence[str]) -> None:
        options = []
        for a in args:
            if not a.startswith("--"):
                break
            options.append(a)
        waits = [o for o in options if o.startswith("--wait") or o == "--no-wait"]
        if "--wait=hv" in waits:
            self._wait_hv(args)
        elif waits:
            self.nbctl(*args)
        else:
            self.nbctl("--wait=sb", *args)

    def _wait_hv(self, args: Sequence[str]) -> None:
        assert self.nb is not None
        cmd = ["ovn-nbctl", f"--db={self.nb.unix}", f"--timeout={TIMEOUT}", *args]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + TIMEOUT
            while p.poll() is None:
                if time.monotonic() > deadline:
                    raise ScriptError(f"{shlex.join(cmd)} did not return\n{self.logs()}")
                self._check_northd()
                self.echo()
                time.sleep(0.05)
            _, err = p.communicate()
            if p.returncode != 0:
                raise ScriptError(f"{shlex.join(cmd)} exited {p.returncode}: {err}")
        finally:
            stop_process(p)

    def _sim(self, args: Sequence[str]) -> None:
        if args and args[0] == "chassis" and len(args) >= 3:
            name, ip = args[1], args[2]
            self.sbctl("chassis-add", name, "geneve", ip)
            pairs = [f"other_config:{kv}" for kv in args[3:]]
            if pairs:
                self.sbctl("set", "Chassis", name, *pairs)
            uuid = self.sbctl("get", "Chassis", name, "_uuid").strip()
            self.sbctl("create", "Chassis_Private", f"name={name}", f"chassis={uuid}")
            self.chassis.append(name)
            self.nbctl("--wait=sb", "sync")
        elif list(args) == ["echo"]:
            self.echo()
            self.nbctl("--wait=sb", "sync")
        else:
            raise ScriptError(f"unknown sim command {shlex.join(args)!r}")

    def echo(self) -> None:
        """What ovn-controller does once its flows match the SB: copy `nb_cfg`."""
        cfg = self.sbctl("get", "SB_Global", ".", "nb_cfg").strip()
        for name in self.chassis:
            self.sbctl("set", "Chassis_Private", name, f"nb_cfg={cfg}")

    def dump(self, db: str, tables: Sequence[str]) -> RawDump:
        srv = self.nb if db == "NB" else self.sb
        assert srv is not None
        name = "OVN_Northbound" if db == "NB" else "OVN_Southbound"
        ops: list[Any] = [name] + [{"op": "select", "table": t, "where": []} for t in tables]
        out = run(["ovsdb-client", "transact", srv.unix, json.dumps(ops)], timeout=TIMEOUT)
        results = json.loads(out.stdout)
        return {t: r["rows"] for t, r in zip(tables, results, strict=True)}

    def snapshot(self, script: Script, sb_tables: Sequence[str] = SB_OWNED) -> Snapshot:
        nb_tables = nb_table_names()
        sb = self.dump("SB", (*sb_tables, *SB_CONTEXT))
        return normalize(self.dump("NB", nb_tables), sb, renumber=script.renumber,
                         nb_tables=NB_WRITTEN, sb_tables=sb_tables)


def nb_table_names() -> list[str]:
    with open(NB_SCHEMA) as f:
        return sorted(json.load(f)["tables"])


def run_script(script: Script, kind: str, workdir: Path, *,
               sb_tables: Sequence[str] = SB_OWNED,
               at_end: Callable[[Run], None] | None = None) -> Snapshot:
    """Run `script` against the `kind` northd; the normalized NB write-backs and SB rows.

    Two syncs end every run (a fixed number, so the cfg counters are the same for any
    northd); the rows must not change between them but for those counters. `at_end`
    sees the run after the last snapshot, with its servers and northd still up (to read
    what else the run is compared by, such as `lflow-list` or `ovn-trace`)."""
    r = Run(kind, workdir)
    try:
        r.start()
        for step in script.steps:
            r.step(step)
        r.nbctl("--wait=sb", "sync")
        first = r.snapshot(script, sb_tables)
        r.nbctl("--wait=sb", "sync")
        snap = r.snapshot(script, sb_tables)
        if without_counters(first) != without_counters(snap):
            raise ScriptError(f"{kind} northd still changing rows after {script.name}")
        r.check_self()
        if at_end is not None:
            at_end(r)
        return snap
    finally:
        r.stop()


def run_points(steps: Sequence[Step | None], kind: str, workdir: Path, *,
               renumber: frozenset[str] = frozenset()) -> list[Snapshot]:
    """Run `steps` against the `kind` northd; a snapshot (after a sync) at every None."""
    script = Script("points", (), renumber)
    r = Run(kind, workdir)
    out: list[Snapshot] = []
    try:
        r.start()
        for step in steps:
            if step is None:
                r.nbctl("--wait=sb", "sync")
                out.append(r.snapshot(script))
            else:
                r.step(step)
        r.check_self()
        return out
    finally:
        r.stop()


COUNTERS = {"NB.NB_Global": ("nb_cfg", "sb_cfg", "hv_cfg"), "SB.SB_Global": ("nb_cfg",)}
CFG_COLUMNS = {"NB.NB_Global": ("nb_cfg", "sb_cfg", "hv_cfg", "nb_cfg_timestamp",
                                "sb_cfg_timestamp", "hv_cfg_timestamp"),
               "SB.SB_Global": ("nb_cfg",)}


def without_counters(snap: Snapshot, columns: dict[str, tuple[str, ...]] = COUNTERS
                     ) -> Snapshot:
    tables = {t: {k: {c: v for c, v in row.items() if c not in columns.get(t, ())}
                  for k, row in rows.items()}
              for t, rows in snap.tables.items()}
    return Snapshot(tables)


@functools.cache
def ours_available() -> bool:
    """Whether this build has `pyovsdb northd` (it answers `--version`)."""
    try:
        p = subprocess.run([sys.executable, "-m", "pyovsdb", "northd", "--version"],
                           capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False
    return p.returncode == 0


def main(argv: Sequence[str]) -> int:
    """`python diffharness.py [real|ours] SCRIPT.txt DIR`: print the normalized dump."""
    kind, path, workdir = argv
    snap = run_script(parse_script(Path(path).read_text(), Path(path).stem), kind,
                      Path(workdir))
    sys.stdout.write(snap.text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


# -- generated scripts ----------------------------------------------------------------


class _Gen:
    """A random but reproducible NB history, one change a line, that keeps 23.03's
    choices deterministic: at most one new datapath, or one new port per datapath, per
    line; IPAM subnets never run out or change; no two router-type ports name one
    router port."""

    def __init__(self, seed: int) -> None:
        import random

        self.rng = random.Random(seed)
        self.lines: list[str] = []
        self.switches: dict[str, list[str]] = {}
        self.routers: dict[str, list[str]] = {}
        self.peered: set[str] = set()  # router ports a router-type LSP names, ever
        self.bound: set[str] = set()
        self.gateways: dict[str, str] = {}  # router -> its one distributed gateway port
        self.chassis: list[str] = []
        self.lbs: list[str] = []
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def ports(self) -> list[str]:
        return sorted(p for ps in self.switches.values() for p in ps)

    def step(self) -> None:
        r = self.rng
        choices: list[tuple[int, Any]] = [(3, self.ls_add), (2, self.lr_add),
                                          (2, self.chassis_add)]
        if self.switches:
            choices += [(8, self.lsp_add), (1, self.ls_del), (2, self.lb_add),
                        (2, self.pg_add)]
        if self.ports():
            choices += [(3, self.lsp_change), (2, self.lsp_del), (1, self.container),
                        (1, self.retype)]
        if self.routers:
            choices += [(3, self.lrp_add), (1, self.lr_del), (1, self.nat)]
        if any(self.routers.values()):
            choices += [(1, self.lrp_del)]
        if self.routers and self.lbs:
            choices += [(1, self.lr_lb)]
        if self.routers and self.switches:
            choices += [(3, self.connect)]
        if self.chassis and self.ports():
            choices += [(3, self.bind)]
        if self.chassis and any(self.routers.values()):
            choices += [(2, self.gateway)]
        total = sum(w for w, _ in choices)
        pick = r.uniform(0, total)
        for w, fn in choices:
            pick -= w
            if pick <= 0:
                fn()
                return
        choices[-1][1]()

    def mac(self) -> str:
        return (f"0a:00:00:{self.rng.randrange(256):02x}:{self.n // 256 % 256:02x}:"
                f"{self.n % 256:02x}")

    def ls_add(self) -> None:
        sw = self.name("sw")
        self.switches[sw] = []
        extra = ""
        if self.rng.random() < 0.3:
            extra = (f" -- set Logical_Switch {sw} other_config:subnet=10.{self.n}.0.0/16"
                     " other_config:mcast_snoop=true")
        self.lines.append(f"nbctl ls-add {sw}{extra}")

    def lr_add(self) -> None:
        lr = self.name("lr")
        self.routers[lr] = []
        extra = ""
        if self.chassis and self.rng.random() < 0.2:
            extra = f" -- set Logical_Router {lr} options:chassis={self.rng.choice(self.chassis)}"
        self.lines.append(f"nbctl lr-add {lr}{extra}")

    def chassis_add(self) -> None:
        ch = self.name("ch")
        self.chassis.append(ch)
        extra = " port-up-notif=true" if self.rng.random() < 0.3 else ""
        self.lines.append(f"sim chassis {ch} 192.168.{self.n // 250}.{self.n % 250 + 1}{extra}")

    def lsp_add(self) -> None:
        r = self.rng
        sw = r.choice(sorted(self.switches))
        p = self.name("p")
        self.switches[sw].append(p)
        kind = r.choice(["vif", "vif", "vif", "dynamic", "localnet", "localport",
                         "external", "virtual", "l2gateway"])
        addr = f'"{self.mac()} 10.{self.n}.{r.randrange(1, 250)}.{r.randrange(1, 250)}"'
        line = f"nbctl lsp-add {sw} {p} -- lsp-set-addresses {p} {addr}"
        if kind == "dynamic":
            line = f"nbctl lsp-add {sw} {p} -- lsp-set-addresses {p} dynamic"
        elif kind == "localnet":
            line = (f"nbctl lsp-add {sw} {p} -- lsp-set-type {p} localnet -- "
                    f"lsp-set-addresses {p} unknown -- lsp-set-options {p} network_name=phys")
        elif kind in ("localport", "external"):
            line += f" -- lsp-set-type {p} {kind}"
        elif kind == "virtual":
            others = [q for q in self.switches[sw] if q != p]
            parents = ",".join(sorted(others[:2]))
            line += (f" -- lsp-set-type {p} virtual -- lsp-set-options {p} "
                     f"virtual-ip=10.99.{self.n % 250}.1 virtual-parents={parents or 'none'}")
        elif kind == "l2gateway" and self.chassis:
            line += (f" -- lsp-set-type {p} l2gateway -- lsp-set-options {p} "
                     f"network_name=phys l2gateway-chassis={r.choice(self.chassis)}")
        self.lines.append(line)

    def lsp_change(self) -> None:
        r = self.rng
        p = r.choice(self.ports())
        what = r.randrange(4)
        if what == 0 and self.chassis:
            self.lines.append(f"nbctl lsp-set-options {p} requested-chassis="
                              f"{r.choice(self.chassis)}")
        elif what == 1:
            self.lines.append(f"nbctl lsp-set-port-security {p} \"{self.mac()}\"")
        elif what == 2:
            self.lines.append(f"nbctl lsp-set-enabled {p} {r.choice(['enabled', 'disabled'])}")
        else:
            self.lines.append(f"nbctl set Logical_Switch_Port {p} external_ids:k{self.n}=v")

    def lsp_del(self) -> None:
        p = self.rng.choice(self.ports())
        for ps in self.switches.values():
            if p in ps:
                ps.remove(p)
        self.bound.discard(p)
        self.lines.append(f"nbctl lsp-del {p}")

    def ls_del(self) -> None:
        sw = self.rng.choice(sorted(self.switches))
        for p in self.switches.pop(sw):
            self.bound.discard(p)
        self.lines.append(f"nbctl ls-del {sw}")

    def lrp_add(self) -> None:
        lr = self.rng.choice(sorted(self.routers))
        lrp = self.name(f"{lr}-p")
        self.routers[lr].append(lrp)
        self.lines.append(f"nbctl lrp-add {lr} {lrp} {self.mac()} 172.{self.n % 250}.0.1/24")

    def lrp_del(self) -> None:
        lrps = sorted(lrp for lrps in self.routers.values() for lrp in lrps)
        lrp = self.rng.choice(lrps)
        for lr, lrps_ in self.routers.items():
            if lrp in lrps_:
                lrps_.remove(lrp)
                if self.gateways.get(lr) == lrp:
                    del self.gateways[lr]
        self.lines.append(f"nbctl lrp-del {lrp}")

    def nat(self) -> None:
        lr = self.rng.choice(sorted(self.routers))
        kind = self.rng.choice(["snat", "dnat", "dnat_and_snat"])
        ext = f"172.31.{self.n % 250}.{self.rng.randrange(1, 250)}"
        self.name("nat")
        logical = f"10.{self.n % 250}.0.{self.rng.randrange(1, 250)}"
        if kind == "snat":
            logical = f"10.{self.n % 250}.0.0/24"
        self.lines.append(f"nbctl --may-exist lr-nat-add {lr} {kind} {ext} {logical}")

    def lr_lb(self) -> None:
        lr = self.rng.choice(sorted(self.routers))
        lb = self.rng.choice(self.lbs)
        self.lines.append(f"nbctl --may-exist lr-lb-add {lr} {lb}")

    def container(self) -> None:
        vifs = [p for p in self.ports() if p.startswith("p")]
        if not vifs:
            return
        parent = self.rng.choice(vifs)
        sw = next(sw for sw, ps in self.switches.items() if parent in ps)
        c = self.name("c")
        self.switches[sw].append(c)
        tag = self.rng.choice([0, self.rng.randrange(1, 4095)])
        self.lines.append(f"nbctl lsp-add {sw} {c} {parent} {tag}")

    def retype(self) -> None:
        vifs = [p for p in self.ports() if p.startswith("p")]
        if not vifs:
            return
        p = self.rng.choice(vifs)
        kind = self.rng.choice(["", "localport", "external", "vtep"])
        line = f'nbctl lsp-set-type {p} "{kind}"'
        if kind == "vtep":
            line += (f" -- lsp-set-options {p} vtep-physical-switch=ps vtep-logical-switch=ls")
        self.lines.append(line)

    def lr_del(self) -> None:
        lr = self.rng.choice(sorted(self.routers))
        self.routers.pop(lr)
        self.gateways.pop(lr, None)
        self.lines.append(f"nbctl lr-del {lr}")

    def connect(self) -> None:
        free = sorted(lrp for lrps in self.routers.values() for lrp in lrps
                      if lrp not in self.peered)
        if not free:
            self.lrp_add()
            return
        lrp = self.rng.choice(free)
        sw = self.rng.choice(sorted(self.switches))
        p = f"{sw}-{lrp}"
        self.peered.add(lrp)
        self.switches[sw].append(p)
        self.lines.append(f"nbctl lsp-add {sw} {p} -- lsp-set-type {p} router -- "
                          f"lsp-set-addresses {p} router -- lsp-set-options {p} "
                          f"router-port={lrp}")

    def bind(self) -> None:
        p = self.rng.choice(self.ports())
        if p in self.bound:
            self.bound.discard(p)
            self.lines.append(f"sbctl lsp-unbind {p}")
            return
        self.bound.add(p)
        self.lines.append(f"sbctl lsp-bind {p} {self.rng.choice(self.chassis)}")

    def gateway(self) -> None:
        # One gateway port per router: ovn-nbctl refuses NAT on a router with several.
        lrps = sorted(lrp for lr, lrps in self.routers.items() for lrp in lrps
                      if self.gateways.get(lr, lrp) == lrp)
        if not lrps:
            return
        lrp = self.rng.choice(lrps)
        lr = next(lr for lr, ps in self.routers.items() if lrp in ps)
        self.gateways[lr] = lrp
        self.lines.append(f"nbctl lrp-set-gateway-chassis {lrp} {self.rng.choice(self.chassis)} "
                          f"{self.rng.randrange(1, 100)}")

    def lb_add(self) -> None:
        lb = self.name("lb")
        self.lbs.append(lb)
        n = self.n % 250
        self.lines.append(f"nbctl lb-add {lb} 10.200.{n}.1:80 10.0.0.{n}:8080")
        sw = self.rng.choice(sorted(self.switches))
        self.lines.append(f"nbctl ls-lb-add {sw} {lb}")

    def pg_add(self) -> None:
        ports = [p for p in self.ports() if self.rng.random() < 0.3]
        self.lines.append(f"nbctl pg-add {self.name('pg')} {' '.join(ports)}".rstrip())


def generate_script(seed: int, steps: int = 60) -> Script:
    """A reproducible random NB history of `steps` lines (see `_Gen`)."""
    g = _Gen(seed)
    for _ in range(steps):
        g.step()
    text = f"# generated: seed {seed}, {steps} steps\n" + "\n".join(g.lines) + "\n"
    return parse_script(text, f"generated_{seed}")
