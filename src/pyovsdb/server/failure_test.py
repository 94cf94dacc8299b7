"""`cluster/failure-test`: the real server's Raft fault injection (`ovsdb/raft.c`,
`raft_unixctl_failure_test`), carried out by our cluster members at the same points.

Rules kept here:
- One scenario for the whole process, as in the real server (it is a global there):
  engaged with `cluster/failure-test SCENARIO` ("test engaged"), dismissed with
  `clear` ("test dismissed"); any other name is "unknown test scenario".
- A crash scenario ends the process at that point the way the real one does
  (`ovs_fatal`): the message `PROGRAM: Raft test: crash ...` on stderr and exit
  status 1, with no clean-up of any kind (no leadership transfer, no final writes);
  what was written to the log before that point stays there.
  - crash-before-sending-append-request: a leader that has written new entries to
    its log dies before the append requests carrying them leave;
    crash-after-sending-append-request: just after they left.
  - crash-before/after-sending-execute-command-request: a follower forwarding a
    client's transaction to the leader, before or after the request left.
  - crash-before/after-sending-execute-command-reply: a leader answering a forwarded
    transaction, before or after the answer left.
  - crash-after-receiving-append-request-update: a follower receiving entries.
  - crash-before-sending-install-snapshot-reply: a server receiving a snapshot.
- The other scenarios change behaviour until cleared: delay-election (a follower's
  election timer gets one more election timer's worth, so it loses the next
  election), dont-send-vote-request (a candidate asks nobody for votes),
  stop-raft-rpc (no Raft message is sent or handled, no connection accepted: the
  server is cut off from its cluster), transfer-leadership (a leader hands
  leadership over at the next turn, then the test ends by itself), and
  transfer-leadership-after-sending-append-request / -after-starting-to-add (the
  same, once a leader has sent new entries / started adding a server).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from ..raft import rpc
from ..util import vlog

log = logging.getLogger("raft")

CRASH_BEFORE_APPEND = "crash-before-sending-append-request"
CRASH_AFTER_APPEND = "crash-after-sending-append-request"
CRASH_BEFORE_EXEC_REPLY = "crash-before-sending-execute-command-reply"
CRASH_AFTER_EXEC_REPLY = "crash-after-sending-execute-command-reply"
CRASH_BEFORE_EXEC_REQUEST = "crash-before-sending-execute-command-request"
CRASH_AFTER_EXEC_REQUEST = "crash-after-sending-execute-command-request"
CRASH_AFTER_APPEND_UPDATE = "crash-after-receiving-append-request-update"
CRASH_BEFORE_SNAPSHOT_REPLY = "crash-before-sending-install-snapshot-reply"
DELAY_ELECTION = "delay-election"
DONT_SEND_VOTE_REQUEST = "dont-send-vote-request"
STOP_RAFT_RPC = "stop-raft-rpc"
TRANSFER_LEADERSHIP = "transfer-leadership"
TRANSFER_AFTER_APPEND = "transfer-leadership-after-sending-append-request"
TRANSFER_AFTER_ADD = "transfer-leadership-after-starting-to-add"

SCENARIOS = (CRASH_BEFORE_APPEND, CRASH_AFTER_APPEND, CRASH_BEFORE_EXEC_REPLY,
             CRASH_AFTER_EXEC_REPLY, CRASH_BEFORE_EXEC_REQUEST, CRASH_AFTER_EXEC_REQUEST,
             CRASH_AFTER_APPEND_UPDATE, CRASH_BEFORE_SNAPSHOT_REPLY, DELAY_ELECTION,
             DONT_SEND_VOTE_REQUEST, STOP_RAFT_RPC, TRANSFER_AFTER_APPEND,
             TRANSFER_AFTER_ADD, TRANSFER_LEADERSHIP)

_CRASH_TEXT = {
    CRASH_BEFORE_APPEND: "crash before sending append_request.",
    CRASH_AFTER_APPEND: "crash after sending append_request.",
    CRASH_BEFORE_EXEC_REPLY: "crash before sending execute_command_reply",
    CRASH_AFTER_EXEC_REPLY: "crash after sending execute_command_reply.",
    CRASH_BEFORE_EXEC_REQUEST: "crash before sending execute_command_request",
    CRASH_AFTER_EXEC_REQUEST: "crash after sending execute_command_request",
    CRASH_AFTER_APPEND_UPDATE: "crash after receiving append_request with update.",
    CRASH_BEFORE_SNAPSHOT_REPLY: "crash before sending install_snapshot_reply",
}

# The scenario engaged in this process, None for none.
current: str | None = None
_members: list[Any] = []   # the cluster members of this process (ClusteredDb)


def register(member: Any) -> None:
    _members.append(member)
    if current == DELAY_ELECTION:
        member.core.set_election_delay(True)


def unregister(member: Any) -> None:
    if member in _members:
        _members.remove(member)


def engage(scenario: str) -> str:
    """The `cluster/failure-test` command; raises ValueError for an unknown name."""
    global current
    if scenario == "clear":
        current = None
        for m in _members:
            m.core.set_election_delay(False)
        return "test dismissed"
    if scenario not in SCENARIOS:
        raise ValueError("unknown test scenario")
    current = scenario
    for m in _members:
        m.core.set_election_delay(scenario == DELAY_ELECTION)
        m.process()
    return "test engaged"


def crash(scenario: str) -> None:
    """Die as `ovs_fatal` does: message on stderr, exit status 1, nothing else run."""
    text = f"{vlog.current().program}: Raft test: {_CRASH_TEXT[scenario]}\n"
    try:
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stderr.write(text)
        sys.stderr.flush()
    finally:
        os._exit(1)


def _has_entries(m: rpc.RaftRpc) -> bool:
    return isinstance(m, rpc.AppendRequest) and bool(m.log)


def before_send(member: Any, messages: list[rpc.RaftRpc], records: list[Any]) -> None:
    """Called with a batch the member is about to send (`messages`, which a scenario
    may thin out) and write (`records`, which a crash before sending writes first, as
    the real leader has written its entry by then)."""
    scenario = current
    if scenario is None:
        return
    core = member.core
    if scenario == CRASH_BEFORE_APPEND and core.is_leader and any(
            map(_has_entries, messages)):
        if records:
            member._write(records)
        crash(scenario)
    if scenario == CRASH_BEFORE_EXEC_REQUEST and any(
            isinstance(m, rpc.ExecuteCommandRequest) for m in messages):
        crash(scenario)
    if scenario == CRASH_BEFORE_EXEC_REPLY and any(
            isinstance(m, rpc.ExecuteCommandReply) for m in messages):
        crash(scenario)
    if scenario == STOP_RAFT_RPC:
        messages.clear()
    elif scenario == DONT_SEND_VOTE_REQUEST:
        messages[:] = [m for m in messages if not isinstance(m, rpc.VoteRequest)]


def after_send(member: Any, sent: list[rpc.RaftRpc]) -> None:
    global current
    scenario = current
    if scenario is None:
        return
    if scenario == CRASH_AFTER_APPEND and member.core.is_leader and any(
            map(_has_entries, sent)):
        crash(scenario)
    if scenario == CRASH_AFTER_EXEC_REQUEST and any(
            isinstance(m, rpc.ExecuteCommandRequest) for m in sent):
        crash(scenario)
    if scenario == CRASH_AFTER_EXEC_REPLY and any(
            isinstance(m, rpc.ExecuteCommandReply) for m in sent):
        crash(scenario)
    if scenario == TRANSFER_AFTER_APPEND and member.core.is_leader and any(
            map(_has_entries, sent)):
        current = TRANSFER_LEADERSHIP


def received(member: Any, msg: rpc.RaftRpc) -> bool:
    """Called for each Raft message received; False means: do not handle it."""
    scenario = current
    if scenario is None:
        return True
    if scenario == STOP_RAFT_RPC:
        return False
    if scenario == CRASH_AFTER_APPEND_UPDATE and _has_entries(msg):
        crash(scenario)
    if scenario == CRASH_BEFORE_SNAPSHOT_REPLY and isinstance(
            msg, rpc.InstallSnapshotRequest):
        crash(scenario)
    return True


def turn(member: Any) -> None:
    """Once per turn of the member (after each input): the leadership scenarios."""
    global current
    scenario = current
    if scenario == TRANSFER_AFTER_ADD and member.core.add_servers:
        current = scenario = TRANSFER_LEADERSHIP
    if scenario == TRANSFER_LEADERSHIP:
        # As the real server: the snapshot path's hand-over, then the test is over.
        current = None
        if member.core.is_leader:
            member.role_log.transferring_for_snapshot()
            member.core.notify_snapshot_recommended()
