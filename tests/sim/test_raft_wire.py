"""Raft RPCs and file records against the real OVS 3.1 samples (captured from a
3-node cluster, see data/ovs_wire_disk_samples.txt): every message and record parses
and comes back as the same JSON; what OVS's strict parser refuses, we refuse."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from pyovsdb.raft import rpc
from pyovsdb.raft.core import RaftCore
from pyovsdb.raft.records import (
    CommitIndexRecord,
    EntryRecord,
    Header,
    LeaderRecord,
    NoteRecord,
    TermRecord,
    VoteRecord,
    record_from_json,
)

SAMPLES = Path(__file__).parent / "data" / "ovs_wire_disk_samples.txt"
_LINE = re.compile(r'notification, method="(\w+)", params=\[(.*)\]$')


def wire_samples() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for line in SAMPLES.read_text().splitlines():
        m = _LINE.search(line)
        if m:
            out.append((m.group(1), orjson.loads(m.group(2))))
    return out


def disk_samples() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = SAMPLES.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("OVSDB CLUSTER"))
    objs = [orjson.loads(lines[i + 1]) for i in range(start, len(lines), 2)
            if lines[i].startswith("OVSDB CLUSTER")]
    return objs[0], objs[1:]


WIRE = wire_samples()
SID2 = "4a3269d8-410f-4ecc-a09a-7d107f02a99c"
CID = "3b1663e8-c7de-402e-a352-14435c3f5cf9"


def test_samples_cover_every_rpc_the_capture_has() -> None:
    methods = {m for m, _ in WIRE}
    assert methods == {"add_server_request", "append_request", "append_reply",
                       "install_snapshot_request", "install_snapshot_reply",
                       "hello_request", "add_server_reply", "execute_command_request",
                       "execute_command_reply", "vote_request", "vote_reply"}
    assert len(WIRE) == 56


@pytest.mark.parametrize(("method", "params"), WIRE,
                         ids=[f"{i}-{m}" for i, (m, _) in enumerate(WIRE)])
def test_real_message_round_trips(method: str, params: dict[str, Any]) -> None:
    msg = rpc.from_params(method, params)
    assert method == msg.METHOD
    assert msg.to_json() == params
    assert rpc.from_jsonrpc(orjson.loads(orjson.dumps(msg.to_jsonrpc()))) == msg
    # The receiver's view: right cluster, addressed to it.
    rpc.from_params(method, params, cluster=params.get("cluster"), sid=params.get("to"))


def test_entries_in_the_samples() -> None:
    by_method: dict[str, list[rpc.RaftRpc]] = {}
    for m, p in WIRE:
        by_method.setdefault(m, []).append(rpc.from_params(m, p))
    entries = [e for rq in by_method["append_request"]
               for e in rq.log]  # type: ignore[attr-defined]
    kinds = {("data" if e.data is not None else "servers" if e.servers else "noop")
             for e in entries}
    assert kinds == {"data", "servers", "noop"}
    cmd = next(e for e in entries if e.data is not None)
    assert cmd.eid == "110c5102-824c-4f51-a487-a2357277f3c9"
    assert cmd.data[0] is None and cmd.data[1]["_is_diff"] is True
    reply = by_method["execute_command_reply"][0]
    assert isinstance(reply, rpc.ExecuteCommandReply)
    assert (reply.status, reply.commit_index) == ("success", 5)
    vote = by_method["vote_request"][0]
    assert isinstance(vote, rpc.VoteRequest) and vote.leadership_transfer
    add = by_method["add_server_request"][0]
    assert isinstance(add, rpc.AddServerRequest) and add.dst is None and add.cluster is None


def test_uint64_beyond_int64_travels_negative() -> None:
    big = (1 << 64) - 5
    e = rpc.Entry(term=big)
    assert e.to_json() == {"term": -5}
    assert rpc.Entry.from_json({"term": -5}).term == big
    rq = rpc.BecomeLeader(src=SID2, dst=SID2, cluster=CID, term=1 << 63)
    assert rq.to_json()["term"] == -(1 << 63)
    assert rpc.from_params("become_leader", rq.to_json()) == rq


def test_election_timer_entry_and_all_members() -> None:
    e = rpc.Entry(7, election_timer=2000)
    assert e.to_json() == {"term": 7, "election_timer": 2000}
    both = rpc.Entry(2, data=[None, {}], eid=SID2, servers={SID2: "tcp:1.2.3.4:6643"},
                     election_timer=500)
    assert rpc.Entry.from_json(both.to_json()) == both


def _valid(method: str) -> dict[str, Any]:
    return copy.deepcopy(next(p for m, p in WIRE if m == method))


@pytest.mark.parametrize(("method", "mutate", "error"), [
    ("append_request", lambda p: p.pop("log"), "Required 'log' member is missing"),
    ("append_request", lambda p: p.update(term="1"), "Type mismatch for member 'term'"),
    ("append_request", lambda p: p.update(term=True), "Type mismatch for member 'term'"),
    ("append_request", lambda p: p.update(term=1.5), "Type mismatch for member 'term'"),
    ("append_request", lambda p: p.update(extra=1), "Member 'extra' is present but not"),
    ("append_request", lambda p: p["log"].append({"term": 1, "eid": SID2}),
     "Member 'eid' is present but not allowed"),
    ("append_request", lambda p: p["log"].append({"term": 1, "data": [None, {}]}),
     "Required 'eid' member is missing"),
    ("append_request", lambda p: p["log"].append({"term": 1, "data": "x", "eid": SID2}),
     "Type mismatch for member 'data'"),
    ("append_request", lambda p: p["log"].append({"term": 1, "servers": {}}),
     "must have at least one server"),
    ("append_request", lambda p: p["log"].append({"term": 1, "servers": {"x": "unix:a"}}),
     "x is not a UUID"),
    ("append_request", lambda p: p["log"].append({"term": 1, "servers": {SID2: "udp:a"}}),
     'expected "tcp" or "ssl" address'),
    ("append_request", lambda p: p.pop("cluster"), "Required 'cluster' member is missing"),
    ("append_request", lambda p: p.pop("to"), "Required 'to' member is missing"),
    ("append_request", lambda p: p.pop("from"), "Required 'from' member is missing"),
    ("append_request", lambda p: p.update({"from": "nope"}), "from is not a valid UUID"),
    ("append_request", lambda p: p.update(comment=None), "Type mismatch for member 'comment'"),
    ("append_reply", lambda p: p.update(result="maybe"), 'unknown result "maybe"'),
    ("vote_request", lambda p: p.update(is_prevote=True),
     "Member 'is_prevote' is present but not allowed"),
    ("vote_request", lambda p: p.update(leadership_transfer=1),
     "Type mismatch for member 'leadership_transfer'"),
    ("execute_command_reply", lambda p: p.update(status="done"), 'unknown status "done"'),
    ("execute_command_request", lambda p: p.update(data=None),
     "Type mismatch for member 'data'"),
    ("add_server_reply", lambda p: p.update(remote_addresses=[]),
     "at least one remote address is required"),
    ("install_snapshot_request", lambda p: p.pop("election_timer"),
     "Required 'election_timer' member is missing"),
    ("install_snapshot_request", lambda p: p.update(last_servers={}),
     "must have at least one server"),
])
def test_strict_parsing(method: str, mutate: Any, error: str) -> None:
    params = _valid(method)
    mutate(params)
    with pytest.raises(rpc.RpcError, match=re.escape(error)):
        rpc.from_params(method, params)


def test_envelope_checks() -> None:
    params = _valid("append_request")
    with pytest.raises(rpc.RpcError, match="wrong cluster"):
        rpc.from_params("append_request", params, cluster=SID2)
    with pytest.raises(rpc.RpcError, match="misrouted message"):
        rpc.from_params("append_request", params, sid=CID)
    # hello_request may omit "to"; add_server_request may omit "to" and "cluster".
    hello = _valid("hello_request")
    hello.pop("to")
    assert rpc.from_params("hello_request", hello).dst is None
    with pytest.raises(rpc.RpcError, match="unknown method"):
        rpc.from_params("pre_vote", params)
    good = {"method": "append_request", "params": [params], "id": None}
    assert rpc.from_jsonrpc(good).METHOD == "append_request"
    with pytest.raises(rpc.RpcError, match="expecting notify"):
        rpc.from_jsonrpc({**good, "id": 1})
    with pytest.raises(rpc.RpcError, match="has 2 parameters"):
        rpc.from_jsonrpc({**good, "params": [params, params]})
    # UUIDs compare as lower-case strings.
    upper = _valid("vote_reply")
    upper["vote"] = upper["vote"].upper()
    assert rpc.from_params("vote_reply", upper).vote == upper["vote"].lower()


def test_addresses() -> None:
    assert rpc.validate_address("unix:/a/b.raft") is None
    assert rpc.validate_address("tcp:10.0.0.1:6643") is None
    assert rpc.validate_address("ssl:[::1]:6643") is None
    assert rpc.validate_address("tcp:ovn-central-0.example:6643") is None
    assert rpc.validate_address("tcp:10.0.0.1") is not None
    assert rpc.validate_address("punix:x") is not None


def test_every_message_type_builds_and_parses() -> None:
    common = {"src": SID2, "dst": CID, "cluster": CID}
    msgs: list[rpc.RaftRpc] = [
        rpc.HelloRequest(**common, address="unix:x"),
        rpc.AppendRequest(**common, term=3, prev_log_index=7, prev_log_term=2,
                          leader_commit=7, log=[rpc.Entry(3)], comment="heartbeat"),
        rpc.AppendReply(**common, term=3, log_end=9, prev_log_index=7, prev_log_term=2,
                        n_entries=1, result="OK"),
        rpc.VoteRequest(**common, term=4, last_log_index=8, last_log_term=3),
        rpc.VoteReply(**common, term=4, vote=SID2),
        rpc.AddServerRequest(src=SID2, address="unix:x"),
        rpc.AddServerReply(**common, success=False, comment="not leader",
                           remote_addresses=["unix:y"]),
        rpc.RemoveServerRequest(**common, server_id=SID2),
        rpc.RemoveServerReply(**common, success=True, target_server=SID2),
        rpc.RemoveServerReply(**common, success=True),
        rpc.InstallSnapshotRequest(**common, term=1, last_index=1, last_term=1,
                                   last_eid=SID2, last_servers={SID2: "unix:x"},
                                   election_timer=1000, data=[None, {}]),
        rpc.InstallSnapshotReply(**common, term=1, last_index=1, last_term=1),
        rpc.BecomeLeader(**common, term=5, comment="this server is shutting down"),
        rpc.ExecuteCommandRequest(**common, data=[None, {}], prereq=SID2, result=CID),
        rpc.ExecuteCommandReply(**common, result=CID, status="prerequisite check failed"),
    ]
    for m in msgs:
        wire = orjson.loads(orjson.dumps(m.to_jsonrpc()))
        assert wire["id"] is None and len(wire["params"]) == 1
        assert rpc.from_jsonrpc(wire) == m
    assert "commit_index" not in msgs[-1].to_json()
    assert "leadership_transfer" not in msgs[3].to_json()
    assert "target_server" not in msgs[9].to_json()


# --- the file ---------------------------------------------------------------------------


def test_real_file_records_round_trip() -> None:
    header_json, records_json = disk_samples()
    header = Header.from_json(header_json)
    assert header.sid == SID2 and header.cid == CID and header.name == "T"
    assert header.snapshot is not None and header.snapshot.index == 1
    assert header.snapshot.election_timer == 1000
    assert header.to_json() == header_json
    records = [record_from_json(r) for r in records_json]
    assert [type(r) for r in records[:4]] == [TermRecord, EntryRecord, CommitIndexRecord,
                                             EntryRecord]
    assert {type(r) for r in records} == {TermRecord, EntryRecord, CommitIndexRecord,
                                          VoteRecord, LeaderRecord}
    for r, j in zip(records, records_json, strict=True):
        assert r.to_json() == j


def test_restore_from_the_real_file() -> None:
    header_json, records_json = disk_samples()
    header = Header.from_json(header_json)
    assert header.snapshot is not None
    core = RaftCore.restore(header.sid, header.local_address, header.cid, header.snapshot,
                            [record_from_json(r) for r in records_json])
    assert (core.term, core.vote) == (3, SID2)
    assert (core.log_start, core.log_end, core.commit_index) == (2, 9, 8)
    assert len(core.servers) == 3 and core.election_timer == 1000
    assert core.current_eid == "56a1eaf8-257a-4c5d-805f-6f4939a9c5dd"
    rd = core.ready()
    applied = [c for c in rd.committed if c.data is not None]
    assert applied[0].is_snapshot and applied[0].index == 1
    assert [c.eid for c in applied[1:]] == ["110c5102-824c-4f51-a487-a2357277f3c9",
                                            "56a1eaf8-257a-4c5d-805f-6f4939a9c5dd"]
    assert [c.index for c in rd.committed] == list(range(1, 9))


def test_record_parsing_is_strict_and_ordered() -> None:
    assert isinstance(record_from_json({"note": "left", "comment": "x"}), NoteRecord)
    assert record_from_json({"commit_index": 5}) == CommitIndexRecord(commit_index=5)
    assert isinstance(record_from_json({"term": 2, "leader": SID2}), LeaderRecord)
    with pytest.raises(rpc.RpcError, match="all-zeros"):
        record_from_json({"term": 2, "vote": "00000000-0000-0000-0000-000000000000"})
    with pytest.raises(rpc.RpcError, match="Member 'eid' is present"):
        record_from_json({"term": 2, "index": 3, "eid": SID2})
    with pytest.raises(rpc.RpcError, match="Required 'term'"):
        record_from_json({"index": 3})
    joining = Header.from_json({"server_id": SID2, "name": "T", "local_address": "unix:a",
                                "remote_addresses": ["unix:b", "unix:a"]})
    assert joining.remote_addresses == ["unix:b"] and joining.snapshot is None
    with pytest.raises(rpc.RpcError, match="other than the local"):
        Header.from_json({"server_id": SID2, "name": "T", "local_address": "unix:a",
                          "remote_addresses": ["unix:a"]})
    with pytest.raises(rpc.RpcError, match="Required 'cluster_id'"):
        Header.from_json({"server_id": SID2, "name": "T", "local_address": "unix:a",
                          "prev_servers": {SID2: "unix:a"}})
