"""The real `ovs-vsctl --no-wait` on the Open_vSwitch database served by our server (and
the real one, via `any_vswitch_server`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import (
    client,
    dump_json,
    dump_modulo_uuids,
    parse_records,
    show_tree,
    vsctl,
    wait_until,
)

from procs import VSWITCH_SCHEMA, ServerProcess, create_db, free_port, require, run

pytestmark = pytest.mark.interop


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovs-vsctl", "ovsdb-client")


@pytest.fixture
def vs(any_vswitch_server: ServerProcess) -> ServerProcess:
    """An initialized Open_vSwitch db with br0 (ports p1, p2 internal) and br1."""
    vsctl(any_vswitch_server, "init")
    vsctl(any_vswitch_server, "add-br", "br0")
    vsctl(any_vswitch_server, "add-br", "br1")
    vsctl(any_vswitch_server, "add-port", "br0", "p1")
    vsctl(
        any_vswitch_server, "add-port", "br0", "p2", "--", "set", "Interface", "p2", "type=internal"
    )
    return any_vswitch_server


def lines(srv: ServerProcess, *args: str) -> list[str]:
    return vsctl(srv, *args).stdout.splitlines()


def test_init_creates_root_row(any_vswitch_server: ServerProcess) -> None:
    srv = any_vswitch_server
    assert dump_json(srv.unix, "Open_vSwitch", "Open_vSwitch", "bridges")[0]["data"] == []
    vsctl(srv, "init")
    vsctl(srv, "init")  # idempotent
    assert dump_json(srv.unix, "Open_vSwitch", "Open_vSwitch", "bridges", "cur_cfg")[0]["data"] == [
        [["set", []], 0]
    ]
    assert vsctl(srv, "list-br").stdout == ""


def test_bridges_and_ports(vs: ServerProcess) -> None:
    assert lines(vs, "list-br") == ["br0", "br1"]
    assert vsctl(vs, "br-exists", "br0").returncode == 0
    assert vsctl(vs, "br-exists", "nope", check=False).returncode == 2
    assert lines(vs, "list-ports", "br0") == ["p1", "p2"]
    assert lines(vs, "list-ports", "br1") == []
    assert lines(vs, "list-ifaces", "br0") == ["p1", "p2"]
    assert lines(vs, "port-to-br", "p1") == ["br0"]
    assert lines(vs, "iface-to-br", "p2") == ["br0"]

    vsctl(vs, "del-port", "br0", "p2")
    assert lines(vs, "list-ports", "br0") == ["p1"]
    vsctl(vs, "add-port", "br1", "p3")
    vsctl(vs, "del-br", "br0")
    assert lines(vs, "list-br") == ["br1"]
    assert lines(vs, "list-ports", "br1") == ["p3"]
    # Deleting the bridge removed its ports and interfaces (garbage collection of
    # unreferenced non-root rows) on the server.
    names = {r[0] for r in dump_json(vs.unix, "Open_vSwitch", "Port", "name")[0]["data"]}
    assert names == {"br1", "p3"}
    ifaces = {r[0] for r in dump_json(vs.unix, "Open_vSwitch", "Interface", "name")[0]["data"]}
    assert ifaces == {"br1", "p3"}


def test_may_exist_if_exists_and_errors(vs: ServerProcess) -> None:
    p = vsctl(vs, "add-br", "br0", check=False)
    assert (p.returncode, p.stderr) == (
        1,
        "ovs-vsctl: cannot create a bridge named br0 because a bridge named br0 already exists\n",
    )
    vsctl(vs, "--may-exist", "add-br", "br0")
    p = vsctl(vs, "add-port", "br1", "p1", check=False)
    assert (p.returncode, p.stderr) == (
        1,
        "ovs-vsctl: cannot create a port named p1 because "
        "a port named p1 already exists on bridge br0\n",
    )
    vsctl(vs, "--may-exist", "add-port", "br0", "p1")

    vsctl(vs, "del-br", "br1")
    p = vsctl(vs, "del-br", "br1", check=False)
    assert (p.returncode, p.stderr) == (1, "ovs-vsctl: no bridge named br1\n")
    vsctl(vs, "--if-exists", "del-br", "br1")
    vsctl(vs, "del-port", "br0", "p2")
    p = vsctl(vs, "del-port", "br0", "p2", check=False)
    assert (p.returncode, p.stderr) == (1, "ovs-vsctl: no port named p2\n")
    vsctl(vs, "--if-exists", "del-port", "br0", "p2")
    assert lines(vs, "list-br") == ["br0"]
    assert lines(vs, "list-ports", "br0") == ["p1"]

    p = vsctl(vs, "set", "Port", "p1", "tag=5000", check=False)
    assert p.returncode == 1
    assert "constraint violation: 5000 is not in the valid range 0 to 4095 (inclusive)" in p.stderr
    p = vsctl(vs, "list", "Bridge", "nope", check=False)
    assert (p.returncode, p.stderr) == (1, 'ovs-vsctl: no row "nope" in table Bridge\n')


def test_set_get_clear_add_remove(vs: ServerProcess) -> None:
    vsctl(vs, "set", "Bridge", "br0", "stp_enable=true", 'other_config:hwaddr="00:11:22:33:44:55"')
    assert lines(vs, "get", "Bridge", "br0", "stp_enable", "other_config:hwaddr", "name") == [
        "true",
        '"00:11:22:33:44:55"',
        "br0",
    ]
    p = vsctl(vs, "get", "Bridge", "br0", "other_config:nope", check=False)
    assert (p.returncode, p.stderr) == (
        1,
        'ovs-vsctl: no key "nope" in Bridge record "br0" column other_config\n',
    )
    assert vsctl(vs, "--if-exists", "get", "Bridge", "br0", "other_config:nope").stdout == "\n"

    vsctl(vs, "add", "Bridge", "br0", "protocols", "OpenFlow13", "OpenFlow14")
    assert lines(vs, "get", "Bridge", "br0", "protocols") == ["[OpenFlow13, OpenFlow14]"]
    vsctl(vs, "remove", "Bridge", "br0", "protocols", "OpenFlow13")
    assert lines(vs, "get", "Bridge", "br0", "protocols") == ["[OpenFlow14]"]
    vsctl(vs, "clear", "Bridge", "br0", "protocols")
    assert lines(vs, "get", "Bridge", "br0", "protocols") == ["[]"]

    vsctl(vs, "set", "Port", "p1", "tag=10")
    assert lines(vs, "get", "Port", "p1", "tag") == ["10"]
    vsctl(vs, "set", "Open_vSwitch", ".", "external_ids:system-id=abc", "external_ids:x=1")
    assert lines(vs, "get", "Open_vSwitch", ".", "external_ids") == ['{system-id=abc, x="1"}']
    vsctl(vs, "remove", "Open_vSwitch", ".", "external_ids", "system-id")
    assert lines(vs, "get", "Open_vSwitch", ".", "external_ids") == ['{x="1"}']
    vsctl(vs, "clear", "Port", "p1", "tag")
    assert lines(vs, "get", "Port", "p1", "tag") == ["[]"]


def test_list_and_find(vs: ServerProcess) -> None:
    vsctl(vs, "set", "Port", "p1", "tag=10")
    assert parse_records(vsctl(vs, "--columns=name,tag", "find", "Port", "tag=10").stdout) == [
        {"name": "p1", "tag": "10"}
    ]
    got = vsctl(vs, "--bare", "--columns=name", "find", "Interface", "type=internal").stdout
    assert sorted(got.split()) == ["br0", "br1", "p2"]
    assert parse_records(
        vsctl(vs, "--columns=name,type", "list", "Interface").stdout
    ) == parse_records(
        "name : br0\ntype : internal\n\nname : br1\ntype : internal\n\n"
        'name : p1\ntype : ""\n\nname : p2\ntype : internal\n'
    )
    recs = parse_records(vsctl(vs, "list", "Bridge", "br0").stdout)
    assert len(recs) == 1 and recs[0]["name"] == "br0"
    assert len(recs[0]["ports"].strip("[]").split(", ")) == 3
    assert vsctl(vs, "find", "Port", "tag=99").stdout == ""


def test_create_destroy_and_references(vs: ServerProcess) -> None:
    out = vsctl(
        vs, "--", "--id=@q", "create", "QoS", "type=linux-htb", "--", "set", "Port", "p1", "qos=@q"
    ).stdout
    qos_uuid = out.strip()
    assert len(qos_uuid) == 36
    assert lines(vs, "get", "Port", "p1", "qos") == [qos_uuid]
    assert parse_records(vsctl(vs, "--columns=_uuid,type", "list", "QoS").stdout) == [
        {"_uuid": qos_uuid, "type": "linux-htb"}
    ]
    # A referenced row cannot be destroyed out from under its referrer...
    p = vsctl(vs, "destroy", "QoS", qos_uuid, check=False)
    assert p.returncode == 1 and "referential integrity violation" in p.stderr
    vsctl(vs, "clear", "Port", "p1", "qos", "--", "destroy", "QoS", qos_uuid)
    assert vsctl(vs, "list", "QoS").stdout == ""
    p = vsctl(vs, "destroy", "QoS", "nope", check=False)
    assert (p.returncode, p.stderr) == (1, 'ovs-vsctl: no row "nope" in table QoS\n')


def test_fake_bridge(vs: ServerProcess) -> None:
    vsctl(vs, "add-br", "brf", "br0", "10")
    assert lines(vs, "list-br") == ["br0", "br1", "brf"]
    assert lines(vs, "br-to-parent", "brf") == ["br0"]
    assert lines(vs, "br-to-vlan", "brf") == ["10"]
    assert lines(vs, "get", "Port", "brf", "tag") == ["10"]


def test_show(vs: ServerProcess) -> None:
    vsctl(vs, "set", "Port", "p1", "tag=10")
    out = vsctl(vs, "show").stdout
    uuid_line, rest = out.split("\n", 1)
    assert len(uuid_line) == 36
    assert show_tree(rest) == show_tree("""\
    Bridge br0
        Port p1
            tag: 10
            Interface p1
        Port br0
            Interface br0
                type: internal
        Port p2
            Interface p2
                type: internal
    Bridge br1
        Port br1
            Interface br1
                type: internal
""")


def test_same_as_real(server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    """A longer session run on both servers: every command's status, stderr and
    (order-normalized) stdout match, and so does the final database."""
    pair = server_pair(VSWITCH_SCHEMA)
    steps: list[list[str]] = [
        ["init"],
        ["add-br", "br0"],
        ["add-br", "br0"],
        ["--may-exist", "add-br", "br0"],
        ["add-br", "br1", "--", "set", "Bridge", "br1", "fail_mode=secure"],
        ["add-port", "br0", "p1", "tag=5"],
        ["add-bond", "br0", "bond0", "e0", "e1"],
        ["add-port", "br1", "p1"],
        ["list-br"],
        ["list-ports", "br0"],
        ["list-ifaces", "br0"],
        ["set", "Interface", "e0", "type=bogus"],
        ["set", "Interface", "e0", "options:remote_ip=10.0.0.1"],
        ["get", "Interface", "e0", "options"],
        ["--columns=name,tag", "find", "Port", "tag=5"],
        ["set-controller", "br0", "tcp:127.0.0.1:6653"],
        ["get-controller", "br0"],
        ["set-fail-mode", "br0", "standalone"],
        ["get-fail-mode", "br0"],
        ["del-controller", "br0"],
        ["get-controller", "br0"],
        [
            "set",
            "Bridge",
            "br0",
            "other_config:a=1",
            "--",
            "remove",
            "Bridge",
            "br0",
            "other_config",
            "a",
        ],
        ["get", "Bridge", "br0", "other_config"],
        ["del-port", "bond0"],
        ["del-port", "nope"],
        ["--if-exists", "del-port", "nope"],
        ["show"],
        ["del-br", "br1"],
        ["emer-reset"],
        ["list-br"],
        ["show"],
    ]
    for step in steps:
        outs = {}
        for kind, srv in pair.items():
            p = vsctl(srv, *step, check=False)
            outs[kind] = (p.returncode, p.stderr, _normalize(step, p.stdout))
        assert outs["ours"] == outs["real"], step
    dumps = {kind: dump_modulo_uuids(srv, "Open_vSwitch") for kind, srv in pair.items()}
    assert dumps["ours"] == dumps["real"]


def _normalize(step: list[str], out: str) -> object:
    if "show" in step:
        return show_tree(out)
    if any(s in step for s in ("find", "list")):
        return parse_records(out)
    return out


def test_db_is_readable_by_client_after_vsctl(vs: ServerProcess) -> None:
    """The rows ovs-vsctl wrote are what a plain client reads back."""
    bridges = dump_json(vs.unix, "Open_vSwitch", "Bridge", "name", "ports")[0]["data"]
    ports = {
        r[0][1]: r[1]
        for r in dump_json(vs.unix, "Open_vSwitch", "Port", "_uuid", "name")[0]["data"]
    }
    by_name = {name: refs for name, refs in bridges}
    refs = by_name["br0"]
    assert refs[0] == "set"
    assert sorted(ports[u] for _, u in refs[1]) == ["br0", "p1", "p2"]
    assert client("list-dbs", vs.unix).stdout == "Open_vSwitch\n_Server\n"


@pytest.fixture
def vswitch_with_managers(kind: str, tmp_path: Any) -> Any:
    """The Open_vSwitch db served the way the OVS init scripts start ovsdb-server."""
    db = create_db(kind, tmp_path / "conf.db", VSWITCH_SCHEMA)
    srv = ServerProcess(
        kind,
        tmp_path,
        [db],
        name="conf",
        extra=[
            "--remote=db:Open_vSwitch,Open_vSwitch,manager_options",
            "--private-key=db:Open_vSwitch,SSL,private_key",
            "--certificate=db:Open_vSwitch,SSL,certificate",
            "--bootstrap-ca-cert=db:Open_vSwitch,SSL,ca_cert",
        ],
    ).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_set_manager(vswitch_with_managers: ServerProcess) -> None:
    srv = vswitch_with_managers
    vsctl(srv, "init")
    port = free_port()
    vsctl(srv, "set-manager", f"ptcp:{port}:127.0.0.1")
    assert vsctl(srv, "get-manager").stdout == f"ptcp:{port}:127.0.0.1\n"
    remote = f"tcp:127.0.0.1:{port}"
    assert wait_until(lambda: client("list-dbs", remote, check=False).returncode == 0)
    vsctl(srv, "add-br", "br0")
    p = run_vsctl(remote, "list-br")
    assert p == "br0\n"
    vsctl(srv, "del-manager")
    assert wait_until(lambda: client("list-dbs", remote, check=False).returncode != 0)


def run_vsctl(remote: str, *args: str) -> str:
    return str(run(["ovs-vsctl", f"--db={remote}", "--no-wait", *args]).stdout)
