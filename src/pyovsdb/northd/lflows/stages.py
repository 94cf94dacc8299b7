"""The logical flow pipelines: every stage of the switch and router pipelines, with the
table number and name ovn-northd 23.03 gives it.

Rules kept here:
- A stage is an enum member, never a string: builders name `Stage.LS_IN_ACL`, and the
  table number and `external_ids:stage-name` come from the member.
- The numbering is 23.03's (ovn-controller and ovn-trace read table numbers from the
  SB; a stage moved here would be a different stage to them).
"""

from __future__ import annotations

import enum


class DatapathType(enum.Enum):
    SWITCH = "ls"
    ROUTER = "lr"


class Pipeline(enum.Enum):
    INGRESS = "ingress"
    EGRESS = "egress"


class Stage(enum.Enum):
    """(datapath type, pipeline, table, name) of each stage."""

    LS_IN_CHECK_PORT_SEC = (DatapathType.SWITCH, Pipeline.INGRESS, 0, "ls_in_check_port_sec")
    LS_IN_APPLY_PORT_SEC = (DatapathType.SWITCH, Pipeline.INGRESS, 1, "ls_in_apply_port_sec")
    LS_IN_LOOKUP_FDB = (DatapathType.SWITCH, Pipeline.INGRESS, 2, "ls_in_lookup_fdb")
    LS_IN_PUT_FDB = (DatapathType.SWITCH, Pipeline.INGRESS, 3, "ls_in_put_fdb")
    LS_IN_PRE_ACL = (DatapathType.SWITCH, Pipeline.INGRESS, 4, "ls_in_pre_acl")
    LS_IN_PRE_LB = (DatapathType.SWITCH, Pipeline.INGRESS, 5, "ls_in_pre_lb")
    LS_IN_PRE_STATEFUL = (DatapathType.SWITCH, Pipeline.INGRESS, 6, "ls_in_pre_stateful")
    LS_IN_ACL_HINT = (DatapathType.SWITCH, Pipeline.INGRESS, 7, "ls_in_acl_hint")
    LS_IN_ACL = (DatapathType.SWITCH, Pipeline.INGRESS, 8, "ls_in_acl")
    LS_IN_QOS_MARK = (DatapathType.SWITCH, Pipeline.INGRESS, 9, "ls_in_qos_mark")
    LS_IN_QOS_METER = (DatapathType.SWITCH, Pipeline.INGRESS, 10, "ls_in_qos_meter")
    LS_IN_LB_AFF_CHECK = (DatapathType.SWITCH, Pipeline.INGRESS, 11, "ls_in_lb_aff_check")
    LS_IN_LB = (DatapathType.SWITCH, Pipeline.INGRESS, 12, "ls_in_lb")
    LS_IN_LB_AFF_LEARN = (DatapathType.SWITCH, Pipeline.INGRESS, 13, "ls_in_lb_aff_learn")
    LS_IN_PRE_HAIRPIN = (DatapathType.SWITCH, Pipeline.INGRESS, 14, "ls_in_pre_hairpin")
    LS_IN_NAT_HAIRPIN = (DatapathType.SWITCH, Pipeline.INGRESS, 15, "ls_in_nat_hairpin")
    LS_IN_HAIRPIN = (DatapathType.SWITCH, Pipeline.INGRESS, 16, "ls_in_hairpin")
    LS_IN_ACL_AFTER_LB = (DatapathType.SWITCH, Pipeline.INGRESS, 17, "ls_in_acl_after_lb")
    LS_IN_STATEFUL = (DatapathType.SWITCH, Pipeline.INGRESS, 18, "ls_in_stateful")
    LS_IN_ARP_RSP = (DatapathType.SWITCH, Pipeline.INGRESS, 19, "ls_in_arp_rsp")
    LS_IN_DHCP_OPTIONS = (DatapathType.SWITCH, Pipeline.INGRESS, 20, "ls_in_dhcp_options")
    LS_IN_DHCP_RESPONSE = (DatapathType.SWITCH, Pipeline.INGRESS, 21, "ls_in_dhcp_response")
    LS_IN_DNS_LOOKUP = (DatapathType.SWITCH, Pipeline.INGRESS, 22, "ls_in_dns_lookup")
    LS_IN_DNS_RESPONSE = (DatapathType.SWITCH, Pipeline.INGRESS, 23, "ls_in_dns_response")
    LS_IN_EXTERNAL_PORT = (DatapathType.SWITCH, Pipeline.INGRESS, 24, "ls_in_external_port")
    LS_IN_L2_LKUP = (DatapathType.SWITCH, Pipeline.INGRESS, 25, "ls_in_l2_lkup")
    LS_IN_L2_UNKNOWN = (DatapathType.SWITCH, Pipeline.INGRESS, 26, "ls_in_l2_unknown")
    LS_OUT_PRE_ACL = (DatapathType.SWITCH, Pipeline.EGRESS, 0, "ls_out_pre_acl")
    LS_OUT_PRE_LB = (DatapathType.SWITCH, Pipeline.EGRESS, 1, "ls_out_pre_lb")
    LS_OUT_PRE_STATEFUL = (DatapathType.SWITCH, Pipeline.EGRESS, 2, "ls_out_pre_stateful")
    LS_OUT_ACL_HINT = (DatapathType.SWITCH, Pipeline.EGRESS, 3, "ls_out_acl_hint")
    LS_OUT_ACL = (DatapathType.SWITCH, Pipeline.EGRESS, 4, "ls_out_acl")
    LS_OUT_QOS_MARK = (DatapathType.SWITCH, Pipeline.EGRESS, 5, "ls_out_qos_mark")
    LS_OUT_QOS_METER = (DatapathType.SWITCH, Pipeline.EGRESS, 6, "ls_out_qos_meter")
    LS_OUT_STATEFUL = (DatapathType.SWITCH, Pipeline.EGRESS, 7, "ls_out_stateful")
    LS_OUT_CHECK_PORT_SEC = (DatapathType.SWITCH, Pipeline.EGRESS, 8, "ls_out_check_port_sec")
    LS_OUT_APPLY_PORT_SEC = (DatapathType.SWITCH, Pipeline.EGRESS, 9, "ls_out_apply_port_sec")
    LR_IN_ADMISSION = (DatapathType.ROUTER, Pipeline.INGRESS, 0, "lr_in_admission")
    LR_IN_LOOKUP_NEIGHBOR = (DatapathType.ROUTER, Pipeline.INGRESS, 1, "lr_in_lookup_neighbor")
    LR_IN_LEARN_NEIGHBOR = (DatapathType.ROUTER, Pipeline.INGRESS, 2, "lr_in_learn_neighbor")
    LR_IN_IP_INPUT = (DatapathType.ROUTER, Pipeline.INGRESS, 3, "lr_in_ip_input")
    LR_IN_UNSNAT = (DatapathType.ROUTER, Pipeline.INGRESS, 4, "lr_in_unsnat")
    LR_IN_DEFRAG = (DatapathType.ROUTER, Pipeline.INGRESS, 5, "lr_in_defrag")
    LR_IN_LB_AFF_CHECK = (DatapathType.ROUTER, Pipeline.INGRESS, 6, "lr_in_lb_aff_check")
    LR_IN_DNAT = (DatapathType.ROUTER, Pipeline.INGRESS, 7, "lr_in_dnat")
    LR_IN_LB_AFF_LEARN = (DatapathType.ROUTER, Pipeline.INGRESS, 8, "lr_in_lb_aff_learn")
    LR_IN_ECMP_STATEFUL = (DatapathType.ROUTER, Pipeline.INGRESS, 9, "lr_in_ecmp_stateful")
    LR_IN_ND_RA_OPTIONS = (DatapathType.ROUTER, Pipeline.INGRESS, 10, "lr_in_nd_ra_options")
    LR_IN_ND_RA_RESPONSE = (DatapathType.ROUTER, Pipeline.INGRESS, 11, "lr_in_nd_ra_response")
    LR_IN_IP_ROUTING_PRE = (DatapathType.ROUTER, Pipeline.INGRESS, 12, "lr_in_ip_routing_pre")
    LR_IN_IP_ROUTING = (DatapathType.ROUTER, Pipeline.INGRESS, 13, "lr_in_ip_routing")
    LR_IN_IP_ROUTING_ECMP = (DatapathType.ROUTER, Pipeline.INGRESS, 14, "lr_in_ip_routing_ecmp")
    LR_IN_POLICY = (DatapathType.ROUTER, Pipeline.INGRESS, 15, "lr_in_policy")
    LR_IN_POLICY_ECMP = (DatapathType.ROUTER, Pipeline.INGRESS, 16, "lr_in_policy_ecmp")
    LR_IN_ARP_RESOLVE = (DatapathType.ROUTER, Pipeline.INGRESS, 17, "lr_in_arp_resolve")
    LR_IN_CHK_PKT_LEN = (DatapathType.ROUTER, Pipeline.INGRESS, 18, "lr_in_chk_pkt_len")
    LR_IN_LARGER_PKTS = (DatapathType.ROUTER, Pipeline.INGRESS, 19, "lr_in_larger_pkts")
    LR_IN_GW_REDIRECT = (DatapathType.ROUTER, Pipeline.INGRESS, 20, "lr_in_gw_redirect")
    LR_IN_ARP_REQUEST = (DatapathType.ROUTER, Pipeline.INGRESS, 21, "lr_in_arp_request")
    LR_OUT_CHK_DNAT_LOCAL = (DatapathType.ROUTER, Pipeline.EGRESS, 0, "lr_out_chk_dnat_local")
    LR_OUT_UNDNAT = (DatapathType.ROUTER, Pipeline.EGRESS, 1, "lr_out_undnat")
    LR_OUT_POST_UNDNAT = (DatapathType.ROUTER, Pipeline.EGRESS, 2, "lr_out_post_undnat")
    LR_OUT_SNAT = (DatapathType.ROUTER, Pipeline.EGRESS, 3, "lr_out_snat")
    LR_OUT_POST_SNAT = (DatapathType.ROUTER, Pipeline.EGRESS, 4, "lr_out_post_snat")
    LR_OUT_EGR_LOOP = (DatapathType.ROUTER, Pipeline.EGRESS, 5, "lr_out_egr_loop")
    LR_OUT_DELIVERY = (DatapathType.ROUTER, Pipeline.EGRESS, 6, "lr_out_delivery")

    # Members are singletons compared by identity: hashed by it too, in C (a flow's key
    # holds its stage, and Enum's own hash is a Python call on every lookup).
    __hash__ = object.__hash__

    def __init__(self, dp_type: DatapathType, pipeline: Pipeline, table: int,
                 stage_name: str) -> None:
        self.dp_type = dp_type
        self.pipeline = pipeline
        self.table = table
        self.stage_name = stage_name
        self.is_switch = dp_type is DatapathType.SWITCH


def by_name(name: str) -> Stage:
    """The stage whose `stage-name` is `name`."""
    return _BY_NAME[name]


def by_table(dp_type: DatapathType, pipeline: Pipeline, table: int) -> Stage:
    return _BY_TABLE[(dp_type, pipeline, table)]


_BY_NAME: dict[str, Stage] = {s.stage_name: s for s in Stage}
_BY_TABLE: dict[tuple[DatapathType, Pipeline, int], Stage] = {
    (s.dp_type, s.pipeline, s.table): s for s in Stage}
