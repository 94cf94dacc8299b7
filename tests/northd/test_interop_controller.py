"""A real `ovn-controller` with a real `ovs-vswitchd` (dummy datapath) against our NB
and SB servers with our northd: the chassis registers, a VIF is claimed, northd turns
NB `Logical_Switch_Port.up` true, and `ovn-nbctl --wait=hv` returns (the controller
echoes `nb_cfg` in `Chassis_Private`, northd folds it into `hv_cfg`).

The same steps run with the real `ovn-northd` between our servers, so a failure that
shows only with ours is ours. Port claiming needs no logical flows: ovn-controller
claims from the `Port_Binding` and the OVS interface's `iface-id` alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hypervisor import (
    ControlPlane,
    Hypervisor,
    poll,
)
from procs import run
from pyovsdb.cli.sandbox import ours_available

pytestmark = pytest.mark.interop

OURS = ours_available()


@pytest.fixture(params=["ovn-northd", pytest.param("ours", marks=pytest.mark.skipif(
    not OURS, reason="pyovsdb northd is not in this build"))])
def plane(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ControlPlane]:
    cp = ControlPlane("ours", tmp_path / "cp",
                      northd="ours" if request.param == "ours" else "real")
    with cp:
        yield cp


def test_real_controller_claims_and_northd_sets_up(plane: ControlPlane,
                                                   tmp_path: Path) -> None:
    cp = plane
    # The only northd takes the lock, although maybe not before its first status reply.
    poll(lambda: run(["ovn-appctl", "-t", cp.northd_ctl, "status"],
                     env=cp.env).stdout.strip() == "Status: active",
         "northd to be active", cp.logs)
    cp.nbctl("--wait=sb", "ls-add", "sw0")
    cp.nbctl("--wait=sb", "lsp-add", "sw0", "lsp1", "--", "lsp-set-addresses", "lsp1",
             "0a:00:00:00:00:01 10.0.0.1")
    assert not cp.port_up("lsp1")
    with Hypervisor("hv1", tmp_path / "hv1", cp.sb_remote, "127.0.0.11") as hv:
        poll(lambda: cp.chassis() == ["hv1"], "hv1's Chassis row", cp.logs)
        hv.add_vif("vif1", "lsp1", "0a:00:00:00:00:01")
        cp.wait_claimed("lsp1", "hv1", up=True, logs=hv.logs)
        hv.wait_installed("lsp1")
        # --wait=hv: the controller has to echo the new nb_cfg and northd fold it in
        cp.nbctl("--wait=hv", "sync", timeout=60)
        nb_cfg = int(cp.nbctl("get", "NB_Global", ".", "nb_cfg").stdout)
        assert nb_cfg >= 1
        assert int(cp.nbctl("get", "NB_Global", ".", "hv_cfg").stdout) == nb_cfg
        echoed = cp.sbctl("--bare", "--columns=nb_cfg", "list", "Chassis_Private").stdout
        assert int(echoed) >= nb_cfg
        # a port added with --wait=hv whose VIF is already there is claimed and up
        hv.add_vif("vif2", "lsp2", "0a:00:00:00:00:02")
        cp.nbctl("--wait=hv", "lsp-add", "sw0", "lsp2", "--", "lsp-set-addresses", "lsp2",
                 "0a:00:00:00:00:02 10.0.0.2", timeout=60)
        cp.wait_claimed("lsp2", "hv1", up=True, logs=hv.logs)
        # the VIF gone: released, and northd turns up false again
        hv.del_vif("vif1")
        cp.wait_claimed("lsp1", None, up=False, logs=hv.logs)
        assert cp.port_up("lsp2")
