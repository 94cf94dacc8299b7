"""QoS on a logical switch: the `ls_in_qos_mark`, `ls_in_qos_meter`, `ls_out_qos_mark`
and `ls_out_qos_meter` stages, as ovn-northd 23.03 writes them (`build_qos`).

Rules kept here:
- Every switch passes all four stages by default; each NB QoS rule of the switch adds a
  DSCP marking flow (action `dscp`) and, when it has a nonzero `rate`, a meter flow
  (with `burst` if that is nonzero too), at the rule's own priority and with its match
  as written.
- Rules come in UUID order (23.03 walks the switch's `qos_rules` set, stored sorted);
  other action keys (`mark`) write no flow in 23.03.
"""

from __future__ import annotations

from ...idl.row import IdlRow
from ..build.datapaths import Datapath
from .stages import Stage
from .table import LflowTable


def _rules(dp: Datapath) -> list[IdlRow]:
    value = dp.nb.qos_rules
    return sorted((r for r in value if isinstance(r, IdlRow)), key=lambda r: r.uuid)


def build_qos(out: LflowTable, dp: Datapath) -> None:
    """The QoS flows of one switch (default flows owned by the caller's owner, each
    rule's by the rule)."""
    for stage in (Stage.LS_IN_QOS_MARK, Stage.LS_OUT_QOS_MARK, Stage.LS_IN_QOS_METER,
                  Stage.LS_OUT_QOS_METER):
        out.add(dp, stage, 0, "1", "next;")
    for qos in _rules(dp):
        ingress = qos.direction == "from-lport"
        with out.owned_by(("qos", qos.uuid)):
            actions: dict[str, int] = qos.action
            for key in sorted(actions):
                if key == "dscp":
                    out.add(dp, Stage.LS_IN_QOS_MARK if ingress else Stage.LS_OUT_QOS_MARK,
                            qos.priority, qos.match,
                            f"ip.dscp = {actions[key]}; next;", hint=qos)
            bandwidth: dict[str, int] = qos.bandwidth
            rate, burst = bandwidth.get("rate", 0), bandwidth.get("burst", 0)
            if rate:
                meter = f"set_meter({rate}, {burst}); next;" if burst else \
                    f"set_meter({rate}); next;"
                out.add(dp, Stage.LS_IN_QOS_METER if ingress else Stage.LS_OUT_QOS_METER,
                        qos.priority, qos.match, meter, hint=qos)
