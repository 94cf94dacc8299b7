"""The flows one NB ACL asks for on one switch: its `ls_in_acl`/`ls_out_acl` (or
`ls_in_acl_after_lb`) flows, its stateless pre-ACL filter, its log action and its
reject action, as ovn-northd 23.03 writes them (`consider_acl`, `build_acl_log`,
`build_reject_acl_rules`, `build_stateless_filter`).

Rules kept here:
- The flows of an ACL depend on the ACL and on the switch it is applied to (whether the
  switch is stateful, the switch's reject meter), never on other ACLs: a port group's
  ACL is built once per switch of the group by the same function.
- An ACL's match is written as the NB row has it: 23.03 does not parse or rewrite it,
  so a bad match is a flow ovn-controller rejects, not one northd drops.
- Every flow carries the ACL as its stage hint; priorities are the ACL's plus
  `ACL_PRI_OFFSET`, except the log-related flows, which sit with the 65532 flows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_bool
from ..build.meters import fair_meter_name
from .stages import Stage
from .table import LflowTable

ACL_PRI_OFFSET = 1000
# The priority of the flows that no ACL can outrank (65535 - 3).
TOP_PRIORITY = 65532

# Registers of 23.03's switch pipeline the ACL flows set or test.
CT_DEFRAG = "reg0[0]"
CT_COMMIT = "reg0[1]"
HINT_ALLOW_NEW = "reg0[7]"
HINT_ALLOW = "reg0[8]"
HINT_DROP = "reg0[9]"
HINT_BLOCK = "reg0[10]"
ACL_LABEL = "reg0[13]"
ACL_STATELESS = "reg0[16]"
HINT_ALLOW_REL = "reg0[17]"
LABEL_REG = "reg3"


@dataclass(frozen=True, slots=True)
class AclSettings:
    """What every ACL flow of one build shares (global options and chassis features)."""

    ct_blocked: str  # "ct_mark.blocked", or "ct_label.blocked" for old chassis
    inv_match: bool  # options:use_ct_inv_match
    drop: str  # the explicit drop action (debug_drop_action)
    implicit_drop: str  # the drop written where no action follows
    meters: Mapping[str, IdlRow]  # NB meters by name

    @property
    def not_inv(self) -> str:
        return " && !ct.inv" if self.inv_match else ""


def _verdict(action: str) -> str | None:
    if action in ("drop", "reject"):
        return action
    if action in ("allow", "allow-related", "allow-stateless"):
        return "allow"
    return None


def log_action(acl: IdlRow, s: AclSettings) -> str:
    """The `log(...); ` an ACL with `log=true` starts its actions with, else ""."""
    if not acl.log:
        return ""
    parts = []
    if acl.name is not None:
        parts.append(f'name="{acl.name}"')
    severity = acl.severity if acl.severity is not None else "info"
    parts.append(f"severity={severity}")
    verdict = _verdict(acl.action)
    if verdict is not None:
        parts.append(f"verdict={verdict}")
    if acl.meter is not None:
        meter = s.meters.get(acl.meter)
        fair = meter is not None and meter.fair is True
        name = fair_meter_name(acl.meter, acl.uuid) if fair else acl.meter
        parts.append(f'meter="{name}"')
    return "log(" + ", ".join(parts) + "); "


def acl_stage(acl: IdlRow) -> Stage:
    if acl.direction == "from-lport":
        if smap_bool(acl.options, "apply-after-lb"):
            return Stage.LS_IN_ACL_AFTER_LB
        return Stage.LS_IN_ACL
    return Stage.LS_OUT_ACL


def build_stateless_filter(out: LflowTable, dp: Datapath, acl: IdlRow) -> None:
    """The pre-ACL flow that keeps an allow-stateless ACL's packets out of conntrack."""
    stage = Stage.LS_IN_PRE_ACL if acl.direction == "from-lport" else Stage.LS_OUT_PRE_ACL
    out.add(dp, stage, acl.priority + ACL_PRI_OFFSET, acl.match,
            f"{ACL_STATELESS} = 1; next;", hint=acl)


def _reject(out: LflowTable, dp: Datapath, stage: Stage, acl: IdlRow, s: AclSettings,
            extra_match: str, extra_actions: str, meter: str | None) -> None:
    """A reject ACL's flow: the reply goes back through the other pipeline, from the
    egress QoS marking stage or the ingress L2 lookup."""
    if stage.pipeline is Stage.LS_IN_ACL.pipeline:
        target = f"next(pipeline=egress,table={Stage.LS_OUT_QOS_MARK.table});"
    else:
        target = f"next(pipeline=ingress,table={Stage.LS_IN_L2_LKUP.table});"
    match = f"({extra_match}) && {acl.match}" if extra_match else acl.match
    actions = log_action(acl, s)
    if extra_actions:
        actions += extra_actions + " "
    actions += ("reg0 = 0; reject { /* eth.dst <-> eth.src; ip.dst <-> ip.src; is "
                f"implicit. */ outport <-> inport; {target} }};")
    out.add(dp, stage, acl.priority + ACL_PRI_OFFSET, match, actions, hint=acl,
            meter=meter)


def build_acl(out: LflowTable, dp: Datapath, acl: IdlRow, *, stateful: bool,
              s: AclSettings, reject_meter: str | None) -> None:
    """Every ACL-stage flow of `acl` on `dp` (`stateful`: the switch has an
    allow-related ACL or a load balancer VIP, so allowed traffic is committed)."""
    stage = acl_stage(acl)
    prio = acl.priority + ACL_PRI_OFFSET
    action = acl.action
    log = log_action(acl, s)
    if action == "allow-stateless" or (action in ("allow", "allow-related")
                                       and not stateful):
        out.add(dp, stage, prio, acl.match, log + "next;", hint=acl)
    elif action in ("allow", "allow-related"):
        label = acl.label
        set_label = f"{ACL_LABEL} = 1; {LABEL_REG} = {label}; " if label else ""
        out.add(dp, stage, prio, f"{HINT_ALLOW_NEW} == 1 && ({acl.match})",
                f"{CT_COMMIT} = 1; {set_label}{log}next;", hint=acl)
        commit = f"{CT_COMMIT} = 1; {set_label}" if label else ""
        out.add(dp, stage, prio, f"{HINT_ALLOW} == 1 && ({acl.match})",
                f"{commit}{log}next;", hint=acl)
        if acl.log and label and smap_bool(acl.options, "log-related"):
            # Replies and related packets of the connection pass the other pipeline.
            other = Stage.LS_OUT_ACL if stage is not Stage.LS_OUT_ACL else Stage.LS_IN_ACL
            est = (f"ct.est && !ct.rel && !ct.new{s.not_inv} && ct.rpl && "
                   f"{s.ct_blocked} == 0 && ct_label.label == {label}")
            rel = (f"!ct.est && ct.rel && !ct.new{s.not_inv} && {s.ct_blocked} == 0 && "
                   f"ct_label.label == {label}")
            out.add(dp, other, TOP_PRIORITY + 1, est, log + "next;", hint=acl)
            out.add(dp, other, TOP_PRIORITY + 1, rel, log + "next;", hint=acl)
    elif action in ("drop", "reject"):
        reject = action == "reject"
        if not stateful:
            if reject:
                _reject(out, dp, stage, acl, s, "", "", reject_meter)
            else:
                out.add(dp, stage, prio, acl.match, log + s.implicit_drop, hint=acl)
            return
        # New or untracked packets are simply dropped; an established connection
        # that policy now blocks is first marked blocked in conntrack.
        for hint_bit, commit in ((HINT_DROP, ""),
                                 (HINT_BLOCK, f"ct_commit {{ {s.ct_blocked} = 1; }}; ")):
            if reject:
                _reject(out, dp, stage, acl, s, f"{hint_bit} == 1", commit, reject_meter)
            else:
                out.add(dp, stage, prio, f"{hint_bit} == 1 && ({acl.match})",
                        commit + log + s.implicit_drop, hint=acl)
