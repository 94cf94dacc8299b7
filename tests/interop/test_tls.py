"""TLS remotes (`pssl:`), side by side with the real ovsdb-server 3.1: the real clients
(`ovsdb-client`, `ovn-nbctl`) over `ssl:` with certificates of a throwaway CA, the PKI
options as files and as the `db:` columns `ovn-ctl` passes, the peer certificate's CN
as RBAC's client id, and what each server logs and does when a peer's certificate is
foreign or expired, when a client speaks plain JSON to the TLS port, and when the PKI
options are missing. Every test runs against both servers and compares."""

from __future__ import annotations

import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_helpers import strip_uuids, wait_until

from procs import (
    NB_SCHEMA,
    SB_SCHEMA,
    VSWITCH_SCHEMA,
    ServerProcess,
    create_db,
    require,
    run,
    stop_process,
)
from pyovsdb.jsonrpc.tls import peer_common_name
from pyovsdb.testing_pki import Authority, Cert

pytestmark = pytest.mark.interop

KINDS = ("ours", "real")
LISTENING = re.compile(r"\|socket_util\|INFO\|0:127\.0\.0\.1: listening on port (\d+)$", re.M)
TIMEOUT = "--timeout=20"


@pytest.fixture
def ca(tmp_path: Path) -> Authority:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl", "openssl")
    return Authority(tmp_path / "pki")


def _start(kind: str, d: Path, schema: str, options: list[str]) -> tuple[ServerProcess, int]:
    d.mkdir(parents=True, exist_ok=True)
    db = create_db(kind, d / "db.db", schema)
    srv = ServerProcess(kind, d, [db], extra=["--remote=pssl:0:127.0.0.1", *options]).start()
    return srv, _listening_port(srv)


def _listening_port(srv: ServerProcess) -> int:
    """The port of the server's one `pssl:0:127.0.0.1` listener, from its log line."""
    def found() -> list[str]:
        return LISTENING.findall(Path(srv.logfile).read_text())
    assert wait_until(lambda: bool(found())), Path(srv.logfile).read_text()
    return int(found()[0])


def _logged(srv: ServerProcess, port: int, text: str, n: int = 1, start: int = 0) -> bool:
    """Whether `text` is in `n` of the log's lines after the first `start` (waited for)."""
    return wait_until(lambda: sum(text in line for line in _log_lines(srv, port)[start:]) >= n)


@pytest.fixture
def servers(tmp_path: Path, ca: Authority) -> Iterator[dict[str, tuple[ServerProcess, int]]]:
    """Both servers serving the Northbound over `pssl:` with the CA's `server` cert."""
    cert = ca.issue("server")
    out: dict[str, tuple[ServerProcess, int]] = {}
    try:
        for kind in KINDS:
            out[kind] = _start(kind, tmp_path / kind, NB_SCHEMA, cert.options())
        yield out
    finally:
        for srv, _ in out.values():
            srv.stop()


def _ssl(port: int) -> str:
    return f"ssl:127.0.0.1:{port}"


def _log_lines(srv: ServerProcess, port: int) -> list[str]:
    """The log's lines after the timestamp and sequence number, ports made neutral."""
    lines = []
    for line in Path(srv.logfile).read_text().splitlines():
        text = line.split("|", 2)[-1]
        text = re.sub(r"ssl:127\.0\.0\.1:\d+", "ssl:127.0.0.1:N", text)
        lines.append(text.replace(f"pssl:{port}:", "pssl:P:"))
    return lines


def test_real_clients_work_over_tls(servers: dict[str, tuple[ServerProcess, int]],
                                    ca: Authority) -> None:
    me = ca.issue("admin")
    got = {}
    for kind, (_, port) in servers.items():
        dbs = run(["ovsdb-client", TIMEOUT, *me.options(), "list-dbs", _ssl(port)]).stdout
        nbctl = ["ovn-nbctl", TIMEOUT, f"--db={_ssl(port)}", *me.options()]
        run([*nbctl, "init"])
        run([*nbctl, "ls-add", "sw0", "--", "lsp-add", "sw0", "p1", "--",
             "lsp-set-addresses", "p1", "00:00:00:00:00:01 10.0.0.1"])
        show = strip_uuids(run([*nbctl, "show"]).stdout)
        got[kind] = (dbs, show)
    assert got["ours"] == got["real"]
    assert "OVN_Northbound" in got["ours"][0] and "p1" in got["ours"][1]


def test_refused_peers_are_logged_as_the_real_server_logs_them(
        servers: dict[str, tuple[ServerProcess, int]], ca: Authority, tmp_path: Path) -> None:
    """A certificate from another CA, an expired one, and plain JSON: the connection
    is refused with the real lines, and a good client still gets through."""
    foreign = Authority(tmp_path / "other", "other").issue("intruder")
    expired = ca.issue("late", days=-1)
    me = ca.issue("admin")
    seen = {}
    for kind, (srv, port) in servers.items():
        before = len(_log_lines(srv, port))
        for bad in (foreign, expired):
            p = run(["ovsdb-client", TIMEOUT, *Cert(bad.key, bad.cert, ca.cert).options(),
                     "list-dbs", _ssl(port)], check=False)
            assert p.returncode != 0, (kind, p.stdout)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b'{"id":1,"method":"list_dbs","params":[]}')
            assert s.recv(100) == b""  # (closed: no JSON answer on a TLS port)
        assert _logged(srv, port, "connection dropped", 3, before)
        ok = run(["ovsdb-client", TIMEOUT, *me.options(), "list-dbs", _ssl(port)])
        assert "OVN_Northbound" in ok.stdout
        seen[kind] = _log_lines(srv, port)[before:]
    assert seen["ours"] == seen["real"]
    assert seen["ours"][0] == ("stream_ssl|WARN|SSL_accept: error:0A000086:SSL routines::"
                               "certificate verify failed")
    assert "SSL_accept: error:0A00010B:SSL routines::wrong version number" in \
        " ".join(seen["ours"])


def test_missing_pki_options_refuse_each_connection(tmp_path: Path, ca: Authority) -> None:
    """The listener opens; each connection fails with the three real errors and the
    listener's `accept failed`."""
    me = ca.issue("admin")
    seen = {}
    for kind in KINDS:
        srv, port = _start(kind, tmp_path / kind, NB_SCHEMA, [])
        try:
            p = run(["ovsdb-client", TIMEOUT, *me.options(), "list-dbs", _ssl(port)],
                    check=False)
            assert p.returncode != 0
            assert _logged(srv, port, "accept failed")
            seen[kind] = [line for line in _log_lines(srv, port)
                          if "stream_ssl" in line or "accept failed" in line]
        finally:
            srv.stop()
    assert seen["ours"] == seen["real"] == [
        "stream_ssl|ERR|Private key must be configured to use SSL",
        "stream_ssl|ERR|Certificate must be configured to use SSL",
        "stream_ssl|ERR|CA certificate must be configured to use SSL",
        "ovsdb_jsonrpc_server|WARN|pssl:P:127.0.0.1: accept failed: Protocol not available"]


def test_pki_options_read_from_the_database_as_ovn_ctl_passes_them(
        tmp_path: Path, ca: Authority) -> None:
    """`--private-key=db:OVN_Northbound,SSL,private_key` and the rest: nothing until
    `ovn-nbctl set-ssl` writes the row, then TLS with those files, without a restart."""
    server, me = ca.issue("server"), ca.issue("admin")
    options = [f"--{o}=db:OVN_Northbound,SSL,{o.replace('-', '_')}"
               for o in ("private-key", "certificate", "ca-cert")]
    for kind in KINDS:
        srv, port = _start(kind, tmp_path / kind, NB_SCHEMA, options)
        try:
            client = ["ovsdb-client", TIMEOUT, *me.options(), "list-dbs", _ssl(port)]
            assert run(client, check=False).returncode != 0
            nbctl = ["ovn-nbctl", TIMEOUT, f"--db=unix:{srv.sock}"]
            run([*nbctl, "init"])
            run([*nbctl, "set-ssl", server.key, server.cert, server.ca])
            assert "OVN_Northbound" in run(client).stdout, kind
        finally:
            srv.stop()


def test_the_certificates_common_name_is_the_rbac_client_id(tmp_path: Path,
                                                            ca: Authority) -> None:
    """A Southbound remote with the role `ovn-controller`: a chassis whose certificate
    says `hv1` may write its own Chassis row and not another's, with the real error."""
    server, hv1 = ca.issue("server"), ca.issue("hv1")
    rbac = ('["OVN_Southbound",'
            '{"op":"insert","table":"RBAC_Permission","uuid-name":"p","row":{'
            '"table":"Chassis","authorization":["set",["name"]],"insert_delete":true,'
            '"update":["set",["nb_cfg","external_ids","encaps","vtep_logical_switches",'
            '"other_config","transport_zones"]]}},'
            '{"op":"insert","table":"RBAC_Permission","uuid-name":"e","row":{'
            '"table":"Encap","authorization":["set",["chassis_name"]],'
            '"insert_delete":true,"update":["set",["type","options","ip"]]}},'
            '{"op":"insert","table":"RBAC_Role","row":{"name":"ovn-controller",'
            '"permissions":["map",[["Chassis",["named-uuid","p"]],'
            '["Encap",["named-uuid","e"]]]]}}]')
    connection = ["--remote=db:OVN_Southbound,SB_Global,connections"]
    got = {}
    for kind in KINDS:
        d = tmp_path / kind
        d.mkdir()
        db = create_db(kind, d / "sb.db", SB_SCHEMA)
        srv = ServerProcess(kind, d, [db], extra=[*connection, *server.options()]).start()
        try:
            sbctl = ["ovn-sbctl", TIMEOUT, f"--db=unix:{srv.sock}"]
            run([*sbctl, "init"])
            run(["ovsdb-client", TIMEOUT, "transact", f"unix:{srv.sock}", rbac])
            run([*sbctl, "--", "--id=@c", "create", "Connection",
                 "target=\"pssl:0:127.0.0.1\"", "role=ovn-controller", "--", "add",
                 "SB_Global", ".", "connections", "@c"])
            remote = _ssl(_listening_port(srv))
            results = []
            for name in ("hv1", "hv2"):
                op = ('["OVN_Southbound",{"op":"insert","table":"Encap","uuid-name":"e",'
                      '"row":{"type":"geneve","ip":"192.168.0.1",'
                      f'"chassis_name":"{name}"}}}},'
                      '{"op":"insert","table":"Chassis","row":{'
                      f'"name":"{name}","hostname":"{name}","encaps":["named-uuid","e"]}}}}]')
                p = run(["ovsdb-client", TIMEOUT, *hv1.options(), "transact", remote, op],
                        check=False)
                results.append(strip_uuids(p.stdout + p.stderr))
            got[kind] = results
        finally:
            srv.stop()
    assert got["ours"] == got["real"]
    assert "error" not in got["ours"][0]
    assert "RBAC rules for client \\\"hv1\\\" role \\\"ovn-controller\\\" prohibit" \
        in got["ours"][1], got["ours"][1]


def test_our_northd_reaches_real_servers_over_tls(tmp_path: Path, ca: Authority) -> None:
    """`pyovsdb northd --ovnnb-db=ssl:... --ovnsb-db=ssl:... -p -c -C`, as ovn-ctl starts
    ovn-northd against TLS databases: a switch written to the real Northbound server
    reaches the real Southbound one."""
    require("ovn-sbctl")
    server, me = ca.issue("server"), ca.issue("northd")
    nb, nb_port = _start("real", tmp_path / "nb", NB_SCHEMA, server.options())
    sb, sb_port = _start("real", tmp_path / "sb", SB_SCHEMA, server.options())
    northd = None
    try:
        run(["ovn-sbctl", TIMEOUT, f"--db=unix:{sb.sock}", "init"])
        nbctl = ["ovn-nbctl", TIMEOUT, f"--db=unix:{nb.sock}"]
        run([*nbctl, "init"])
        northd = subprocess.Popen(
            [sys.executable, "-m", "pyovsdb", "northd", f"--ovnnb-db={_ssl(nb_port)}",
             f"--ovnsb-db={_ssl(sb_port)}", *me.options(), "--no-chdir", "-vconsole:off",
             f"--log-file={tmp_path / 'northd.log'}", f"--unixctl={tmp_path / 'northd.ctl'}",
             f"--pidfile={tmp_path / 'northd.pid'}"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        run([*nbctl, "ls-add", "sw0", "--", "lsp-add", "sw0", "vm1"])

        def bound() -> bool:
            return "vm1" in run(["ovn-sbctl", TIMEOUT, f"--db=unix:{sb.sock}", "--bare",
                                 "--columns=logical_port", "list", "Port_Binding"]).stdout
        assert wait_until(bound, timeout=30), (tmp_path / "northd.log").read_text()
    finally:
        if northd is not None:
            stop_process(northd)
        nb.stop()
        sb.stop()


def test_the_pypi_ovs_idl_over_tls(servers: dict[str, tuple[ServerProcess, int]],
                                   ca: Authority) -> None:
    """The PyPI `ovs` IDL (what Neutron uses) over `ssl:`: it syncs the Northbound and
    commits a switch, on both servers."""
    from test_python_ovs_idl import commit, make_idl, rows
    ovs_stream = pytest.importorskip("ovs.stream")
    me = ca.issue("neutron")
    ovs_stream.Stream.ssl_set_private_key_file(me.key)
    ovs_stream.Stream.ssl_set_certificate_file(me.cert)
    ovs_stream.Stream.ssl_set_ca_cert_file(me.ca)
    got = {}
    for kind, (srv, port) in servers.items():
        idl = make_idl(_ssl(port), ["Logical_Switch"])
        try:
            table = idl.tables["Logical_Switch"]
            status, _ = commit(idl, lambda txn, t=table: setattr(txn.insert(t), "name",
                                                                  "from-neutron"))
            names = run(["ovn-nbctl", TIMEOUT, f"--db=unix:{srv.sock}", "--bare",
                         "--columns=name", "list", "Logical_Switch"]).stdout.split()
            got[kind] = (status, names, [r.name for r in rows(idl, "Logical_Switch")])
        finally:
            idl.close()
    assert got["ours"] == got["real"]
    assert got["ours"][1] == ["from-neutron"], got


def _server_cn(port: int, me: Cert) -> str | None:
    """The CN of the certificate the server at `port` presents now."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_cert_chain(me.cert, me.key)
    ctx.load_verify_locations(me.ca)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw) as s:
        return peer_common_name(s.getpeercert())


def test_a_certificate_renewed_on_disk_is_used_by_the_next_connection(
        tmp_path: Path, ca: Authority) -> None:
    """The server's key and certificate files replaced (a renewal): the next connection
    gets the new certificate, without a restart, on both servers."""
    me = ca.issue("admin")
    for kind in KINDS:
        old, new = ca.issue(f"{kind}-old"), ca.issue(f"{kind}-new")
        key, cert = tmp_path / f"{kind}-key.pem", tmp_path / f"{kind}-cert.pem"
        shutil.copy(old.key, key)
        shutil.copy(old.cert, cert)
        srv, port = _start(kind, tmp_path / kind, NB_SCHEMA,
                           Cert(str(key), str(cert), ca.cert).options())
        try:
            assert _server_cn(port, me) == f"{kind}-old"
            time.sleep(1.1)  # (a new modification time, at the file system's resolution)
            shutil.copy(new.key, key)
            shutil.copy(new.cert, cert)
            want = f"{kind}-new"
            assert wait_until(lambda p=port, w=want: _server_cn(p, me) == w), kind
        finally:
            srv.stop()


def test_handshakes_that_never_complete_hold_nobody_up(
        servers: dict[str, tuple[ServerProcess, int]], ca: Authority) -> None:
    """Twenty connections that never start their handshake: a client with a good
    certificate still gets through at once. (The real server keeps such a connection
    for as long as its peer does; ours drops it after `HANDSHAKE_TIMEOUT`.)"""
    me = ca.issue("admin")
    for kind, (_, port) in servers.items():
        stalled = [socket.create_connection(("127.0.0.1", port), timeout=10)
                   for _ in range(20)]
        try:
            t0 = time.monotonic()
            ok = run(["ovsdb-client", TIMEOUT, *me.options(), "list-dbs", _ssl(port)])
            assert "OVN_Northbound" in ok.stdout and time.monotonic() - t0 < 5, kind
        finally:
            for s in stalled:
                s.close()


def test_ipv6(tmp_path: Path, ca: Authority) -> None:
    """`pssl:0:[::1]` and `ssl:[::1]:PORT`, as the real tools write IPv6 literals."""
    server, me = ca.issue("server"), ca.issue("admin")
    got = {}
    for kind in KINDS:
        d = tmp_path / kind
        d.mkdir()
        db = create_db(kind, d / "db.db", NB_SCHEMA)
        srv = ServerProcess(kind, d, [db],
                            extra=["--remote=pssl:0:[::1]", *server.options()]).start()
        try:
            def port(s: ServerProcess = srv) -> list[str]:
                return re.findall(r"listening on port (\d+)$", Path(s.logfile).read_text(),
                                  re.M)
            assert wait_until(lambda: bool(port())), Path(srv.logfile).read_text()
            remote = f"ssl:[::1]:{port()[0]}"
            got[kind] = run(["ovsdb-client", TIMEOUT, *me.options(), "list-dbs",
                             remote]).stdout
            ours = run([sys.executable, "-m", "pyovsdb", "client", *me.options(),
                        "list-dbs", remote]).stdout
            assert ours == got[kind]
        finally:
            srv.stop()
    assert got["ours"] == got["real"] == "OVN_Northbound\n_Server\n"


@pytest.mark.parametrize("kind", KINDS)
def test_a_real_ovn_controller_over_tls_under_rbac(tmp_path: Path, ca: Authority,
                                                   kind: str) -> None:
    """A real ovn-controller with its own certificate reaches the Southbound over
    `ssl:` through a Connection whose role is `ovn-controller` (RBAC rows by the real
    ovn-northd): it registers its chassis. Another whose certificate names `hv1` but
    whose system-id is `hv2` is refused its Chassis row, with the real error."""
    from hypervisor import ControlPlane, Hypervisor, poll

    server, hv1 = ca.issue("server"), ca.issue("hv1")
    plane = ControlPlane(kind, tmp_path / "central", server_extra=server.options()).start()
    hvs: list[Hypervisor] = []
    try:
        assert plane.sb is not None
        plane.sb.appctl("ovsdb-server/add-remote", "db:OVN_Southbound,SB_Global,connections")
        plane.sbctl("set-connection", "role=ovn-controller", "pssl:0:127.0.0.1")
        remote = _ssl(_listening_port(plane.sb))
        for name, ip in (("hv1", "127.0.0.2"), ("hv2", "127.0.0.3")):
            hvs.append(Hypervisor(name, tmp_path / name, remote, ip, "real",
                                  controller_extra=hv1.options()).start())
        poll(lambda: "hv1" in plane.chassis(), "hv1's chassis", plane.logs)
        poll(lambda: "RBAC rules for client" in Path(hvs[1].controller.logfile).read_text(),
             "hv2's refusal", hvs[1].logs)
        assert plane.chassis() == ["hv1"]
        refused = next(line.split("|", 4)[-1] for line in
                       Path(hvs[1].controller.logfile).read_text().splitlines()
                       if "RBAC rules for client" in line)
        # (its first transaction inserts its Chassis, Chassis_Private and Encap rows in
        # the IDL's hash order of their random UUIDs: any is the one refused first)
        assert re.search(r'RBAC rules for client \\"hv1\\" role \\"ovn-controller\\" '
                         r'prohibit row insertion into table \\"(Chassis|Chassis_Private|Encap)\\"',
                         refused), refused
    finally:
        for hv in hvs:
            hv.stop()
        plane.stop()


def _handshake_version(port: int, me: Cert, version: ssl.TLSVersion) -> str | None:
    """The protocol a client limited to `version` gets (None: refused)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_cert_chain(me.cert, me.key)
    ctx.load_verify_locations(me.ca)
    ctx.minimum_version = ctx.maximum_version = version
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw) as s:
            return s.version()
    except (ssl.SSLError, OSError):
        return None


def test_ssl_protocols(tmp_path: Path, ca: Authority) -> None:
    """The default allows TLS 1.3 (3.1 leaves the default to OpenSSL); `TLSv1.2` alone
    refuses it, on both servers."""
    server, me = ca.issue("server"), ca.issue("admin")
    got = {}
    for kind in KINDS:
        seen = []
        for protocols in ([], ["--ssl-protocols=TLSv1.2"]):
            srv, port = _start(kind, tmp_path / f"{kind}{len(protocols)}", NB_SCHEMA,
                               [*server.options(), *protocols])
            try:
                seen.append([_handshake_version(port, me, v)
                             for v in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)])
            finally:
                srv.stop()
        got[kind] = seen
    assert got["ours"] == got["real"] == [["TLSv1.2", "TLSv1.3"], ["TLSv1.2", None]]


def test_a_real_client_bootstraps_its_ca_certificate_from_peer_ca_cert(
        tmp_path: Path, ca: Authority) -> None:
    """`--peer-ca-cert` sends the CA's certificate after the server's: a real client with
    `--bootstrap-ca-cert=FILE` (no such file yet) saves it from the first connection, as
    from the real server, and the next connection is verified against it."""
    server, me = ca.issue("server"), ca.issue("admin")
    got = {}
    for kind in KINDS:
        srv, port = _start(kind, tmp_path / kind, NB_SCHEMA,
                           [*server.options(), f"--peer-ca-cert={ca.cert}"])
        try:
            boot = tmp_path / f"{kind}-boot.pem"
            client = ["ovsdb-client", TIMEOUT, f"--private-key={me.key}",
                      f"--certificate={me.cert}", f"--bootstrap-ca-cert={boot}", "list-dbs",
                      _ssl(port)]
            first = run(client, check=False)
            second = run(client, check=False)
            got[kind] = (first.returncode, second.returncode, second.stdout,
                         boot.read_bytes() == Path(ca.cert).read_bytes())
        finally:
            srv.stop()
    assert got["ours"] == got["real"] == (1, 0, "OVN_Northbound\n_Server\n", True)


@pytest.mark.parametrize(("upstream_kind", "follower_kind"), [("real", "ours"),
                                                               ("ours", "real")],
                         ids=["ours-follows-real", "real-follows-ours"])
@pytest.mark.parametrize("how", ["relay", "backup"])
def test_relays_and_backups_over_tls(tmp_path: Path, ca: Authority, how: str,
                                     upstream_kind: str, follower_kind: str) -> None:
    """A relay (`relay:DB:ssl:...`) and a backup (`--sync-from=ssl:...`) follow their
    source over TLS, each server with its own certificate of one CA, ours of the real
    server and the real one of ours."""
    up_cert, follower_cert = ca.issue("up"), ca.issue("follower")
    up, port = _start(upstream_kind, tmp_path / "up", NB_SCHEMA, up_cert.options())
    follower = None
    try:
        run(["ovn-nbctl", TIMEOUT, f"--db={up.unix}", "init"])
        run(["ovn-nbctl", TIMEOUT, f"--db={up.unix}", "ls-add", "sw0"])
        d = tmp_path / "follower"
        d.mkdir()
        if how == "relay":
            dbs, extra = [f"relay:OVN_Northbound:{_ssl(port)}"], []
        else:
            dbs, extra = [create_db(follower_kind, d / "nb.db", NB_SCHEMA)], \
                [f"--sync-from={_ssl(port)}"]
        follower = ServerProcess(follower_kind, d, dbs, name="f",
                                 extra=[*extra, *follower_cert.options()]).start()
        run(["ovn-nbctl", TIMEOUT, f"--db={up.unix}", "ls-add", "sw1"])

        def names() -> list[str]:
            out = run(["ovn-nbctl", TIMEOUT, "--no-leader-only", f"--db={follower.unix}",
                       "--bare", "--columns=name", "list", "Logical_Switch"],
                      check=False).stdout
            return sorted(out.split())
        assert wait_until(lambda: names() == ["sw0", "sw1"], timeout=30), \
            Path(follower.logfile).read_text()
    finally:
        if follower is not None:
            follower.stop()
        up.stop()


@pytest.mark.parametrize(("schema", "tool", "steps"), [
    (VSWITCH_SCHEMA, "ovs-vsctl", [["--no-wait", "init"], ["--no-wait", "add-br", "br0"],
                                   ["list-br"]]),
    (SB_SCHEMA, "ovn-sbctl", [["init"], ["chassis-add", "hv1", "geneve", "127.0.0.1"],
                              ["show"]]),
], ids=["ovs-vsctl", "ovn-sbctl"])
def test_more_real_tools_over_tls(tmp_path: Path, ca: Authority, schema: str, tool: str,
                                  steps: list[list[str]]) -> None:
    require(tool)
    server, me = ca.issue("server"), ca.issue("admin")
    got = {}
    for kind in KINDS:
        srv, port = _start(kind, tmp_path / kind, schema, server.options())
        try:
            got[kind] = [strip_uuids(run([tool, TIMEOUT, f"--db={_ssl(port)}", *me.options(),
                                          *step]).stdout) for step in steps]
        finally:
            srv.stop()
    assert got["ours"] == got["real"]
    assert any(got["ours"]), got


def test_our_client_bootstraps_its_ca_certificate(tmp_path: Path, ca: Authority) -> None:
    """`pyovsdb client --bootstrap-ca-cert=FILE` against the real server with
    `--peer-ca-cert`: the first connection saves the CA certificate and fails, the next
    is verified against it, as with the real client."""
    server, me = ca.issue("server"), ca.issue("admin")
    srv, port = _start("real", tmp_path / "real", NB_SCHEMA,
                       [*server.options(), f"--peer-ca-cert={ca.cert}"])
    got = {}
    try:
        for tool in (["ovsdb-client"], [sys.executable, "-m", "pyovsdb", "client"]):
            boot = tmp_path / f"{len(tool)}-boot.pem"
            cmd = [*tool, TIMEOUT, f"--private-key={me.key}", f"--certificate={me.cert}",
                   f"--bootstrap-ca-cert={boot}", "list-dbs", _ssl(port)]
            first, second = run(cmd, check=False), run(cmd, check=False)
            got[tool[-1]] = (first.returncode, second.returncode, second.stdout,
                             boot.read_bytes() == Path(ca.cert).read_bytes())
    finally:
        srv.stop()
    assert got["client"] == got["ovsdb-client"] == (1, 0, "OVN_Northbound\n_Server\n", True)
