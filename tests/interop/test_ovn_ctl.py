"""The real `ovn-nbctl` / `ovn-sbctl` against our server (and the real one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import (
    client,
    dump_modulo_uuids,
    nbctl,
    parse_records,
    sbctl,
    select,
    show_tree,
    strip_uuids,
    wait_until,
)

from procs import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db, free_port, require, run

pytestmark = pytest.mark.interop


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovn-nbctl", "ovn-sbctl", "ovsdb-client")


def lines(p_stdout: str) -> list[str]:
    return p_stdout.splitlines()


def names(srv: ServerProcess, *args: str) -> list[str]:
    """`ls-list`/`lr-list`-style output ("UUID (name)") as the sorted names."""
    return sorted(line.split(" (", 1)[1].rstrip(")") for line in lines(nbctl(srv, *args).stdout))


# ---------------------------------------------------------------------------------------
# ovn-nbctl


def test_nb_init_and_switches(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "init")
    assert len(select(srv, "NB_Global", ["nb_cfg"])) == 1
    nbctl(srv, "ls-add", "sw0")
    nbctl(srv, "ls-add", "sw1")
    assert names(srv, "ls-list") == ["sw0", "sw1"]
    p = nbctl(srv, "ls-add", "sw0", check=False)
    assert (p.returncode, p.stderr) == (
        1,
        "ovn-nbctl: sw0: a switch with this name already exists\n",
    )
    nbctl(srv, "--may-exist", "ls-add", "sw0")
    nbctl(srv, "ls-del", "sw1")
    p = nbctl(srv, "ls-del", "sw1", check=False)
    assert (p.returncode, p.stderr) == (1, "ovn-nbctl: sw1: switch name not found\n")
    nbctl(srv, "--if-exists", "ls-del", "sw1")
    assert names(srv, "ls-list") == ["sw0"]
    nbctl(srv, "--wait=none", "ls-add", "sw2")
    assert names(srv, "ls-list") == ["sw0", "sw2"]


def test_nb_ports(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    nbctl(srv, "lsp-add", "sw0", "p1")
    nbctl(srv, "lsp-add", "sw0", "p2")
    p = nbctl(srv, "lsp-add", "sw0", "p1", check=False)
    assert (p.returncode, p.stderr) == (1, "ovn-nbctl: p1: a port with this name already exists\n")
    nbctl(srv, "lsp-set-addresses", "p1", "00:00:00:00:00:01 10.0.0.1", "unknown")
    assert lines(nbctl(srv, "lsp-get-addresses", "p1").stdout) == [
        "00:00:00:00:00:01 10.0.0.1",
        "unknown",
    ]
    nbctl(srv, "lsp-set-port-security", "p1", "00:00:00:00:00:01 10.0.0.1")
    assert lines(nbctl(srv, "lsp-get-port-security", "p1").stdout) == ["00:00:00:00:00:01 10.0.0.1"]
    nbctl(srv, "lsp-set-type", "p2", "router", "--", "lsp-set-options", "p2", "router-port=lrp0")
    assert nbctl(srv, "lsp-get-type", "p2").stdout == "router\n"
    assert nbctl(srv, "lsp-get-options", "p2").stdout == "router-port=lrp0\n"
    assert names(srv, "lsp-list", "sw0") == ["p1", "p2"]
    assert nbctl(srv, "lsp-get-ls", "p1").stdout.endswith("(sw0)\n")

    nbctl(srv, "lsp-del", "p2")
    p = nbctl(srv, "lsp-del", "p2", check=False)
    assert (p.returncode, p.stderr) == (1, "ovn-nbctl: p2: port name not found\n")
    nbctl(srv, "--if-exists", "lsp-del", "p2")
    assert names(srv, "lsp-list", "sw0") == ["p1"]
    # The port row is gone from the database, not just unlinked.
    assert select(srv, "Logical_Switch_Port", ["name"]) == [{"name": "p1"}]
    nbctl(srv, "ls-del", "sw0")
    assert select(srv, "Logical_Switch_Port", ["name"]) == []


def test_nb_routers(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "lr-add", "lr0")
    nbctl(srv, "lrp-add", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.254/24")
    nbctl(srv, "lrp-add", "lr0", "lrp1", "00:00:00:00:ff:02", "192.168.0.1/24", "fd00::1/64")
    assert names(srv, "lr-list") == ["lr0"]
    assert names(srv, "lrp-list", "lr0") == ["lrp0", "lrp1"]
    nbctl(srv, "lr-route-add", "lr0", "0.0.0.0/0", "192.168.0.254")
    out = nbctl(srv, "lr-route-list", "lr0").stdout
    assert "0.0.0.0/0" in out and "192.168.0.254" in out
    nbctl(srv, "lr-nat-add", "lr0", "snat", "192.168.0.1", "10.0.0.0/24")
    out = lines(nbctl(srv, "lr-nat-list", "lr0").stdout)
    assert out[1].split() == ["snat", "192.168.0.1", "10.0.0.0/24"]
    rows = select(srv, "Logical_Router_Port", ["name", "mac", "networks"])
    assert rows == [
        {"name": "lrp0", "mac": "00:00:00:00:ff:01", "networks": "10.0.0.254/24"},
        {
            "name": "lrp1",
            "mac": "00:00:00:00:ff:02",
            "networks": ["set", ["192.168.0.1/24", "fd00::1/64"]],
        },
    ]
    nbctl(srv, "lrp-del", "lrp1")
    assert names(srv, "lrp-list", "lr0") == ["lrp0"]
    nbctl(srv, "lr-del", "lr0")
    assert nbctl(srv, "lr-list").stdout == ""
    assert select(srv, "Logical_Router_Port", ["name"]) == []
    assert select(srv, "NAT", ["type"]) == []


def test_nb_acls(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    nbctl(srv, "acl-add", "sw0", "from-lport", "1001", "ip4 && tcp.dst == 80", "allow-related")
    nbctl(srv, "acl-add", "sw0", "to-lport", "1000", 'outport == "p1"', "drop")
    assert lines(nbctl(srv, "acl-list", "sw0").stdout) == [
        "from-lport  1001 (ip4 && tcp.dst == 80) allow-related",
        '  to-lport  1000 (outport == "p1") drop',
    ]
    p = nbctl(srv, "acl-add", "sw0", "to-lport", "40000", "1", "drop", check=False)
    assert (p.returncode, p.stderr) == (1, "ovn-nbctl: 40000: priority must in range 0...32767\n")
    nbctl(srv, "acl-del", "sw0", "to-lport", "1000", 'outport == "p1"')
    assert lines(nbctl(srv, "acl-list", "sw0").stdout) == [
        "from-lport  1001 (ip4 && tcp.dst == 80) allow-related"
    ]
    nbctl(srv, "acl-del", "sw0")
    assert nbctl(srv, "acl-list", "sw0").stdout == ""
    assert select(srv, "ACL", ["priority"]) == []


def test_nb_load_balancers(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    nbctl(srv, "lr-add", "lr0")
    nbctl(srv, "lb-add", "lb0", "30.0.0.1:80", "10.0.0.1:8080,10.0.0.2:8080", "tcp")
    nbctl(srv, "lb-add", "lb0", "30.0.0.2", "10.0.0.3")
    out = lines(nbctl(srv, "lb-list").stdout)
    assert out[0].split() == ["UUID", "LB", "PROTO", "VIP", "IPs"]
    assert out[1].split()[1:] == ["lb0", "tcp", "30.0.0.1:80", "10.0.0.1:8080,10.0.0.2:8080"]
    assert out[2].split() == ["30.0.0.2", "10.0.0.3"]  # continuation line of lb0
    p = nbctl(srv, "lb-add", "lb0", "30.0.0.1:80", "10.0.0.9:80", check=False)
    assert (p.returncode, p.stderr) == (
        1,
        "ovn-nbctl: lb0: a load balancer with this vip (30.0.0.1:80) already exists\n",
    )
    nbctl(srv, "--may-exist", "lb-add", "lb0", "30.0.0.1:80", "10.0.0.9:80")
    nbctl(srv, "ls-lb-add", "sw0", "lb0")
    nbctl(srv, "lr-lb-add", "lr0", "lb0")
    assert lines(nbctl(srv, "ls-lb-list", "sw0").stdout)[1].split()[1] == "lb0"
    assert lines(nbctl(srv, "lr-lb-list", "lr0").stdout)[1].split()[1] == "lb0"
    rows = select(srv, "Load_Balancer", ["name", "vips", "protocol"])
    assert rows == [
        {
            "name": "lb0",
            "protocol": "tcp",
            "vips": ["map", [["30.0.0.1:80", "10.0.0.9:80"], ["30.0.0.2", "10.0.0.3"]]],
        }
    ]
    nbctl(srv, "ls-lb-del", "sw0", "lb0")
    assert nbctl(srv, "ls-lb-list", "sw0").stdout == ""
    nbctl(srv, "lb-del", "lb0")
    assert nbctl(srv, "lb-list").stdout == ""
    assert select(srv, "Logical_Router", ["load_balancer"]) == [
        {"load_balancer": ["set", []]}
    ]  # weak reference cleared


def test_nb_generic_db_commands(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    nbctl(srv, "set", "Logical_Switch", "sw0", "other_config:subnet=10.1.0.0/24")
    assert (
        nbctl(srv, "get", "Logical_Switch", "sw0", "other_config:subnet").stdout
        == '"10.1.0.0/24"\n'
    )
    assert (
        nbctl(
            srv,
            "--bare",
            "--columns=name",
            "find",
            "Logical_Switch",
            'other_config:subnet="10.1.0.0/24"',
        ).stdout
        == "sw0\n"
    )
    nbctl(srv, "remove", "Logical_Switch", "sw0", "other_config", "subnet")
    recs = parse_records(nbctl(srv, "--columns=name,other_config", "list", "Logical_Switch").stdout)
    assert recs == [{"name": "sw0", "other_config": "{}"}]
    uuid = nbctl(
        srv, "create", "Address_Set", "name=as1", 'addresses="10.0.0.1","10.0.0.2"'
    ).stdout.strip()
    assert (
        nbctl(srv, "get", "Address_Set", uuid, "addresses").stdout == '["10.0.0.1", "10.0.0.2"]\n'
    )
    nbctl(srv, "destroy", "Address_Set", "as1")
    assert select(srv, "Address_Set", ["name"]) == []


def test_nb_batch_of_100_switches(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    args: list[str] = []
    for i in range(100):
        args += ["--", "ls-add", f"sw{i:03d}", "--", "lsp-add", f"sw{i:03d}", f"p{i:03d}"]
    nbctl(srv, *args[1:])
    assert names(srv, "ls-list") == [f"sw{i:03d}" for i in range(100)]
    assert len(select(srv, "Logical_Switch_Port", ["name"])) == 100
    # One transaction: a failing command in a batch commits nothing.
    p = nbctl(srv, "ls-add", "new", "--", "ls-add", "sw000", check=False)
    assert p.returncode == 1
    assert "new" not in names(srv, "ls-list")
    args = []
    for i in range(100):
        args += ["--", "ls-del", f"sw{i:03d}"]
    nbctl(srv, *args[1:])
    assert nbctl(srv, "ls-list").stdout == ""
    assert select(srv, "Logical_Switch_Port", ["name"]) == []


def _build_topology(srv: ServerProcess) -> None:
    nbctl(srv, "ls-add", "sw0", "--", "ls-add", "sw1")
    nbctl(
        srv, "lsp-add", "sw0", "p1", "--", "lsp-set-addresses", "p1", "00:00:00:00:00:01 10.0.0.1"
    )
    nbctl(srv, "lsp-add", "sw0", "p2", "--", "lsp-set-addresses", "p2", "dynamic")
    nbctl(
        srv,
        "lsp-add",
        "sw0",
        "sw0-lr0",
        "--",
        "lsp-set-type",
        "sw0-lr0",
        "router",
        "--",
        "lsp-set-addresses",
        "sw0-lr0",
        "router",
        "--",
        "lsp-set-options",
        "sw0-lr0",
        "router-port=lrp0",
    )
    nbctl(srv, "lr-add", "lr0")
    nbctl(srv, "lrp-add", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.254/24")
    nbctl(srv, "lrp-add", "lr0", "lrp1", "00:00:00:00:ff:02", "192.168.0.1/24", "fd00::1/64")
    nbctl(srv, "lr-nat-add", "lr0", "snat", "192.168.0.1", "10.0.0.0/24")
    nbctl(srv, "lr-route-add", "lr0", "0.0.0.0/0", "192.168.0.254")
    nbctl(srv, "acl-add", "sw0", "from-lport", "1001", "ip4", "allow-related")
    nbctl(srv, "lb-add", "lb0", "30.0.0.1:80", "10.0.0.1:8080", "tcp")
    nbctl(srv, "ls-lb-add", "sw0", "lb0")


def test_nb_show_same_as_real(server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    pair = server_pair(NB_SCHEMA)
    shows = {}
    for kind, srv in pair.items():
        _build_topology(srv)
        shows[kind] = (
            show_tree(nbctl(srv, "show").stdout),
            show_tree(nbctl(srv, "show", "sw0").stdout),
            show_tree(nbctl(srv, "show", "lr0").stdout),
            nbctl(srv, "acl-list", "sw0").stdout,
            nbctl(srv, "lr-route-list", "lr0").stdout,
            [x.split()[1:] for x in lines(nbctl(srv, "lb-list").stdout)],
        )
        nbctl(srv, "lsp-del", "p2", "--", "lr-nat-del", "lr0")
        shows[kind] += (show_tree(nbctl(srv, "show").stdout),)
    assert shows["ours"] == shows["real"]
    full = shows["ours"][0]
    assert [line for line, _ in full] == [
        "router <uuid> (lr0)",
        "switch <uuid> (sw0)",
        "switch <uuid> (sw1)",
    ]


def test_nb_show_content(nb_server: ServerProcess) -> None:
    _build_topology(nb_server)
    out = nbctl(nb_server, "show", "sw0").stdout
    assert show_tree(out) == show_tree("""\
switch 00000000-0000-0000-0000-000000000000 (sw0)
    port p1
        addresses: ["00:00:00:00:00:01 10.0.0.1"]
    port p2
        addresses: ["dynamic"]
    port sw0-lr0
        type: router
        router-port: lrp0
""")


def test_nb_same_as_real(server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    """Every command's status and stderr match the real server's, and the databases
    end up equal modulo UUIDs."""
    pair = server_pair(NB_SCHEMA)
    steps = [
        ["init"],
        ["ls-add", "sw0"],
        ["ls-add", "sw0"],
        ["lsp-add", "sw0", "p1"],
        ["lsp-add", "nope", "p1"],
        ["lsp-set-addresses", "p1", "bogus"],
        ["lsp-set-addresses", "p1", "00:00:00:00:00:01"],
        ["lsp-set-enabled", "p1", "disabled"],
        ["lsp-get-enabled", "p1"],
        ["lsp-set-options", "p1", "a=b"],
        ["lsp-get-up", "p1"],
        ["lsp-set-dhcpv4-options", "p1", "nope"],
        ["ls-add", "sw1", "--", "set", "Logical_Switch", "sw1", "other_config:mcast_snoop=true"],
        ["lr-add", "lr0"],
        ["lrp-add", "lr0", "lrp0", "bad-mac", "10.0.0.1/24"],
        ["lrp-add", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.1/24"],
        ["lrp-set-enabled", "lrp0", "disabled"],
        ["lrp-get-enabled", "lrp0"],
        ["lrp-set-gateway-chassis", "lrp0", "ch1", "10"],
        ["lrp-get-gateway-chassis", "lrp0"],
        ["lr-policy-add", "lr0", "100", "ip4.src == 10.0.0.0/24", "drop"],
        ["lr-policy-list", "lr0"],
        ["pg-add", "pg0", "p1"],
        ["acl-add", "pg0", "to-lport", "100", "outport == @pg0", "drop"],
        ["--type=port-group", "acl-list", "pg0"],
        ["meter-add", "m0", "drop", "100", "kbps"],
        ["meter-list"],
        ["ha-chassis-group-add", "hg0"],
        ["ha-chassis-group-add-chassis", "hg0", "ch1", "10"],
        ["ha-chassis-group-list"],
        ["dhcp-options-create", "10.0.0.0/24"],
        ["--if-exists", "ls-del", "nope"],
        ["ls-del", "sw1"],
        ["lr-del", "nope"],
        ["pg-del", "pg0"],
        ["sync"],
    ]
    for step in steps:
        outs = {}
        for kind, srv in pair.items():
            p = nbctl(srv, *step, check=False)
            outs[kind] = (p.returncode, p.stderr, sorted(strip_uuids(p.stdout).splitlines()))
        assert outs["ours"] == outs["real"], step
    dumps = {kind: dump_modulo_uuids(srv, "OVN_Northbound") for kind, srv in pair.items()}
    assert dumps["ours"] == dumps["real"]


def test_sb_chassis(any_sb_server: ServerProcess) -> None:
    srv = any_sb_server
    sbctl(srv, "init")
    sbctl(srv, "chassis-add", "ch0", "geneve", "192.168.0.10")
    p = sbctl(srv, "chassis-add", "ch0", "geneve", "192.168.0.10", check=False)
    assert (p.returncode, p.stderr) == (
        1,
        "ovn-sbctl: cannot create a chassis named ch0 because a chassis named ch0 already exists\n",
    )
    sbctl(srv, "--may-exist", "chassis-add", "ch0", "geneve", "192.168.0.10")
    sbctl(srv, "chassis-add", "ch1", "vxlan,geneve", "192.168.0.11")
    assert show_tree(sbctl(srv, "show").stdout) == show_tree("""\
Chassis ch0
    Encap geneve
        ip: "192.168.0.10"
        options: {csum="true"}
Chassis ch1
    Encap geneve
        ip: "192.168.0.11"
        options: {csum="true"}
    Encap vxlan
        ip: "192.168.0.11"
        options: {csum="true"}
""")
    assert sorted(
        sbctl(srv, "--bare", "--columns=type", "find", "Encap", "chassis_name=ch1").stdout.split()
    ) == ["geneve", "vxlan"]

    sbctl(srv, "chassis-del", "ch1")
    p = sbctl(srv, "chassis-del", "ch1", check=False)
    assert (p.returncode, p.stderr) == (1, "ovn-sbctl: no chassis named ch1\n")
    sbctl(srv, "--if-exists", "chassis-del", "ch1")
    # The chassis' encaps went with it.
    assert select(srv, "Encap", ["chassis_name", "type"], db="OVN_Southbound") == [
        {"chassis_name": "ch0", "type": "geneve"}
    ]


def test_sb_generic_db_commands(any_sb_server: ServerProcess) -> None:
    srv = any_sb_server
    sbctl(srv, "init")
    sbctl(srv, "chassis-add", "ch0", "geneve", "192.168.0.10")
    sbctl(srv, "set", "Chassis", "ch0", "hostname=host0", "external_ids:foo=bar")
    assert (
        sbctl(srv, "get", "Chassis", "ch0", "hostname", "external_ids:foo").stdout == "host0\nbar\n"
    )
    assert parse_records(
        sbctl(srv, "--columns=name,hostname", "find", "Chassis", "hostname=host0").stdout
    ) == [{"name": "ch0", "hostname": "host0"}]
    assert sbctl(srv, "find", "Chassis", "hostname=other").stdout == ""
    recs = parse_records(sbctl(srv, "list", "Encap").stdout)
    assert len(recs) == 1
    assert {k: recs[0][k] for k in ("chassis_name", "ip", "type")} == {
        "chassis_name": "ch0",
        "ip": '"192.168.0.10"',
        "type": "geneve",
    }
    assert show_tree(sbctl(srv, "show").stdout) == show_tree("""\
Chassis ch0
    hostname: host0
    Encap geneve
        ip: "192.168.0.10"
        options: {csum="true"}
""")
    p = sbctl(srv, "lsp-bind", "p1", "ch0", check=False)
    assert (p.returncode, p.stderr) == (1, "ovn-sbctl: no port named p1\n")
    assert parse_records(sbctl(srv, "--columns=nb_cfg", "list", "SB_Global").stdout) == [
        {"nb_cfg": "0"}
    ]


def test_sb_same_as_real(server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    pair = server_pair(SB_SCHEMA)
    steps = [
        ["init"],
        ["chassis-add", "ch0", "geneve", "192.168.0.10"],
        ["chassis-add", "ch1", "stt,vxlan", "192.168.0.11"],
        ["create", "Datapath_Binding", "tunnel_key=1", "external_ids:name=sw0"],
        ["show"],
        ["--columns=type,ip", "list", "Encap"],
        ["set", "Chassis", "ch1", "other_config:x=y"],
        ["list", "Chassis", "ch1"],
        ["chassis-del", "ch0"],
        ["chassis-del", "ch0"],
        ["show"],
    ]
    for step in steps:
        outs = {}
        for kind, srv in pair.items():
            if step[0] == "create":
                p = sbctl(srv, *step, check=False)
                out: object = len(p.stdout.strip())
                outs[kind] = (p.returncode, p.stderr, out)
                continue
            p = sbctl(srv, *step, check=False)
            norm = (
                show_tree(p.stdout)
                if step == ["show"]
                else (parse_records(strip_uuids(p.stdout)) if "list" in step else p.stdout)
            )
            outs[kind] = (p.returncode, p.stderr, norm)
        assert outs["ours"] == outs["real"], step
    dumps = {kind: dump_modulo_uuids(srv, "OVN_Southbound") for kind, srv in pair.items()}
    assert dumps["ours"] == dumps["real"]


# ---------------------------------------------------------------------------------------
# Remotes configured in the database, the way ovn-ctl starts the NB server.

OVN_CTL_OPTIONS = [
    "--remote=db:OVN_Northbound,NB_Global,connections",
    "--private-key=db:OVN_Northbound,SSL,private_key",
    "--certificate=db:OVN_Northbound,SSL,certificate",
    "--ca-cert=db:OVN_Northbound,SSL,ca_cert",
    "--ssl-protocols=db:OVN_Northbound,SSL,ssl_protocols",
    "--ssl-ciphers=db:OVN_Northbound,SSL,ssl_ciphers",
]


@pytest.fixture
def nb_with_db_remotes(kind: str, tmp_path: Any) -> Any:
    db = create_db(kind, tmp_path / "nb.db", NB_SCHEMA)
    srv = ServerProcess(kind, tmp_path, [db], name="nb", extra=OVN_CTL_OPTIONS).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_set_connection(nb_with_db_remotes: ServerProcess) -> None:
    srv = nb_with_db_remotes
    port = free_port()
    remote = f"tcp:127.0.0.1:{port}"
    nbctl(srv, "set-connection", f"ptcp:{port}:127.0.0.1")
    assert nbctl(srv, "get-connection").stdout == f"ptcp:{port}:127.0.0.1\n"
    assert wait_until(lambda: client("list-dbs", remote, check=False).returncode == 0)
    assert client("list-dbs", remote).stdout == "OVN_Northbound\n_Server\n"
    assert srv.appctl("ovsdb-server/list-remotes").stdout == (
        f"db:OVN_Northbound,NB_Global,connections\npunix:{srv.sock}\n"
    )
    nbctl(srv, "ls-add", "sw0")
    assert run_ctl_tcp(remote, "ls-list").endswith("(sw0)\n")

    # A second target replaces the first.
    port2 = free_port()
    nbctl(srv, "set-connection", f"ptcp:{port2}:127.0.0.1")
    assert wait_until(
        lambda: client("list-dbs", f"tcp:127.0.0.1:{port2}", check=False).returncode == 0
    )
    assert wait_until(lambda: client("list-dbs", remote, check=False).returncode != 0)
    nbctl(srv, "del-connection")
    assert nbctl(srv, "get-connection").stdout == ""
    assert wait_until(
        lambda: client("list-dbs", f"tcp:127.0.0.1:{port2}", check=False).returncode != 0
    )


def run_ctl_tcp(remote: str, *args: str) -> str:
    return str(run(["ovn-nbctl", f"--db={remote}", *args]).stdout)


def test_connection_status(
    nb_with_db_remotes: ServerProcess, request: pytest.FixtureRequest
) -> None:
    """The server reports each configured remote's state in Connection.status."""
    srv = nb_with_db_remotes
    port = free_port()
    nbctl(srv, "set-connection", f"ptcp:{port}:127.0.0.1")
    assert wait_until(
        lambda: client("list-dbs", f"tcp:127.0.0.1:{port}", check=False).returncode == 0
    )

    def status() -> str:
        return str(nbctl(srv, "get", "Connection", ".", "status").stdout)

    assert wait_until(lambda: f'bound_port="{port}"' in status(), timeout=5), status()
