"""Simulated OVN chassis: what `ovn-controller` 23.03 writes to the Southbound database,
without Open vSwitch, for sandboxes, tests and benchmarks.

A group of chassis shares one Southbound IDL. Each chassis registers as ovn-controller
does (`Chassis` with its feature flags in `other_config`, one `Encap`, a
`Chassis_Private`), claims the VIF `Port_Binding`s it is told to host, marks them
`up`, and echoes `SB_Global.nb_cfg` into its `Chassis_Private.nb_cfg` with
`nb_cfg_timestamp`, so `ovn-nbctl --wait=hv` returns.

Rules kept here:
- Which chassis hosts which port is decided by a pure function (`plan_claims`) of the
  replica: a port whose requested chassis (the `requested_chassis` reference or
  `options:requested-chassis`, as northd writes them) is one of ours goes to it and
  one requested elsewhere is released; otherwise an unbound VIF goes round-robin over
  our chassis, in the order of its logical port name, when `auto_claim` is on. Ports
  bound to chassis we do not simulate are never touched.
- Claims, `up` and the `nb_cfg` echo of one reaction go in one transaction, so a
  chassis reports a configuration only together with the claims it asked for (a real
  chassis reports it once the flows for it are installed).
- The clock (for `nb_cfg_timestamp`) is a parameter; nothing else is random.
- Only what ovn-controller itself writes is written; rows of chassis not ours, and
  every other table, are read at most.
- As a program (`python -m pyovsdb.sim_chassis`), it writes its pidfile only once its
  chassis are registered (a readiness signal), and leaves them registered on SIGTERM,
  as ovn-controller does when it is stopped without `exit`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .idl import Idl, IdlRow, Status, Transaction

log = logging.getLogger("sim_chassis")

TABLES = ("Chassis", "Chassis_Private", "Encap", "Port_Binding", "SB_Global")

# Chassis.other_config as ovn-controller 23.03 fills it (controller/chassis.c,
# chassis_build_other_config) for a host with no bridge mappings or CMS options.
BASE_OTHER_CONFIG = {
    "ct-no-masked-label": "true",
    "datapath-type": "",
    "iface-types": "dummy,geneve,gre,internal,ip6erspan,ip6gre,lisp,patch,stt,system,"
                   "tap,vxlan",
    "is-interconn": "false",
    "mac-binding-timestamp": "true",
    "ovn-bridge-mappings": "",
    "ovn-chassis-mac-mappings": "",
    "ovn-cms-options": "",
    "ovn-ct-lb-related": "true",
    "ovn-enable-lflow-cache": "true",
    "ovn-limit-lflow-cache": "",
    "ovn-memlimit-lflow-cache-kb": "",
    "ovn-monitor-all": "false",
    "ovn-trim-limit-lflow-cache": "",
    "ovn-trim-timeout-ms": "",
    "ovn-trim-wmark-perc-lflow-cache": "",
    "port-up-notif": "true",
}


@dataclass(frozen=True, slots=True)
class ChassisSpec:
    """One simulated chassis: its system-id (`name`), hostname and tunnel endpoint."""

    name: str
    encap_ip: str
    hostname: str = ""
    encap_type: str = "geneve"
    other_config: dict[str, str] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return self.hostname or self.name

    def full_other_config(self) -> dict[str, str]:
        return {**BASE_OTHER_CONFIG, **self.other_config}


def default_specs(n: int, prefix: str = "sim") -> list[ChassisSpec]:
    """`n` chassis named `<prefix>-ch1`... with distinct loopback encap addresses."""
    return [ChassisSpec(f"{prefix}-ch{i + 1}", f"127.1.{i // 250}.{i % 250 + 1}")
            for i in range(n)]


@dataclass(frozen=True, slots=True)
class PortView:
    """What `plan_claims` needs to know of one Port_Binding."""

    logical_port: str
    type: str
    chassis: str | None  # the name of the chassis it is bound to
    up: bool
    requested: str | None  # the (first) requested chassis, by name or hostname


@dataclass(frozen=True, slots=True)
class Claim:
    """Bind `logical_port` to our chassis `chassis` (None: release it), `up` as given."""

    logical_port: str
    chassis: str | None
    up: bool


def plan_claims(ours: Sequence[ChassisSpec], ports: Iterable[PortView], *,
                auto_claim: bool, next_rr: int = 0) -> tuple[list[Claim], int]:
    """The claims and releases our chassis make for `ports`, by logical port name, and
    the round-robin position after them (module rules)."""
    by_name = {c.name: c.name for c in ours}
    by_name.update({c.host: c.name for c in ours if c.host not in by_name})
    names = [c.name for c in ours]
    claims: list[Claim] = []
    rr = next_rr
    for p in sorted(ports, key=lambda p: p.logical_port):
        if p.type != "":
            continue  # only VIFs: other types are bound by northd's choice or not at all
        mine = p.chassis in names
        if p.requested:
            target = by_name.get(p.requested)
            if target is None:
                if mine:
                    claims.append(Claim(p.logical_port, None, False))
                continue
        elif p.chassis is not None:
            if not mine:
                continue
            target = p.chassis
        elif auto_claim and names:
            target = names[rr % len(names)]
            rr += 1
        else:
            continue
        if p.chassis != target or not p.up:
            claims.append(Claim(p.logical_port, target, True))
    return claims, rr


def port_view(pb: IdlRow) -> PortView:
    chassis = pb.chassis
    req_row = pb.requested_chassis
    requested: str | None = None
    if isinstance(req_row, IdlRow):
        requested = req_row.name
    else:
        opt = pb.options.get("requested-chassis", "")
        requested = opt.split(",")[0].strip() or None
    return PortView(pb.logical_port, pb.type,
                    chassis.name if isinstance(chassis, IdlRow) else None,
                    pb.up is True, requested)


class ChassisGroup:
    """Simulated chassis `specs` on the Southbound database at `remotes`."""

    def __init__(self, remotes: str | Sequence[str], specs: Sequence[ChassisSpec], *,
                 auto_claim: bool = True, wall_ms: Callable[[], int] | None = None,
                 leader_only: bool = True) -> None:
        self.specs = list(specs)
        self.auto_claim = auto_claim
        self.wall_ms = wall_ms or (lambda: int(time.time() * 1000))
        self.idl = Idl(remotes, "OVN_Southbound", tables=list(TABLES),
                       leader_only=leader_only)
        self.rr = 0
        self.n_claims = 0
        # what the reaction being committed would move them to
        self._pending_rr = 0
        self._pending_claims = 0
        self.n_echoes = 0
        self.registered = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- reading the replica ----------------------------------------------------------

    def _by_name(self, table: str) -> dict[str, IdlRow]:
        return {r.name: r for r in self.idl[table].rows.values()}

    def nb_cfg(self) -> int:
        rows = sorted(self.idl["SB_Global"].rows.values(), key=lambda r: r.uuid)
        return int(rows[0].nb_cfg) if rows else 0

    # -- one reaction -----------------------------------------------------------------

    def _register(self, txn: Transaction) -> bool:
        """Register what is missing; whether every chassis was already there."""
        chassis = self._by_name("Chassis")
        complete = True
        private = self._by_name("Chassis_Private")
        for spec in self.specs:
            row: Any = chassis.get(spec.name)
            if row is None:
                encap = txn.insert("Encap", type=spec.encap_type, ip=spec.encap_ip,
                                   options={"csum": "true"}, chassis_name=spec.name)
                row = txn.insert("Chassis", name=spec.name, hostname=spec.host,
                                 encaps=[encap], other_config=spec.full_other_config())
                log.info("Registering chassis %s (encap %s %s)", spec.name,
                         spec.encap_type, spec.encap_ip)
                complete = False
            elif row.other_config != spec.full_other_config() or row.hostname != spec.host:
                txn.update(row, hostname=spec.host, other_config=spec.full_other_config())
            prow = private.get(spec.name)
            if prow is None:
                txn.insert("Chassis_Private", name=spec.name, chassis=row)
            elif isinstance(row, IdlRow) and prow.chassis != row:
                txn.update(prow, chassis=row)
        return complete

    def _react(self, txn: Transaction) -> None:
        self._pending_rr, self._pending_claims = self.rr, 0
        if not self._register(txn):
            return  # claims and echoes once the chassis rows exist (next round)
        chassis = self._by_name("Chassis")
        pbs = {pb.logical_port: pb for pb in self.idl["Port_Binding"].rows.values()}
        claims, rr = plan_claims(self.specs, (port_view(pb) for pb in pbs.values()),
                                 auto_claim=self.auto_claim, next_rr=self.rr)
        self._pending_rr = rr
        for c in claims:
            pb = pbs[c.logical_port]
            if c.chassis is None:
                log.info("Releasing lport %s from this chassis", c.logical_port)
                txn.update(pb, chassis=[], up=[False])
                continue
            ch = chassis[c.chassis]
            if port_view(pb).chassis != c.chassis:
                log.info("%s: Claiming lport %s for this chassis.", c.chassis,
                         c.logical_port)
            txn.update(pb, chassis=ch, up=[True])
        cfg = self.nb_cfg()
        if cfg:
            private = self._by_name("Chassis_Private")
            for spec in self.specs:
                prow = private.get(spec.name)
                if prow is not None and prow.nb_cfg != cfg:
                    txn.update(prow, nb_cfg=cfg, nb_cfg_timestamp=self.wall_ms())
        self._pending_claims = len(claims)

    async def react(self) -> Status:
        """Bring our rows in line with the replica once; the commit's status."""
        result = await self.idl.run(self._react)
        if result.status is Status.SUCCESS:
            self.rr = self._pending_rr
            self.n_claims += self._pending_claims
        elif result.status is not Status.UNCHANGED:
            log.warning("transaction failed: %s", result)
        return result.status

    # -- life cycle -------------------------------------------------------------------

    async def start(self, timeout: float = 30.0) -> None:
        """Connect, register every chassis, and keep reacting in the background."""
        await self.idl.start(timeout)
        status = await self.react()
        if status not in (Status.SUCCESS, Status.UNCHANGED):
            await self.idl.close()
            raise RuntimeError(f"registering the simulated chassis failed: {status}")
        self.registered.set()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            seqno = self.idl.seqno
            status = await self.react()
            if status is Status.ERROR:
                await asyncio.sleep(0.5)
            await self.idl.wait_for_change(seqno)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.idl.close()

    async def __aenter__(self) -> ChassisGroup:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


# -- the program ----------------------------------------------------------------------


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m pyovsdb.sim_chassis",
                                 description="Simulated OVN chassis on a Southbound DB.")
    ap.add_argument("--ovnsb-db", required=True, help="Southbound remotes, comma-separated")
    ap.add_argument("--chassis", type=int, default=1, help="how many chassis")
    ap.add_argument("--prefix", default="sim", help="chassis names are PREFIX-chN")
    ap.add_argument("--claim", choices=("all", "requested"), default="all",
                    help="claim unbound VIFs round-robin (all) or only requested ones")
    ap.add_argument("--pidfile", help="written once the chassis are registered")
    ap.add_argument("--log-file", help="log here instead of stderr")
    return ap.parse_args(argv)


async def _amain(args: argparse.Namespace) -> int:
    group = ChassisGroup(args.ovnsb_db, default_specs(args.chassis, args.prefix),
                         auto_claim=args.claim == "all")
    stopping = stop_on_signals()
    await group.start()
    log.info("%d chassis registered: %s", len(group.specs),
             ", ".join(s.name for s in group.specs))
    if args.pidfile:
        write_pidfile(args.pidfile)
    try:
        await stopping.wait()
    finally:
        await group.stop()
        if args.pidfile:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(args.pidfile)
    log.info("stopped")
    return 0


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (the program's cue to stop)."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    return stopping


def write_pidfile(path: str) -> None:
    """Our pid in `path`, which appears whole or not at all (a readiness signal)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.replace(tmp, path)


def run_program(name: str, amain: Callable[[], Coroutine[Any, Any, int]],
                log_file: str | None) -> int:
    """A simulator as a process: its log to `log_file` (else stderr), `amain` run, and
    a failure as one line naming the program, not a traceback."""
    handler: logging.Handler = (logging.FileHandler(log_file) if log_file
                                else logging.StreamHandler())
    handler.setFormatter(logging.Formatter(
        "%(asctime)s|%(name)s|%(levelname)s|%(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        return asyncio.run(amain())
    except Exception as e:  # one line, not a traceback
        print(f"{name}: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    args = _args(sys.argv[1:] if argv is None else argv)
    return run_program("sim_chassis", lambda: _amain(args), args.log_file)


if __name__ == "__main__":
    sys.exit(main())
