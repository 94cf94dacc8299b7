"""Test-side helpers around `pyovsdb.testing`: the real peers may be missing on a
developer machine (skip) but never in CI (fail)."""

from __future__ import annotations

import os
import shutil

import pytest

from pyovsdb.testing import (  # noqa: F401  (re-exported for the tests)
    NB_SCHEMA,
    SB_SCHEMA,
    VSWITCH_SCHEMA,
    ServerProcess,
    create_db,
    free_port,
    run,
    stop_process,
)

REQUIRE_INTEROP = os.environ.get("PYOVSDB_REQUIRE_INTEROP") == "1"


def require(*binaries: str) -> None:
    """Skip (or, in CI, fail) a test whose real peer is not installed."""
    missing = [b for b in binaries if shutil.which(b) is None]
    if missing:
        msg = f"real binaries not installed: {', '.join(missing)}"
        if REQUIRE_INTEROP:
            pytest.fail(msg)
        pytest.skip(msg)
