"""Fixtures of the IDL suite: the IdlTest database on our server, then on the real one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from idl_helpers import make_server

from procs import ServerProcess


@pytest.fixture
def server(kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """The IdlTest database on our server, then on the real one (stopped by pid)."""
    srv = make_server(kind, tmp_path)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
