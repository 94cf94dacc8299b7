"""The corpus checklist (`docs/northd_coverage.md`, `corpus_coverage.py`): its keys are
those the installed ovn-nb(5) documents; rendered again from them, the schema and the
corpus it must equal the committed file; and every item (schema column or documented
key of the four topology tables) is set by some corpus script or excluded with a
reason."""

from __future__ import annotations

import json
import os

import pytest
from corpus_coverage import (
    CHECKLIST,
    EXCLUDED,
    LR,
    LRP,
    LS,
    LSP,
    MANUAL_VERSION,
    SCHEMA,
    Item,
    checklist_keys,
    coverage,
    current,
    find_manual,
    manual_items,
    manual_version,
    read_manual,
    render,
    script_items,
)
from lflowdiff import diff_lines

from procs import REQUIRE_INTEROP

MANUAL = r'''.TH "ovn-nb" 5 " DB Schema 7.0.0" "Open vSwitch 23.03.1" "Open vSwitch Manual"
.SH "Logical_Switch TABLE"
.SS "Summary:
\fBother_config : subnet\fR
.SS "Details:
.ST "IP Address Assignment:"
.IP "\fBother_config : subnet\fR: optional string"
.IP "\fBname\fR: string"
.SH "Logical_Switch_Port TABLE"
.SS "Details:
.ST "Options for localnet ports:"
.IP "\fBoptions : network_name\fR: optional string"
The prose names \fBoptions:router-port\fR, which is no item of its own.
.ST "Options for l2gateway ports:"
.IP "\fBoptions : network_name\fR: optional string"
.ST "Naming:"
.IP "\fBexternal_ids : neutron:port_name\fR: optional string"
.SH "ACL TABLE"
.SS "Details:
.IP "\fBoptions : log-related\fR: optional string"
'''


def _committed() -> str:
    return CHECKLIST.read_text() if CHECKLIST.exists() else ""


def _manual() -> str:
    """The installed 23.03 ovn-nb(5); skipped without it (failed in CI, as `require`)."""
    path = find_manual()
    text = read_manual(path) if path is not None else ""
    if manual_version(text) != MANUAL_VERSION:
        msg = (f"{path} documents OVN {manual_version(text)!r}, not {MANUAL_VERSION}"
               if path is not None else "ovn-nb(5) is not installed")
        if REQUIRE_INTEROP:
            pytest.fail(msg)
        pytest.skip(msg)
    return text


def test_checklist_is_current_and_complete() -> None:
    """The committed checklist's keys, with the schema and the corpus as they are now,
    render the committed checklist; nothing is left uncovered."""
    committed = _committed()
    cov = current(checklist_keys(committed))
    text = render(cov)
    problems = []
    missing = [f"{i.table}.{i}" for i in cov.uncovered()]
    if missing:
        problems.append(f"no corpus script sets: {missing}")
    stale = [f"{i.table}.{i}" for i in cov.stale_exclusions()]
    if stale:
        problems.append(f"excluded, yet a script sets it (or no such item): {stale}")
    if committed != text:
        lines = diff_lines(committed.splitlines(), text.splitlines())[2:]
        problems.append(f"{CHECKLIST.name} is stale (run python "
                        "tests/northd/corpus_coverage.py):\n" + "\n".join(lines[:40]))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
    assert all(reason.strip() for reason in EXCLUDED.values())


def test_checklist_lists_the_manuals_keys() -> None:
    """The checklist's keys are the installed 23.03 manual's, groups included."""
    assert checklist_keys(_committed()) == manual_items(_manual())


def test_manual_items_are_the_details_entries() -> None:
    assert manual_version(MANUAL) == "23.03"
    assert manual_items(MANUAL) == {
        Item(LS, "other_config", "subnet"): "IP Address Assignment",
        Item(LSP, "options", "network_name"):
            "Options for localnet ports; Options for l2gateway ports",
        Item(LSP, "external_ids", "neutron:port_name"): "Naming",
    }


def test_script_items_reads_nbctl_commands() -> None:
    got = script_items(
        "# a comment: ls-add x\n"
        "nbctl ls-add sw0 -- set Logical_Switch sw0 other_config:subnet=10.0.0.0/24 "
        "'external_ids:\"neutron:network_name\"=blue'\n"
        "nbctl --wait=hv lsp-add sw0 c1 vm1 10 -- lsp-set-options c1 requested-chassis=ch1\n"
        "nbctl lsp-add sw0 ln0 \"\" 100 -- lsp-set-addresses ln0 dynamic\n"
        "nbctl --type=port-group acl-add pg0 to-lport 1 ip4 drop\n"
        "nbctl lrp-add lr0 lr0-a 00:00:00:00:00:01 10.0.0.1/24 peer=lr1-a\n"
        "nbctl set logical_router_port lr0-a 'ipv6_ra_configs={address_mode=slaac, mtu=1400}'\n"
        "nbctl add Logical_Router lr0 options mcast_relay=true\n"
        "nbctl -- --id=@m create Meter name=m0 -- lrp-set-redirect-type lr0-a bridged\n"
        "sbctl set Port_Binding lr0-a options:ipv6_ra_pd_list=1:2001:db8::/64\n")
    assert got == {
        Item(LS, "name"), Item(LS, "other_config"), Item(LS, "other_config", "subnet"),
        Item(LS, "external_ids"), Item(LS, "external_ids", "neutron:network_name"),
        Item(LS, "ports"), Item(LSP, "name"), Item(LSP, "up"), Item(LSP, "parent_name"),
        Item(LSP, "tag_request"), Item(LSP, "tag"), Item(LSP, "options"),
        Item(LSP, "options", "requested-chassis"), Item(LSP, "addresses"),
        Item(LSP, "dynamic_addresses"), Item(LR, "ports"), Item(LRP, "name"),
        Item(LRP, "mac"), Item(LRP, "networks"), Item(LRP, "peer"),
        Item(LRP, "ipv6_ra_configs"), Item(LRP, "ipv6_ra_configs", "address_mode"),
        Item(LRP, "ipv6_ra_configs", "mtu"), Item(LR, "options"),
        Item(LR, "options", "mcast_relay"), Item(LRP, "options"),
        Item(LRP, "options", "redirect-type"), Item(LRP, "ipv6_prefix")}


def test_render_marks_what_no_script_sets() -> None:
    with open(SCHEMA) as f:
        schema = json.load(f)
    cov = coverage(manual_items(MANUAL), schema,
                   {"01_a": "nbctl ls-add sw0\n",
                    "02_b": "nbctl ls-add sw1 -- lsp-add sw1 p1\n"})
    text = render(cov)
    assert checklist_keys(text) == manual_items(MANUAL)
    assert "| `name` |  | 01_a, 02_b |" in text
    assert "| `other_config:subnet` | IP Address Assignment | **none** |" in text
    assert Item(LSP, "options", "network_name") in cov.uncovered()
    assert Item(LS, "name") not in cov.uncovered()
    assert os.path.basename(CHECKLIST) == "northd_coverage.md"
