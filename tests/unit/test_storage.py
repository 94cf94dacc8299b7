"""OVS log framing and standalone storage: round trips, torn and corrupt tails,
compaction."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson
import pytest

from pyovsdb.ovsdb.transaction import Committed, execute
from pyovsdb.storage import log as ovslog
from pyovsdb.storage import standalone
from pyovsdb.testing import NB_SCHEMA


def nb_schema() -> dict:
    return orjson.loads(Path(NB_SCHEMA).read_bytes())


def test_frame_matches_ovs_format() -> None:
    data = ovslog.frame({"a": 1})
    header, body = data.split(b"\n", 1)
    magic1, magic2, length, sha = header.split(b" ")
    assert (magic1, magic2) == (b"OVSDB", b"JSON")
    assert int(length) == len(body) and body.endswith(b"\n")
    assert sha.decode() == hashlib.sha1(body).hexdigest()


def _db_with_txns(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "nb.db"
    standalone.create(str(path), nb_schema())
    st, problems = standalone.StandaloneStorage.open(str(path))
    assert problems == []
    for i in range(n):
        out = execute(st.db, [{"op": "insert", "table": "Logical_Switch",
                               "row": {"name": f"sw{i}"}}])
        assert isinstance(out, Committed)
        st.commit(out.changeset)
        st.db.apply(out.changeset)
    st.close()
    return path


def names(path: Path) -> set[str]:
    db, _, _ = standalone.load(str(path))
    return {r.data["name"] for r in db.tables["Logical_Switch"].rows.values()}


def test_round_trip(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 5)
    assert names(path) == {f"sw{i}" for i in range(5)}


@pytest.mark.parametrize("cut", [1, 10, 60, 100])
def test_torn_tail_keeps_good_prefix_and_next_write_truncates(tmp_path: Path, cut: int) -> None:
    path = _db_with_txns(tmp_path, 3)
    good = path.read_bytes()
    # A fourth record torn in the middle of its header or body.
    record = ovslog.frame({"Logical_Switch": {"x" * 36: {"name": "torn" * 20}}, "_date": 0})
    assert cut < len(record)
    torn = record[:cut]
    path.write_bytes(good + torn)
    st, problems = standalone.StandaloneStorage.open(str(path))
    assert problems
    assert {r.data["name"] for r in st.db.tables["Logical_Switch"].rows.values()} == {
        "sw0", "sw1", "sw2"}
    out = execute(st.db, [{"op": "insert", "table": "Logical_Switch", "row": {"name": "new"}}])
    assert isinstance(out, Committed)
    st.commit(out.changeset)
    st.close()
    data = path.read_bytes()
    assert data.startswith(good)
    assert b"torn" not in data  # the bad tail is gone, the new record follows the good part
    res = ovslog.read_file(str(path))
    assert res.error is None and len(res.records) == 5
    assert names(path) == {"sw0", "sw1", "sw2", "new"}


def test_checksum_mismatch_is_detected(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 2)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01  # flip a bit in the last record's body
    path.write_bytes(bytes(data))
    res = ovslog.read_file(str(path))
    assert res.error is not None and "have SHA-1 hash" in res.error
    assert len(res.records) == 2  # schema + first transaction


def test_compaction_is_atomic_and_preserves_rows(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 50)
    before = os.path.getsize(path)
    st, _ = standalone.StandaloneStorage.open(str(path))
    st.compact()
    st.close()
    assert os.path.getsize(path) < before
    res = ovslog.read_file(str(path))
    assert res.error is None and len(res.records) == 2
    assert res.records[1]["_comment"] == "compacting database online"
    assert names(path) == {f"sw{i}" for i in range(50)}
    assert not (tmp_path / "nb.db.tmp").exists()


def test_should_compact_thresholds(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 20)
    st, _ = standalone.StandaloneStorage.open(str(path), min_growth=1000, ratio=2.0,
                                                min_interval=100.0, min_records=5,
                                                max_interval=10_000.0, now=0.0)
    try:
        assert not st.should_compact(now=500.0)  # nothing written since opening
        for i in range(10):
            out = execute(st.db, [{"op": "insert", "table": "Logical_Switch",
                                   "row": {"name": f"more{i}" * 20}}])
            assert isinstance(out, Committed)
            st.commit(out.changeset)
            st.db.apply(out.changeset)
        assert not st.should_compact(now=50.0)  # too soon after opening
        assert st.should_compact(now=500.0)
        st.compact(now=500.0)
        assert not st.should_compact(now=5000.0)  # has not grown since
        out = execute(st.db, [{"op": "insert", "table": "Logical_Switch",
                               "row": {"name": "late"}}])
        assert isinstance(out, Committed)
        st.commit(out.changeset)
        assert not st.should_compact(now=5000.0)  # one small record is not enough
        assert st.should_compact(now=20_000.0)  # but after max_interval it is
    finally:
        st.close()


def test_second_writer_is_refused(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 1)
    st, _ = standalone.StandaloneStorage.open(str(path))
    try:
        with pytest.raises(Exception, match="lock"):
            standalone.StandaloneStorage.open(str(path))
    finally:
        st.close()
