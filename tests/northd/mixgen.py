"""The 100-switch corpus mix, written as a differential-harness script.

What it owns: the NB of `corpus/85_lf_hundred_switches.txt` (100 switches of 3 VIFs,
20 port groups spread over them with ACLs, 10 load balancers in 2 groups, a router
joining 10 switches, DHCPv4 on 20 of them), as `ovn-nbctl` command lines, and the
text of that script.

Rules kept here:
- Few lines, each many commands joined by `--`: each line is one NB transaction and
  one northd run, so the script stays fast for a northd that recomputes everything;
  the script renumbers Datapath_Binding and Port_Binding because 23.03 gives the rows
  created in one run their tunnel keys in UUID-hash order.
- No line names a row by UUID (`--id=@name` inside the line instead), so the lines
  can also be joined into one transaction (the cold-start benchmark loads them so).
- Pure and deterministic: the same text every time; regenerate the corpus files with
  `python tests/northd/mixgen.py > tests/northd/corpus/85_lf_hundred_switches.txt` and
  `python tests/northd/mixgen.py --churn > tests/northd/corpus/87_lf_hundred_churn.txt`
  (the mix, then one transaction per change to each kind of object).
"""

from __future__ import annotations

import shlex
import sys

SWITCHES = 100
VIFS = 3
PORT_GROUPS = 20
LBS = 10
ROUTED = 10  # switches sw0..sw9 get a port on router r0
DHCP = 20  # switches sw0..sw19 give DHCPv4 options to their first VIF
BATCH = 20  # switches per ls-add line

Command = list[str]


def sw(s: int) -> str:
    return f"sw{s}"


def vif(s: int, p: int) -> str:
    return f"sw{s}-vm{p}"


def vif_ip(s: int, p: int) -> str:
    return f"10.{s & 255}.{s >> 8}.{10 + p}"


def vif_mac(s: int, p: int) -> str:
    return f"00:00:{s >> 8:02x}:01:{s & 255:02x}:{p:02x}"


def group_of(s: int, p: int) -> int:
    """The port group of VIF `p` of switch `s`: each group gets 15 VIFs on 15 switches."""
    return (s * VIFS + p) % PORT_GROUPS


def switch_lines(n: int) -> list[list[Command]]:
    lines = []
    for start in range(0, n, BATCH):
        cmds: list[Command] = []
        for s in range(start, start + BATCH):
            cmds.append(["ls-add", sw(s)])
            for p in range(VIFS):
                cmds.append(["lsp-add", sw(s), vif(s, p)])
                cmds.append(["lsp-set-addresses", vif(s, p),
                             f"{vif_mac(s, p)} {vif_ip(s, p)}"])
        lines.append(cmds)
    return lines


def router_line() -> list[Command]:
    cmds: list[Command] = [["lr-add", "r0"]]
    for s in range(ROUTED):
        lrp, lsp = f"r0-{sw(s)}", f"{sw(s)}-r0"
        cmds += [["lrp-add", "r0", lrp, f"00:00:00:00:ff:{s:02x}", f"10.{s}.0.1/24"],
                 ["lsp-add", sw(s), lsp], ["lsp-set-type", lsp, "router"],
                 ["lsp-set-addresses", lsp, "router"],
                 ["lsp-set-options", lsp, f"router-port={lrp}"]]
    return cmds


def dhcp_line() -> list[Command]:
    cmds: list[Command] = []
    for s in range(DHCP):
        ref = f"@d{s}"
        cmds += [[f"--id={ref}", "create", "DHCP_Options", f"cidr=10.{s}.0.0/24",
                  f"options:router=10.{s}.0.1", f"options:server_id=10.{s}.0.1",
                  "options:server_mac=00:00:00:00:ff:01", "options:lease_time=3600"],
                 ["set", "Logical_Switch_Port", vif(s, 0), f"dhcpv4_options={ref}"]]
    return cmds


def port_group_line(n: int) -> list[Command]:
    members: dict[int, list[str]] = {g: [] for g in range(PORT_GROUPS)}
    for s in range(n):
        for p in range(VIFS):
            members[group_of(s, p)].append(vif(s, p))
    cmds: list[Command] = [["create", "Address_Set", "name=outside",
                            'addresses="192.168.0.0/16","172.16.0.1"']]
    for g in range(PORT_GROUPS):
        cmds.append(["pg-add", f"pg{g}", *members[g]])
    return cmds


def acl_line() -> list[Command]:
    """Per group: stateful from-lport, a to-lport allow from the next group's `_ip4`
    set, one from an address set, and a default drop; every fifth group stateless."""
    cmds: list[Command] = []
    for g in range(PORT_GROUPS):
        pg, nxt = f"pg{g}", f"pg{(g + 1) % PORT_GROUPS}"
        allow = "allow-stateless" if g % 5 == 4 else "allow-related"
        acl = ["--type=port-group", "acl-add", pg]
        cmds += [[*acl, "from-lport", "1001", f"inport == @{pg} && ip4", allow],
                 [*acl, "to-lport", "1002",
                  f"outport == @{pg} && ip4.src == ${nxt}_ip4 && tcp.dst == {8000 + g}",
                  allow],
                 [*acl, "to-lport", "1001", f"outport == @{pg} && ip4.src == $outside",
                  "allow"],
                 [*acl, "to-lport", "1000", f"outport == @{pg} && ip4", "drop"]]
    return cmds


def lb_line(n: int) -> list[Command]:
    """10 LBs, the first five in group `lbg_even` (on even switches), the others in
    `lbg_odd` (on odd switches), backends spread over the switches of their group."""
    cmds: list[Command] = []
    for k in range(LBS):
        parity = k // (LBS // 2)
        backends = ",".join(f"{vif_ip(s, k % VIFS)}:80"
                            for s in (parity + 2 * k, parity + 2 * k + 20))
        proto = "udp" if k % 4 == 3 else "tcp"
        cmds.append([f"--id=@lb{k}", "create", "Load_Balancer", f"name=lb{k}",
                     f'vips:"172.30.0.{k + 1}:80"="{backends}"', f"protocol={proto}"])
    for parity, name in enumerate(("lbg_even", "lbg_odd")):
        lbs = ",".join(f"@lb{k}" for k in range(LBS) if k // (LBS // 2) == parity)
        cmds.append([f"--id=@{name}", "create", "Load_Balancer_Group", f"name={name}",
                     f"load_balancer={lbs}"])
        for s in range(parity, n, 2):
            cmds.append(["add", "Logical_Switch", sw(s), "load_balancer_group", f"@{name}"])
    return cmds


def nbctl_lines(n: int = SWITCHES) -> list[list[Command]]:
    """The script's lines, each the commands of one `ovn-nbctl` call; `n` switches
    (a multiple of BATCH, at least 40, at most 65,536) instead of SWITCHES for a
    bigger or smaller mix of the same shape (the benchmark's `--switches`)."""
    if n % BATCH or not 40 <= n <= 65536:
        raise ValueError(f"a mix has a multiple of {BATCH} switches, 40 to 65536: {n}")
    return [*switch_lines(n), router_line(), dhcp_line(), port_group_line(n), acl_line(),
            lb_line(n)]


def churn_lines() -> list[list[Command]]:
    """Changes to the mix, one NB transaction each, touching every kind of object the
    flows come from (the `uuid(...)` references are the harness's). What is deleted
    was created in one transaction as a whole (the last batch of switches, every VIF
    of a switch) or alone (a switch's router port), so the tunnel keys left do not
    depend on the order 23.03 handed them out in."""
    last_batch = range(SWITCHES - BATCH, SWITCHES)
    return [
        [["ls-del", sw(s)] for s in last_batch],
        [["pg-set-ports", "pg3", vif(1, 0), vif(8, 1)]],
        [["--type=port-group", "acl-del", "pg5"]],
        [["remove", "Load_Balancer_Group", "lbg_even", "load_balancer",
          "uuid(Load_Balancer,name=lb0)"]],
        [["ls-lb-add", sw(3), "lb5"]],
        [["lsp-set-addresses", vif(2, 1), f"{vif_mac(2, 1)} 10.2.0.111"]],
        [["lsp-del", vif(4, p)] for p in range(VIFS)],
        [["lsp-del", f"{sw(5)}-r0"]],
        [["set", "DHCP_Options", "uuid(DHCP_Options,cidr=10.1.0.0/24)",
          "options:lease_time=60"],
         ["clear", "Logical_Switch_Port", vif(7, 0), "dhcpv4_options"]],
        [["ls-add", "late"], ["lsp-add", "late", "late-vm0"],
         ["lsp-set-addresses", "late-vm0", "00:00:00:02:00:00 10.200.0.10"],
         ["pg-set-ports", "pg7", "late-vm0", vif(2, 1)]],
    ]


def joined(cmds: list[Command]) -> list[str]:
    """The arguments of one `ovn-nbctl` call running `cmds` in one transaction."""
    out: list[str] = []
    for i, cmd in enumerate(cmds):
        if i:
            out.append("--")
        out += cmd
    return out


def script_text(churn: bool = False) -> str:
    head = ["#! renumber Datapath_Binding Port_Binding",
            f"# {SWITCHES} switches x {VIFS} VIFs, {PORT_GROUPS} port groups with ACLs "
            f"spread over them, {LBS} load",
            f"# balancers in 2 groups, a router joining {ROUTED} switches, DHCPv4 on "
            f"{DHCP}{'; then changes to each kind of object' if churn else ''};",
            f"# generated by `tests/northd/mixgen.py{' --churn' if churn else ''}` "
            "(edit that, not this file)."]
    lines = nbctl_lines() + (churn_lines() if churn else [])
    return "\n".join([*head, *(f"nbctl {shlex.join(joined(c))}" for c in lines)]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(script_text(churn="--churn" in sys.argv[1:]))
