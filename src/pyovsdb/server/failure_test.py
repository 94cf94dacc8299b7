"""`cluster/failure-test`: the real server's Raft fault injection (`ovsdb/raft.c`,
`raft_unixctl_failure_test`), carried out by our cluster members at the same points.

Rules kept here:
- One scenario for the whole process, as in the real server (it is a global there):
  engaged with `cluster/failure-test SCENARIO` ("test engaged"), dismissed with
  `clear` ("test dismissed"); any other name is "unknown test scenario".
- A crash scenario ends the process at that point the way the real one does
  (`ovs_fatal`): the message `PROGRAM: Raft test: crash ...` on stderr and exit
  status 1, with no clean-up of any kind (no leadership transfer, no final writes);
  what was written to the log before that point stays there. (The real one's
  `exit()` also unlinks its pidfile and unix sockets; ours leaves them, stale files
  that our server and the OVS tools both recognise as such.)
  - crash-before-sending-append-request: a leader appending an entry (a client's
    transaction, a forwarded one, the no-op of its new term, a configuration or an
    election timer change) dies once the entry is written, before any append request
    carrying it leaves, even with no follower to send it to (a cluster of one, or
    followers all behind); crash-after-sending-append-request: just after they left.
  - crash-before/after-sending-execute-command-request: a follower forwarding a
    client's transaction to the leader, before or after the request left (after: only
    if it found a connection).
  - crash-before/after-sending-execute-command-reply: a server answering a forwarded
    transaction (the leader once it commits or refuses it, or while it is in
    progress; a follower that is asked by mistake), before or after the answer left.
  - crash-after-receiving-append-request-update: a follower receiving, from a leader
    it accepts, entries that are not all in its log yet (not a heartbeat, not a
    duplicate, not a request it rejects).
  - crash-before-sending-install-snapshot-reply: a server receiving a snapshot of
    the current term (or a newer one).
- The other scenarios change behaviour until cleared: delay-election (a follower's
  election timer gets one more election timer's worth, so it loses the next
  election), dont-send-vote-request (a candidate asks nobody for votes),
  stop-raft-rpc (the server is cut off from its cluster: it sends nothing, and reads
  nothing from its peers, whose messages wait unread until the test ends, as when the
  real server leaves its Raft sessions unrun), transfer-leadership (a leader hands
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
from ..raft.core import Ready
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
    member.net.set_paused(current == STOP_RAFT_RPC)


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
            m.net.set_paused(False)
        return "test dismissed"
    if scenario not in SCENARIOS:
        raise ValueError("unknown test scenario")
    current = scenario
    for m in _members:
        m.core.set_election_delay(scenario == DELAY_ELECTION)
        m.net.set_paused(scenario == STOP_RAFT_RPC)
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


def before_send(member: Any, rd: Ready) -> None:
    """Called with a batch the member is about to send and write (`rd`, whose
    messages a scenario may thin out)."""
    scenario = current
    if scenario is None:
        return
    if scenario == CRASH_BEFORE_APPEND and rd.initiated:
        # `raft_command_initiate`: the leader has written the new entry (it is in the
        # file after the crash) and sent nothing yet. A leader with no follower to
        # send to (alone, or all behind) crashes all the same.
        member._write(rd.records)
        crash(scenario)
    if scenario == CRASH_BEFORE_EXEC_REQUEST and any(
            isinstance(m, rpc.ExecuteCommandRequest) for m in rd.messages):
        crash(scenario)
    if scenario == CRASH_BEFORE_EXEC_REPLY and any(
            isinstance(m, rpc.ExecuteCommandReply) for m in rd.messages):
        crash(scenario)
    if scenario == STOP_RAFT_RPC:
        rd.messages.clear()
    elif scenario == DONT_SEND_VOTE_REQUEST:
        rd.messages[:] = [m for m in rd.messages if not isinstance(m, rpc.VoteRequest)]


def after_send(member: Any, rd: Ready, sent: list[rpc.RaftRpc]) -> None:
    """Called once the batch `rd` is sent (`sent`: the messages that found a
    connection) and written."""
    global current
    scenario = current
    if scenario is None:
        return
    if scenario == CRASH_AFTER_APPEND and rd.initiated:
        crash(scenario)
    if scenario == CRASH_AFTER_EXEC_REQUEST and any(
            isinstance(m, rpc.ExecuteCommandRequest) for m in sent):
        # Only once sent: the real follower's command fails at once ("not leader")
        # when there is no connection to the leader, before this point.
        crash(scenario)
    if scenario == CRASH_AFTER_EXEC_REPLY and any(
            isinstance(m, rpc.ExecuteCommandReply) for m in rd.messages):
        crash(scenario)
    if scenario == TRANSFER_AFTER_APPEND and rd.initiated:
        current = TRANSFER_LEADERSHIP


def received(member: Any, msg: rpc.RaftRpc) -> None:
    """Called for each Raft message received, before it is handled."""
    scenario = current
    core = member.core
    if (scenario == CRASH_AFTER_APPEND_UPDATE and isinstance(msg, rpc.AppendRequest)
            and core.would_append(msg)):
        crash(scenario)
    if (scenario == CRASH_BEFORE_SNAPSHOT_REPLY
            and isinstance(msg, rpc.InstallSnapshotRequest) and msg.term >= core.term):
        crash(scenario)


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
