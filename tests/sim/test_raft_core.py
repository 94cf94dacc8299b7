"""RaftCore, one behaviour at a time: elections, durability before speech, replication
and conflicts, the commit rule, membership, snapshots, leadership transfer, election
timer changes, forwarded commands, and seed 003's commit heartbeats."""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from raft_harness import CID, DATA0, EID0, SIDS, Net, addr

from pyovsdb.raft import rpc
from pyovsdb.raft.core import (
    BAD_PREREQ,
    INCOMPLETE,
    LEADER,
    LOSSES_BEFORE_TURN,
    NOT_LEADER,
    SHUTDOWN,
    SUCCESS,
    TIMEOUT,
    TURN_MSEC,
    Command,
    RaftConfig,
    RaftCore,
    RaftError,
    initial_snapshot,
)
from pyovsdb.raft.records import (
    CommitIndexRecord,
    EntryRecord,
    LeaderRecord,
    NoteRecord,
    Snapshot,
    SnapshotRecord,
    TermRecord,
    VoteRecord,
)


def cmd_data(n: Any) -> list[Any]:
    return [None, {"kv": {"n": n}, "_date": 0, "_is_diff": True}]


def committed_cluster(n: int = 3, leader: int = 0, **kw: Any) -> Net:
    net = Net.cluster(n, **kw)
    net.elect(leader)
    net.run()
    if not net.config["sync_commit"]:
        net.advance(net.core(leader).election_timer // 3 + 1)
    assert all(c.commit_index == net.core(leader).commit_index for c in net.cores.values())
    return net


# --- elections --------------------------------------------------------------------------


def test_single_server_elects_itself_and_commits_its_noop() -> None:
    sid = SIDS[0]
    core = RaftCore.create(sid, addr(0), CID, initial_snapshot(sid, addr(0), DATA0, EID0))
    assert core.is_leader and core.term == 1
    rd = core.ready()
    assert [type(r) for r in rd.records] == [VoteRecord, LeaderRecord, EntryRecord]
    assert rd.records[2].to_json() == {"term": 1, "index": 2}
    assert [(c.index, c.is_snapshot) for c in rd.committed] == [(1, True)]
    assert rd.committed[0].data == DATA0 and rd.committed[0].eid == EID0
    assert core.commit_index == 1          # its own write is not durable yet
    core.persisted(rd.records[-1].ticket)
    rd = core.ready()
    assert core.commit_index == 2
    assert [(c.index, c.is_snapshot) for c in rd.committed] == [(2, False)]
    assert rd.records[-1].to_json() == {"commit_index": 2}


def test_timeouts_elect_exactly_one_leader() -> None:
    net = Net.cluster(3)
    net.advance(3000)
    leaders = [c for c in net.cores.values() if c.role == LEADER]
    assert len(leaders) == 1
    lead = leaders[0]
    assert all(c.term == lead.term and c.leader_sid == lead.sid for c in net.cores.values())
    assert all(c.commit_index == 2 for c in net.cores.values())   # the no-op
    assert all(c.is_connected for c in net.cores.values())


def test_election_timeout_is_randomized_from_the_injected_rng() -> None:
    def timeouts(seed: int) -> list[int]:
        net = Net.cluster(3)
        for i, c in enumerate(net.cores.values()):
            c.rng = random.Random(seed * 10 + i)
            c._reset_election_timer()
        return [c.election_timeout for c in net.cores.values()]

    assert timeouts(1) == timeouts(1)
    assert timeouts(1) != timeouts(2)
    assert all(1000 <= t < 2000 for t in timeouts(3))


def test_vote_requests_wait_until_the_vote_is_durable() -> None:
    net = Net.cluster(3)
    c = net.core(0)
    net.held.add(c.sid)
    c.take_leadership(net.now)
    net.flush(c)
    assert not net.queue
    assert isinstance(net.records[c.sid][-1], VoteRecord)
    net.release_disk(c.sid)
    reqs = [m for _, _, m in net.queue]
    assert {type(m) for m in reqs} == {rpc.VoteRequest} and len(reqs) == 2
    assert all(m.leadership_transfer and m.term == 1 for m in reqs)   # type: ignore[attr-defined]


def test_vote_replies_wait_until_the_vote_is_durable() -> None:
    net = Net.cluster(3)
    voter = net.core(1)
    net.held.add(voter.sid)
    net.core(0).take_leadership(net.now)
    net.flush(net.core(0))
    net.run()
    assert voter.vote == SIDS[0]
    assert not any(isinstance(m, rpc.VoteReply) and m.src == voter.sid for m in net.sent)
    net.release_disk(voter.sid)
    assert any(isinstance(m, rpc.VoteReply) and m.src == voter.sid for m in net.sent)


def test_voters_refuse_a_less_up_to_date_log() -> None:
    net = committed_cluster(3)
    net.down.add(SIDS[2])
    net.core(0).propose(cmd_data(1), net.now)
    net.flush(net.core(0))
    net.run()
    net.down.discard(SIDS[2])
    stale = net.core(2)
    stale.take_leadership(net.now)
    net.flush(stale)
    net.run()
    assert not stale.is_leader
    assert net.core(1).vote != stale.sid


def test_disruptive_vote_requests_are_ignored() -> None:
    net = committed_cluster(3)
    term = net.core(0).term
    rogue = net.core(2)
    rogue._start_election(False)        # as if its timer fired, without transfer
    net.flush(rogue)
    net.run()
    assert net.core(0).is_leader and net.core(0).term == term
    assert net.core(1).term == term and net.core(1).vote != rogue.sid
    assert rogue.role == "candidate"


def test_leader_steps_down_without_a_quorum() -> None:
    net = committed_cluster(3)
    net.down.update(SIDS[1:])
    net.advance(5000, step=5)
    assert not net.core(0).is_leader


# --- replication ------------------------------------------------------------------------


def test_follower_replies_only_after_its_write_is_durable() -> None:
    net = committed_cluster(3)
    lead, slow = net.core(0), net.core(1)
    net.held.add(slow.sid)
    cmd = lead.propose(cmd_data(1), net.now)
    net.flush(lead)
    net.run()
    assert slow.log_end == lead.log_end
    replies = [m for m in net.sent if isinstance(m, rpc.AppendReply) and m.src == slow.sid
               and m.log_end == slow.log_end]
    assert not replies
    assert cmd.status == SUCCESS            # the leader and the other follower suffice
    net.release_disk(slow.sid)
    assert any(isinstance(m, rpc.AppendReply) and m.src == slow.sid
               and m.log_end == slow.log_end for m in net.sent)


def test_leader_sends_before_its_write_but_counts_itself_only_after() -> None:
    net = committed_cluster(3)
    lead = net.core(0)
    net.held.add(lead.sid)
    net.drop = lambda m: m.dst == SIDS[2]
    cmd = lead.propose(cmd_data(1), net.now)
    net.flush(lead)
    assert any(isinstance(m, rpc.AppendRequest) and m.log for _, _, m in net.queue)
    net.run()
    assert net.core(1).log_end == lead.log_end        # the follower has it, durably
    assert not cmd.done and lead.commit_index < cmd.index
    net.release_disk(lead.sid)
    assert cmd.status == SUCCESS and lead.commit_index == cmd.index


def test_follower_log_end_caps_next_index_in_one_step() -> None:
    net = committed_cluster(3)
    lead = net.core(0)
    net.down.add(SIDS[2])
    for i in range(5):
        lead.propose(cmd_data(i), net.now)
    net.flush(lead)
    net.run()
    net.down.discard(SIDS[2])
    net.sent.clear()
    net.advance(400)
    lagging = net.core(2)
    rejects = [m for m in net.sent if isinstance(m, rpc.AppendReply) and m.src == lagging.sid
               and m.result == "inconsistency"]
    assert len(rejects) == 1 and rejects[0].comment == "mismatch past end of log"
    catchup = [m for m in net.sent if isinstance(m, rpc.AppendRequest)
               and m.dst == lagging.sid and m.log]
    assert len(catchup[0].log) == 5                    # all missing entries at once
    assert lagging.log_end == lead.log_end and lagging.commit_index == lead.commit_index


def test_ready_names_the_entries_appended_as_leader() -> None:
    """`Ready.initiated`: the entries this server appended as leader (the no-op of its
    term, commands), where the real server's append-request crashes happen; none for
    what a follower receives."""
    sid = SIDS[0]
    alone = RaftCore.create(sid, addr(0), CID, initial_snapshot(sid, addr(0), DATA0, EID0))
    assert alone.ready().initiated == [2]
    net = committed_cluster(3)
    lead, f = net.core(0), net.core(1)
    lead.propose(cmd_data(1), net.now)
    lead.propose(cmd_data(2), net.now)
    rd = lead.ready()
    assert rd.initiated == [lead.log_end - 2, lead.log_end - 1]
    assert [r.index for r in rd.records if isinstance(r, EntryRecord)] == rd.initiated
    rq = next(m for m in rd.messages if isinstance(m, rpc.AppendRequest) and m.dst == f.sid)
    f.step(rq, net.now)
    frd = f.ready()
    assert [r.index for r in frd.records if isinstance(r, EntryRecord)] == rd.initiated
    assert frd.initiated == []
    assert lead.ready().initiated == []


def test_would_append_says_whether_a_request_adds_entries() -> None:
    """Where `crash-after-receiving-append-request-update` fires: a request from an
    accepted leader whose entries are not all in the log yet (past its end, or in
    place of conflicting ones)."""
    net = committed_cluster(3)
    lead, f = net.core(0), net.core(1)
    net.sent.clear()
    lead.propose(cmd_data(1), net.now)
    net.flush(lead)
    rq = next(m for m in net.sent if isinstance(m, rpc.AppendRequest) and m.dst == f.sid)
    assert rq.log and f.would_append(rq)
    assert not f.would_append(replace(rq, log=[]))                  # a heartbeat
    assert not f.would_append(replace(rq, term=rq.term - 1))        # a stale term
    assert not f.would_append(replace(rq, prev_log_index=rq.prev_log_index + 5))
    assert not f.would_append(replace(rq, prev_log_term=rq.prev_log_term + 1))
    assert not lead.would_append(rq)                                # we lead this term
    net.run()
    assert f.last_applied == lead.commit_index == lead.log_end - 1
    assert not f.would_append(rq)                                   # a duplicate
    last = f.log_end - 1
    newer = replace(rq, term=rq.term + 1, prev_log_index=last - 1,
                    prev_log_term=f.term_at(last - 1), log=[rpc.Entry(rq.term + 1)])
    assert f.would_append(newer)                                    # a conflict
    assert lead.would_append(newer)                                 # from a newer leader
    # Reaching back into the snapshot: only what lies past it counts.
    f.store_snapshot({"at": f.last_applied}, net.now)
    net.flush(f)
    assert f.log_start == f.log_end == last + 1
    early = replace(rq, prev_log_index=last - 2, prev_log_term=f.snap.term,
                    log=[rpc.Entry(f.snap.term), rpc.Entry(f.snap.term)])
    assert not f.would_append(early)
    assert f.would_append(replace(early, log=[*early.log, rpc.Entry(f.snap.term)]))


def test_conflicting_uncommitted_entries_are_truncated() -> None:
    net = committed_cluster(3)
    old = net.core(0)
    net.down.add(old.sid)                              # partitioned away
    lost = [old.propose(cmd_data(f"lost{i}"), net.now) for i in range(3)]
    net.flush(old)
    net.queue.clear()
    net.down.discard(old.sid)
    net.drop = lambda m: old.sid in (m.src, m.dst)
    new = net.elect(1)
    kept = new.propose(cmd_data("kept"), net.now)
    net.flush(new)
    net.run()
    assert kept.status == SUCCESS
    net.drop = lambda m: False
    net.advance(400)
    assert old.role != LEADER and old.term == new.term
    assert [e.term for e in old.entries] == [e.term for e in new.entries]
    assert [c.status for c in lost] == ["lost leadership"] * 3
    assert net.data_applied(old.sid) == net.data_applied(new.sid)
    # OVS records a truncation by appending an entry with an older index.
    indexes = [r.index for r in net.records[old.sid] if isinstance(r, EntryRecord)]
    assert any(b <= a for a, b in itertools.pairwise(indexes))


def test_commit_counts_replicas_only_for_current_term_entries() -> None:
    """Figure 3.7: s1 appends an entry in term 1 that only it has; s2 wins term 2
    and appends its own no-op there, unseen; s1 restarts and wins term 3 with s3's
    vote, and copies its term-1 entry to s3. A majority now holds it, but it is not
    committed until the term-3 no-op after it is (s2's log could still win)."""
    net = Net.cluster(3, max_append_entries=1)
    s1 = net.elect(0)
    net.run()
    base = s1.log_end
    net.drop = lambda m: m.src == s1.sid and isinstance(m, rpc.AppendRequest) and bool(m.log)
    s1.propose(cmd_data("old"), net.now)               # index `base`, term 1, s1 only
    net.flush(s1)
    net.run()
    net.drop = lambda m: (m.src == s1.sid or m.dst == s1.sid or (
        m.src == SIDS[1] and isinstance(m, rpc.AppendRequest)))
    s2 = net.elect(1)                                  # term 2; its no-op at `base`
    assert s2.entry(base).term == 2 and net.core(2).log_end == base
    net.down.add(s2.sid)
    net.drop = lambda m: False
    s1 = net.restart(0)
    while not s1.is_leader:                            # term 2 is s2's; term 3 is ours
        s1.take_leadership(net.now)
        net.flush(s1)
        net.drop = lambda m: (isinstance(m, rpc.AppendRequest) and m.dst == SIDS[2]
                              and any(e.term == s1.term for e in m.log))
        net.run()
    assert s1.term == 3
    net.advance(400)                                   # a heartbeat finds s3's log end
    s3 = net.core(2)
    assert s3.log_end == base + 1 and s3.entry(base).term == 1   # a majority has it...
    assert s1.commit_index < base                                # ...not committed
    net.drop = lambda m: False
    net.advance(400)
    assert s1.commit_index == s1.log_end - 1 == base + 1
    assert net.data_applied(s1.sid) == net.data_applied(s3.sid) != []


def test_restore_replays_what_was_persisted() -> None:
    net = committed_cluster(3)
    lead = net.core(0)
    for i in range(4):
        lead.propose(cmd_data(i), net.now)
    net.flush(lead)
    net.run()
    f = net.core(1)
    snap = Snapshot(1, 1, DATA0, EID0, {SIDS[i]: addr(i) for i in range(3)})
    again = RaftCore.restore(f.sid, f.local_address, CID, snap, net.records[f.sid])
    assert (again.term, again.vote, again.log_end) == (f.term, f.vote, f.log_end)
    assert again.commit_index <= f.commit_index and again.entries == f.entries
    e = EntryRecord(index=2, entry=rpc.Entry(1))
    with pytest.raises(RaftError, match="regresses commit index"):
        RaftCore.restore(f.sid, f.local_address, CID, snap,
                         [e, CommitIndexRecord(commit_index=2),
                          CommitIndexRecord(commit_index=1)])
    with pytest.raises(RaftError, match="skips past expected index"):
        RaftCore.restore(f.sid, f.local_address, CID, snap,
                         [EntryRecord(index=3, entry=rpc.Entry(1))])
    with pytest.raises(RaftError, match="but commit index is already"):
        RaftCore.restore(f.sid, f.local_address, CID, snap,
                         [e, EntryRecord(index=3, entry=rpc.Entry(1)),
                          CommitIndexRecord(commit_index=3), e])
    with pytest.raises(RaftError, match="does not belong"):
        RaftCore.restore(SIDS[4], addr(4), CID, snap, [])


# --- commands ---------------------------------------------------------------------------


def test_follower_forwards_commands_with_a_prerequisite() -> None:
    net = committed_cluster(3)
    f = net.core(1)
    cmd = f.propose_command(cmd_data(1), EID0, net.now)
    net.flush(f)
    req = [m for _, _, m in net.queue if isinstance(m, rpc.ExecuteCommandRequest)]
    assert len(req) == 1 and req[0].prereq == EID0 and req[0].result == cmd.eid
    net.run()
    assert cmd.status == SUCCESS and cmd.index == net.core(0).commit_index
    reply = next(m for m in net.sent if isinstance(m, rpc.ExecuteCommandReply))
    assert reply.to_json()["status"] == "success"
    assert reply.commit_index == cmd.index
    assert f.commit_index >= cmd.index                 # seed 003: learned at once
    assert net.data_applied(f.sid) == [cmd.eid]


def test_command_statuses() -> None:
    net = committed_cluster(3)
    lead, f = net.core(0), net.core(1)
    assert lead.propose_command(cmd_data(1), SIDS[4]).status == BAD_PREREQ
    assert f.propose(cmd_data(1)).status == NOT_LEADER          # no prereq: not forwarded
    stale = f.propose_command(cmd_data(2), SIDS[4], net.now)    # wrong prereq, forwarded
    net.flush(f)
    net.run()
    assert stale.status == BAD_PREREQ
    reply = [m for m in net.sent if isinstance(m, rpc.ExecuteCommandReply)][-1]
    assert reply.status == "prerequisite check failed" and "commit_index" not in reply.to_json()
    f.leader_sid = None
    assert f.propose_command(cmd_data(3), EID0).status == NOT_LEADER
    f.leave(net.now)
    assert f.propose_command(cmd_data(4), EID0).status == SHUTDOWN


def test_duplicate_forwarded_request_is_executed_once() -> None:
    net = committed_cluster(3)
    f = net.core(1)
    cmd = f.propose_command(cmd_data(1), EID0, net.now)
    net.flush(f)
    _, src, req = net.queue[0]
    net.queue.append((0, src, req))                  # the network duplicates it
    net.run()
    net.deliver(src, req)                            # and once more, late
    net.run()
    assert cmd.status == SUCCESS
    assert net.data_applied(SIDS[0]) == [cmd.eid]


def forward(net: Net, f: RaftCore, data: Any, prereq: str | None) -> Command:
    """A command proposed on follower `f`, with everything it causes delivered."""
    cmd = f.propose_command(data, prereq, net.now)
    net.flush(f)
    net.run()
    return cmd


def test_held_forwarded_commands_lose_the_race_to_the_leaders_own() -> None:
    """While the leader's host holds forwarded commands (its own transactions wait
    for their turn), they are neither appended nor answered; its own command goes
    first and the held ones then fail their prerequisite, to be retried."""
    net = committed_cluster(3)
    lead, f = net.core(0), net.core(1)
    lead.set_hold_forwarded(True, net.now)
    held = forward(net, f, cmd_data(1), EID0)
    assert held.status == INCOMPLETE and lead.current_eid == EID0
    assert not [m for m in net.sent if isinstance(m, rpc.ExecuteCommandReply)]
    own = lead.propose_command(cmd_data(2), EID0, net.now)
    lead.set_hold_forwarded(False, net.now)
    net.flush(lead)
    net.run()
    assert own.status == SUCCESS and held.status == BAD_PREREQ
    assert net.data_applied(SIDS[0]) == [own.eid]
    # Released with nothing of the leader's own in between, a held command is
    # appended.
    lead.set_hold_forwarded(True, net.now)
    again = forward(net, f, cmd_data(3), own.eid)
    assert again.status == INCOMPLETE
    lead.set_hold_forwarded(False, net.now)
    net.flush(lead)
    net.run()
    assert again.status == SUCCESS
    assert net.data_applied(SIDS[0]) == [own.eid, again.eid]


def test_held_forwarded_commands_are_refused_when_leadership_is_lost() -> None:
    net = committed_cluster(3)
    lead, f = net.core(0), net.core(1)
    lead.set_hold_forwarded(True, net.now)
    held = forward(net, f, cmd_data(1), EID0)
    lead.transfer_leadership("requested", net.now)
    net.flush(lead)
    net.run()
    assert lead.role != "leader" and not lead.hold_forwarded
    reply = [m for m in net.sent if isinstance(m, rpc.ExecuteCommandReply)]
    assert reply and reply[0].status == "not leader"
    assert held.status != INCOMPLETE


def test_a_busy_leader_times_out_what_it_forwarded_as_a_follower() -> None:
    """A command forwarded to a leader that never got it, by a server that is then
    elected: it times out even while a steady stream of entries keeps re-arming the
    new leader's heartbeat timer (so its pings never fire)."""
    net = committed_cluster(3)
    f = net.core(1)
    net.drop = lambda m: isinstance(m, rpc.ExecuteCommandRequest)
    lost = forward(net, f, cmd_data("lost"), EID0)
    net.drop = lambda m: False
    net.elect(1)
    pings = net.core(1).stats["heartbeats"]
    for i in range(3 * f.election_timer // 50):
        f.propose(cmd_data(i), net.now)
        net.flush(f)
        net.advance(50)
        if lost.status != INCOMPLETE:
            break
    assert lost.status == TIMEOUT
    assert net.now - lost.timestamp <= 3 * f.election_timer
    assert net.core(1).stats["heartbeats"] == pings     # the ping timer never fired


def test_a_server_that_keeps_losing_races_gets_the_next_turn() -> None:
    """Under a steady load the server that learns commits last would lose every race
    for the prerequisite; after LOSSES_BEFORE_TURN in a row the leader keeps the
    next turn for it."""
    net = committed_cluster(3)
    lead, f1, f2 = net.core(0), net.core(1), net.core(2)
    won_eid = EID0
    for i in range(LOSSES_BEFORE_TURN):
        assert not lead.turn_owed()
        won = forward(net, f2, cmd_data(f"a{i}"), won_eid)
        lost = forward(net, f1, cmd_data(f"b{i}"), won_eid)     # stale prerequisite
        assert won.status == SUCCESS and lost.status == BAD_PREREQ
        assert won.eid is not None
        won_eid = won.eid
    assert lead.turn_owed()
    # f2 is quicker again, but f1 is owed the turn: f2's command waits ...
    later = forward(net, f2, cmd_data("c"), won_eid)
    assert later.status == INCOMPLETE
    # ... until f1's, executed again against what it lost to, is appended; f2's then
    # lost its race in turn.
    again = forward(net, f1, cmd_data("b"), won_eid)
    assert again.status == SUCCESS and later.status == BAD_PREREQ
    assert net.data_applied(SIDS[0])[-2:] == [won_eid, again.eid]


def test_a_turn_not_taken_expires() -> None:
    net = committed_cluster(3)
    lead, f1, f2 = net.core(0), net.core(1), net.core(2)
    for i in range(LOSSES_BEFORE_TURN):
        lost = forward(net, f1, cmd_data(f"x{i}"), SIDS[4])  # wrong prerequisite
        assert lost.status == BAD_PREREQ
    assert lead.turn_owed()
    held = forward(net, f2, cmd_data("y"), EID0)
    assert held.status == INCOMPLETE
    net.advance(TURN_MSEC + 1)           # f1 never comes back
    net.run()
    assert not lead.turn_owed() and held.status == SUCCESS


def test_forwarded_command_completes_when_its_reply_is_lost() -> None:
    net = committed_cluster(3)
    f = net.core(1)
    net.drop = lambda m: isinstance(m, rpc.ExecuteCommandReply)
    cmd = f.propose_command(cmd_data(1), EID0, net.now)
    net.flush(f)
    net.run()
    assert cmd.status == SUCCESS and cmd.index == f.commit_index


def test_deposed_leader_does_not_fail_a_command_that_still_commits() -> None:
    net = committed_cluster(3)
    old = net.core(0)
    net.drop = lambda m: isinstance(m, rpc.AppendReply)      # nothing commits yet
    cmd = old.propose(cmd_data(1), net.now)
    net.flush(old)
    net.run()
    net.drop = lambda m: False
    new = net.elect(1)                                       # has the entry
    net.run()
    assert not old.is_leader and new.is_leader
    assert cmd.status == SUCCESS and net.data_applied(new.sid) == [cmd.eid]


def test_pending_commands_time_out() -> None:
    net = committed_cluster(3)
    f = net.core(1)
    net.drop = lambda m: isinstance(m, rpc.ExecuteCommandRequest)
    cmd = f.propose_command(cmd_data(1), EID0, net.now)
    net.flush(f)
    net.advance(2 * f.election_timer - 50, step=10)
    assert not cmd.done
    net.advance(500, step=10)
    assert cmd.status == "timeout"


# --- membership ---------------------------------------------------------------------------

_LINE = re.compile(r'^(unix#0|unix#1): (send|received) notification, method="(\w+)", '
                   r'params=\[(.*)\]$')


def _captured_leader_view() -> list[dict[str, Any]]:
    """The messages s1 (the leader) exchanged with s2 and s3 while they joined and
    s2 forwarded a transaction, as captured from OVS 3.1 (heartbeats are not logged)."""
    path = Path(__file__).parent / "data" / "ovs_wire_disk_samples.txt"
    out = []
    for line in path.read_text().splitlines():
        m = _LINE.match(line)
        if m:
            out.append({"method": m.group(3), **orjson.loads(m.group(4))})
        if len(out) == 28:      # the rest of the file is other servers' views
            break
    return out


def test_joining_reproduces_the_real_servers_exchange() -> None:
    """Two servers join a one-server cluster and one forwards a command: the leader's
    messages are the ones OVS 3.1 sent, member for member."""
    net = Net()
    s1 = net.add(RaftCore.create(SIDS[0], addr(0), CID,
                                 initial_snapshot(SIDS[0], addr(0), DATA0, EID0),
                                 config=net.cfg()))
    assert s1.commit_index == 2
    s2 = net.add(RaftCore.join(SIDS[1], addr(1), [addr(0)], config=net.cfg()))
    # As in the capture, s3 asks to join while s2's configuration is uncommitted.
    while not any(isinstance(m, rpc.AppendRequest) and m.log and m.log[0].servers
                  for m in net.sent):
        _, src, m = net.queue.popleft()
        net.deliver(src, m)
    s3 = net.add(RaftCore.join(SIDS[2], addr(2), [addr(0)], config=net.cfg()))
    net.run()
    assert not s2.joining
    assert not s3.joining and len(s1.servers) == 3
    cmd = s2.propose_command([None, {"kv": {"1334d3fe-639c-46d2-91aa-de870772b6c8":
                                            {"k": "a", "v": "1"}},
                                     "_date": 1796006135956, "_is_diff": True}],
                             EID0, net.now)
    net.flush(s2)
    net.run()
    assert cmd.status == SUCCESS and cmd.index == 5
    ours = [{"method": m.METHOD, **m.to_json()} for m in net.sent
            if m.comment != "heartbeat"
            and (SIDS[0] in (m.src, m.dst) or m.address_hint == addr(0))]
    theirs = _captured_leader_view()
    # The command's entry id is random; take ours.
    real_eid = "110c5102-824c-4f51-a487-a2357277f3c9"
    theirs = orjson.loads(orjson.dumps(theirs).replace(real_eid.encode(), cmd.eid.encode()))

    def key(m: dict[str, Any]) -> str:
        m = dict(m)
        if "remote_addresses" in m:
            m["remote_addresses"] = sorted(m["remote_addresses"])
        return orjson.dumps(m, option=orjson.OPT_SORT_KEYS).decode()

    missing = [m for m in theirs if key(m) not in {key(o) for o in ours}]
    assert not missing, missing
    assert [m["method"] for m in ours if m["method"] != "hello_request"][:8] == [
        "add_server_request", "append_request", "append_reply",
        "install_snapshot_request", "install_snapshot_reply", "append_request",
        "append_reply", "append_request"]


def test_add_server_requests_to_a_follower_point_to_the_others() -> None:
    net = committed_cluster(3)
    joiner = net.add(RaftCore.join(SIDS[3], addr(3), [addr(1)], config=net.cfg()))
    net.run()
    no = next(m for m in net.sent if isinstance(m, rpc.AddServerReply))
    assert (no.success, no.comment) == (False, "not leader")
    assert addr(0) in no.remote_addresses
    net.advance(1100)                                 # retries reach the leader too
    assert not joiner.joining and SIDS[3] in net.core(0).servers
    assert len(net.core(2).servers) == 4


def test_a_joiner_is_done_when_its_addition_commits_even_without_the_reply() -> None:
    net = committed_cluster(3)
    net.drop = lambda m: isinstance(m, rpc.AddServerReply)
    joiner = net.add(RaftCore.join(SIDS[3], addr(3), [addr(0)], config=net.cfg()))
    net.run()                                 # the commit reaches it with a heartbeat
    assert SIDS[3] in net.core(0).servers
    assert not joiner.joining and joiner.is_connected
    assert net.data_applied(joiner.sid) == net.data_applied(SIDS[0])


def test_a_joiner_restarted_mid_join_asks_again() -> None:
    net = committed_cluster(3)
    net.drop = lambda m: m.dst == SIDS[3] and (
        isinstance(m, rpc.AddServerReply)
        or (isinstance(m, rpc.AppendRequest) and any(e.servers for e in m.log)))
    joiner = net.add(RaftCore.join(SIDS[3], addr(3), [addr(0)], config=net.cfg()))
    net.run()
    rec = next(r for r in net.records[joiner.sid] if isinstance(r, SnapshotRecord))
    assert rec.installed and joiner.joining
    with pytest.raises(RaftError, match="does not belong"):
        RaftCore.restore(joiner.sid, joiner.local_address, CID, rec.snapshot,
                         rec.file_records())
    net.drop = lambda m: False
    again = net.add(RaftCore.restore(joiner.sid, joiner.local_address, CID, rec.snapshot,
                                     rec.file_records(), remote_addresses=[addr(0)],
                                     config=net.cfg()))
    net.cores[joiner.sid] = again
    assert again.joining
    net.run()
    assert not again.joining                  # the leader: "already in cluster"
    net.advance(400)
    assert again.log_end == net.core(0).log_end and again.is_connected


def test_a_joiner_does_not_stand_for_election() -> None:
    net = committed_cluster(3)
    net.drop = lambda m: isinstance(m, (rpc.AddServerReply, rpc.AppendRequest)) and (
        m.dst == SIDS[3] and (isinstance(m, rpc.AddServerReply) or m.leader_commit >= 3))
    joiner = net.add(RaftCore.join(SIDS[3], addr(3), [addr(0)], config=net.cfg()))
    net.run()
    assert joiner.joining and joiner.sid in joiner.servers
    joiner.step(rpc.BecomeLeader(src=SIDS[0], dst=joiner.sid, cluster=CID,
                                 term=net.core(0).term))
    joiner.take_leadership()
    assert joiner.role == "follower" and joiner.term == net.core(0).term


def test_a_follower_leaves() -> None:
    net = committed_cluster(3)
    leaving = net.core(2)
    leaving.leave(net.now)
    net.flush(leaving)
    net.run()
    assert leaving.left and SIDS[2] not in net.core(0).servers
    assert any(isinstance(r, NoteRecord) and r.note == "left" for r in net.records[SIDS[2]])
    reply = next(m for m in net.sent if isinstance(m, rpc.RemoveServerReply) and m.success)
    assert reply.comment == "completed" and reply.target_server is None
    with pytest.raises(RaftError, match="has left the cluster"):
        RaftCore.restore(leaving.sid, leaving.local_address, CID,
                         Snapshot(1, 1, DATA0, EID0, {SIDS[i]: addr(i) for i in range(3)}),
                         net.records[leaving.sid])
    cmd = net.core(0).propose(cmd_data(1), net.now)     # two servers still commit
    net.flush(net.core(0))
    net.run()
    assert cmd.status == SUCCESS


def test_removal_is_reported_done_only_once_committed() -> None:
    """OVS 3.1 answers "already not in cluster" as soon as its (uncommitted)
    configuration lacks the server; if that entry is then lost, the server has
    left a cluster that still counts it (found by the simulator)."""
    net = committed_cluster(3)
    lead, gone = net.core(0), net.core(2)
    req = rpc.RemoveServerRequest(src=gone.sid, dst=lead.sid, cluster=CID,
                                  server_id=gone.sid)
    net.drop = lambda m: isinstance(m, rpc.AppendReply)
    lead.step(req, net.now)
    net.flush(lead)
    net.run()
    assert gone.sid not in lead.servers and lead.commit_index < lead.log_end - 1
    lead.step(req, net.now)                            # asked again: not done yet
    net.flush(lead)
    reply = [m for _, _, m in net.queue if isinstance(m, rpc.RemoveServerReply)][-1]
    assert (reply.success, reply.comment) == (False, "in progress")
    net.run()
    assert not gone.left
    net.drop = lambda m: False
    net.advance(400)
    assert gone.left
    # A follower whose committed history shows the removal may say so; one that
    # cannot tell (here, a server that never heard of it) says "not leader".
    f = net.core(1)
    outcomes = []
    for target in (gone.sid, SIDS[4]):
        net.queue.clear()
        f.step(rpc.RemoveServerRequest(src=gone.sid, dst=f.sid, cluster=CID,
                                       server_id=target))
        net.flush(f)
        r = next(m for _, _, m in net.queue if m.dst == gone.sid)
        assert isinstance(r, rpc.RemoveServerReply)
        outcomes.append((r.success, r.comment))
    assert outcomes == [(True, "already not in cluster"), (False, "not leader")]


def test_the_leader_leaves_by_handing_over_first() -> None:
    net = committed_cluster(3)
    old = net.core(0)
    old.leave(net.now)
    net.flush(old)
    assert any(isinstance(m, rpc.BecomeLeader) for _, _, m in net.queue)
    assert not old.is_leader
    net.run()
    votes = [m for m in net.sent if isinstance(m, rpc.VoteRequest)]
    assert votes and all(m.leadership_transfer for m in votes)
    net.advance(2500, step=5)                          # remove requests are resent
    assert old.left
    lead = net.leader()
    assert lead is not None and set(lead.servers) == set(SIDS[1:3])


def test_membership_changes_wait_for_a_commit_in_the_leaders_term() -> None:
    net = committed_cluster(3)
    lead = net.core(0)
    net.drop = lambda m: isinstance(m, rpc.AppendReply)
    net.elect(1)                                     # no-op of the new term not committed
    new = net.core(1)
    new._remove_server(SIDS[2], None)
    net.flush(new)
    assert not any(e.servers for e in new.entries[new.commit_index - new.log_start + 1:])
    net.drop = lambda m: False
    net.advance(400)
    assert SIDS[2] not in new.servers and lead.term == new.term


# --- snapshots ----------------------------------------------------------------------------


def test_followers_are_asked_to_snapshot_and_compact() -> None:
    net = committed_cluster(3, snapshot_threshold=4)
    lead = net.core(0)
    for i in range(5):
        lead.propose(cmd_data(i), net.now)
    net.flush(lead)
    net.run()
    assert set(net.snapshot_requests) == {SIDS[1], SIDS[2]}   # not the leader
    f = net.core(1)
    upto = f.last_applied
    f.store_snapshot({"state": "at", "index": upto}, net.now)
    net.flush(f)
    assert f.log_start == upto + 1
    rec = next(r for r in net.records[f.sid] if isinstance(r, SnapshotRecord))
    assert rec.snapshot.index == upto and rec.snapshot.eid == f.eid_at(upto)
    assert rec.snapshot.election_timer == 1000 and not rec.installed
    with pytest.raises(RaftError, match="duplicate snapshot"):
        f.store_snapshot({}, net.now)
    again = RaftCore.restore(f.sid, f.local_address, CID, rec.snapshot, rec.file_records())
    assert again.log_start == f.log_start and again.commit_index == f.commit_index
    assert again.ready().committed[0].data == {"state": "at", "index": upto}


def test_a_lagging_follower_gets_the_snapshot() -> None:
    net = committed_cluster(3)
    net.down.add(SIDS[2])
    for i in range(4):
        net.core(0).propose(cmd_data(i), net.now)
    net.flush(net.core(0))
    net.run()
    f = net.core(1)
    f.store_snapshot({"compacted": True}, net.now)
    net.flush(f)
    net.elect(1)
    net.run()
    net.down.discard(SIDS[2])
    net.advance(400)
    lag = net.core(2)
    isr = [m for m in net.sent if isinstance(m, rpc.InstallSnapshotRequest)]
    assert isr and isr[0].data == {"compacted": True} and isr[0].election_timer == 1000
    assert lag.log_start == f.log_start and lag.commit_index == f.commit_index
    snap = [c for c in net.committed[lag.sid] if c.is_snapshot]
    assert snap[-1].data == {"compacted": True} and snap[-1].index == f.log_start - 1


def test_a_follower_back_behind_the_leaders_snapshot_catches_up_on_heartbeats() -> None:
    """Stopped while the leader committed and compacted (`ovsdb-server/compact` on a
    leader), a follower restarts in a quiet cluster: within one heartbeat interval
    and a few message delays it has the snapshot, has applied everything committed
    and counts as connected, with no new entry anywhere."""
    net = committed_cluster(3)
    lead = net.core(0)
    net.down.add(SIDS[2])
    for i in range(4):
        lead.propose(cmd_data(i), net.now)
    net.flush(lead)
    net.run()
    lead.store_snapshot({"compacted": True}, net.now)
    net.flush(lead)
    end = lead.log_end
    net.down.discard(SIDS[2])
    lag = net.restart(2)
    assert lag.log_end < lead.log_start and not lag.is_connected
    net.sent.clear()
    net.advance(lead.election_timer // 3 + 10)
    assert lead.is_leader and lead.log_end == end
    assert [type(m) for m in net.sent if m.dst == lag.sid] == [
        rpc.AppendRequest, rpc.InstallSnapshotRequest, rpc.AppendRequest]
    assert lag.log_start == lead.log_start and lag.last_applied == lead.commit_index
    assert lag.is_connected
    assert [c.data for c in net.committed[lag.sid] if c.is_snapshot][-1] == {"compacted": True}


# --- leadership transfer and the election timer ------------------------------------------


def test_leadership_transfer() -> None:
    net = committed_cluster(3)
    old = net.core(0)
    target = old.transfer_leadership("because", net.now)
    net.flush(old)
    assert target in SIDS[1:3]
    bl = next(m for _, _, m in net.queue if isinstance(m, rpc.BecomeLeader))
    assert bl.to_json()["comment"] == "because" and bl.term == old.term
    assert any(isinstance(r, NoteRecord) and r.note == "transfer leadership"
               for r in net.records[old.sid])
    net.run()
    assert net.cores[target].is_leader and not old.is_leader


def test_election_timer_change() -> None:
    net = committed_cluster(3)
    lead = net.core(0)
    with pytest.raises(RaftError, match="through leader"):
        net.core(1).change_election_timer(1500)
    with pytest.raises(RaftError, match="between 100 and 600000"):
        lead.change_election_timer(50)
    with pytest.raises(RaftError, match="exceed the current value x 2"):
        lead.change_election_timer(2001)
    assert lead.change_election_timer(1000) == "change election timer to current value."
    net.drop = lambda m: isinstance(m, rpc.AppendReply)
    assert lead.change_election_timer(2000) == "change of election timer initiated."
    with pytest.raises(RaftError, match="pending"):
        lead.change_election_timer(1500)
    net.flush(lead)
    net.run()
    e = lead.entries[-1]
    assert e.to_json() == {"term": lead.term, "election_timer": 2000}
    assert lead.election_timer == 1000 and net.core(1).election_timer == 1000
    net.drop = lambda m: False
    net.advance(400)
    assert all(c.election_timer == 2000 for c in net.cores.values())
    assert lead.election_timer_new == 0
    net.advance(2000, step=5)                # the longer timer keeps the same leader
    assert lead.is_leader
    assert net.heartbeats()[-1].dst and lead.ping_timeout - net.now <= 2000 // 3


# --- seed 003: commit heartbeats ------------------------------------------------------------


@pytest.mark.parametrize("sync", [True, False])
def test_followers_learn_a_commit_within_one_message_delay(sync: bool) -> None:
    net = committed_cluster(3, sync_commit=sync)
    lead = net.core(0)
    net.advance(50)
    cmd = lead.propose(cmd_data(1), net.now)
    net.flush(lead)
    net.run()                                  # no time passes
    assert cmd.status == SUCCESS
    learned = [c.commit_index >= cmd.index for c in net.cores.values()]
    if sync:
        assert all(learned)
        hb = [m for m in net.heartbeats() if m.leader_commit == cmd.index]  # type: ignore[attr-defined]
        assert len(hb) == 2
    else:
        assert learned == [True, False, False]
        net.advance(lead.election_timer // 3 + 1)
        assert all(c.commit_index >= cmd.index for c in net.cores.values())


def _sequential_through_follower(sync: bool, n: int = 100) -> int:
    """`ovn-nbctl ls-add` x n through a follower, 1 ms per message: each command
    is proposed when the previous one is applied on that follower."""
    net = committed_cluster(3, sync_commit=sync)
    net.delay = 1
    f = net.core(1)
    start = net.now
    for i in range(n):
        prereq = [c.eid for c in net.committed[f.sid] if c.data is not None][-1]
        cmd = f.propose_command(cmd_data(i), prereq, net.now)
        net.flush(f)
        while not (cmd.status == SUCCESS and f.last_applied >= cmd.index):
            assert not cmd.done or cmd.status == SUCCESS, cmd.status
            net.advance(1)
    return net.now - start


def test_seed_003_speedup() -> None:
    fast = _sequential_through_follower(True)
    slow = _sequential_through_follower(False)
    assert fast <= 100 * 5          # forward, append, reply, heartbeat: ~4 ms each
    assert slow >= 100 * 150        # waits for the 333 ms heartbeat each time
    assert slow / fast > 30


def test_commit_heartbeats_do_not_storm() -> None:
    """The review of seed 003 saw CPU explode. An idle cluster sends exactly the
    periodic heartbeats with or without commit heartbeats; a burst costs a bounded
    number of messages per entry and no "in progress" pings; and a batch of input
    handled before `ready()` yields one commit heartbeat per follower."""
    counts = {}
    for sync in (True, False):
        net = committed_cluster(3, sync_commit=sync)
        net.sent.clear()
        net.advance(10000, step=5)
        counts[sync] = len(net.sent)
    assert counts[True] == counts[False]
    assert abs(counts[True] - 2 * 2 * (10000 // 333)) <= 4

    net = committed_cluster(3)
    lead, f = net.core(0), net.core(1)
    forwarded = [f.propose_command(cmd_data(i), EID0, net.now) for i in range(20)]
    net.flush(f)
    net.run()
    assert sum(c.status == SUCCESS for c in forwarded) == 1      # one prereq wins
    net.sent.clear()
    cmds = [lead.propose(cmd_data(i), net.now) for i in range(20)]
    net.flush(lead)
    net.run()
    assert all(c.status == SUCCESS for c in cmds)
    assert len(net.sent) <= 8 * 20       # 2 appends, 2 replies, <= 2 + 2 for the commit
    assert not [m for m in net.sent if isinstance(m, rpc.ExecuteCommandReply)]

    # The same burst, with the host handling all replies before calling ready().
    net = committed_cluster(3)
    lead = net.core(0)
    for i in range(20):
        lead.propose(cmd_data(i), net.now)
    net.flush(lead)
    replies = []
    while net.queue:
        m = net.queue.popleft()[2]
        dst = net.cores[m.dst]  # type: ignore[index]
        dst.step(m, net.now)
        if dst is lead:
            continue
        rd = dst.ready()
        dst.persisted(rd.records[-1].ticket) if rd.records else None
        replies += [r for r in rd.messages + dst.ready().messages]
    net.sent.clear()
    for r in replies:
        lead.step(r, net.now)                          # one batch...
    net.flush(lead)                                    # ...one ready()
    heartbeats = [m for m in net.sent if m.comment == "heartbeat"]
    assert lead.commit_index == lead.log_end - 1
    assert len(heartbeats) == 2
    assert all(m.leader_commit == lead.commit_index for m in heartbeats)  # type: ignore[attr-defined]


def test_broadcast_of_entries_rearms_the_heartbeat_timer() -> None:
    for sync in (True, False):
        net = committed_cluster(3, sync_commit=sync)
        lead = net.core(0)
        net.advance(300)
        before = lead.ping_timeout
        lead.propose(cmd_data(1), net.now)
        assert (lead.ping_timeout > before) == sync


def test_deadlines_are_never_left_in_the_past() -> None:
    net = committed_cluster(3)
    leaving = net.core(2)
    net.down.update(SIDS[:2])
    leaving.leave(net.now)                 # cannot finish: nobody answers
    net.flush(leaving)
    for _ in range(50):
        net.now += 700
        for c in net.cores.values():
            c.tick(net.now)
            d = c.next_deadline()
            assert d is None or d > net.now


def test_status_and_config_defaults() -> None:
    cfg = RaftConfig()
    assert (cfg.election_timer, cfg.sync_commit) == (1000, True)
    net = committed_cluster(3)
    st = net.core(0).status()
    assert st["role"] == "leader" and st["status"] == "cluster member"
    assert set(st["servers"]) == set(SIDS[:3])


def test_term_records_precede_what_mentions_them() -> None:
    net = Net.cluster(3)
    net.elect(0)
    recs = net.records[SIDS[1]]
    first_term = next(i for i, r in enumerate(recs) if isinstance(r, (TermRecord, VoteRecord)))
    first_entry = next(i for i, r in enumerate(recs) if isinstance(r, EntryRecord))
    assert first_term < first_entry
