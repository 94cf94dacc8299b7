"""The deterministic simulator: 2,000 seeded schedules of faults over 3- and
5-server clusters, each checked for Raft's safety properties after every step, for
liveness once healed, and for a follower back behind the leader's snapshot catching up
from heartbeats alone; plus proof that the checks have teeth (known-bad variants of the
core are caught) and that a seed replays exactly.

Reproduce a failing seed with `python -m pyovsdb.raft.sim --seed N -v`."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from typing import Any

import pytest

from pyovsdb.raft import core as C
from pyovsdb.raft.sim import SimParams, Simulation, Violation, main, run_seed

SEEDS = 2000
CHUNK = 50


@pytest.mark.parametrize("first", range(0, SEEDS, CHUNK),
                         ids=lambda f: f"seeds{f}-{f + CHUNK - 1}")
def test_seeds(first: int) -> None:
    failures = []
    for seed in range(first, first + CHUNK):
        try:
            run_seed(seed)
        except Violation as e:
            failures.append(f"{e}\n  reproduce: python -m pyovsdb.raft.sim --seed {seed} -v")
    assert not failures, "\n".join(failures)


def test_seeds_cover_what_they_should() -> None:
    """The schedules really exercise the features (guards against a generator that
    quietly stops injecting faults)."""
    total: dict[str, int] = {}
    n5 = nosync = 0
    for seed in range(200):
        r = run_seed(seed)
        n5 += r.params.n == 5
        nosync += not r.params.sync_commit
        for k in ("elections", "successes", "crashes", "transfers", "leaves", "snapshots",
                  "timer_changes", "commits"):
            total[k] = total.get(k, 0) + getattr(r, k)
    assert 40 <= n5 <= 160 and 15 <= nosync <= 80
    assert total["elections"] > 450 and total["crashes"] > 500
    assert total["successes"] > 1500 and total["snapshots"] > 350
    assert total["leaves"] > 20 and total["transfers"] > 70 and total["timer_changes"] > 25


def test_a_seed_replays_exactly() -> None:
    def trace(seed: int) -> list[str]:
        lines: list[str] = []
        Simulation(seed, trace=lines.append).run()
        return lines

    a, b = trace(12), trace(12)
    assert a == b and len(a) > 100
    assert trace(13) != a


def test_sync_commit_off_is_also_safe_and_live() -> None:
    for seed in range(100):
        p = SimParams.from_seed(seed)
        p.sync_commit = False
        run_seed(seed, params=p)


def test_cli() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--seed", "5"]) == 0
        assert main(["--seeds", "0-3"]) == 0
    assert "1/1 seeds passed" in out.getvalue() and "4/4 seeds passed" in out.getvalue()


# --- the checks have teeth -----------------------------------------------------------------


@contextmanager
def mutant(attr: str, fn: Callable[..., Any]) -> Iterator[None]:
    old = getattr(C.RaftCore, attr)
    handlers = dict(C.RaftCore._HANDLERS)
    setattr(C.RaftCore, attr, fn)
    for k, v in handlers.items():
        if v is old:
            C.RaftCore._HANDLERS[k] = fn
    try:
        yield
    finally:
        setattr(C.RaftCore, attr, old)
        C.RaftCore._HANDLERS.update(handlers)


def _commit_old_terms(self: C.RaftCore) -> None:
    matches = sorted((s.match_index for s in self.servers.values()), reverse=True)
    n = matches[len(matches) // 2]
    if self.role == C.LEADER and self.commit_index < n < self.log_end:
        self._update_commit_index(n)


def _vote_without_log_check(self: C.RaftCore, rq: Any) -> None:
    if self.vote is None:
        self._set_term(self.term, rq.src)
    self._send(C.VoteReply(src=self.sid, dst=rq.src, term=self.term, vote=self.vote or ""))


def _vote_twice(self: C.RaftCore, rq: Any) -> None:
    self.vote = None
    _ORIG_VOTE(self, rq)


def _forget_votes(self: C.RaftCore, n: int, rec: Any) -> None:
    if isinstance(rec, C.VoteRecord):
        rec = C.TermRecord(term=rec.term)
    _ORIG_REPLAY(self, n, rec)


def _count_self_early(self: C.RaftCore, entry: Any) -> int:
    index = _ORIG_INITIATE(self, entry)
    if self.role == C.LEADER:
        self._update_our_match_index(index)
    return index


def _no_prereq_check(self: C.RaftCore, rq: Any) -> None:
    if self.role == C.LEADER and rq.result not in self.commands:
        rq.prereq = self.current_eid
    _ORIG_EXEC(self, rq)


def _no_prev_term_check(self: C.RaftCore, index: int, term: int) -> str | None:
    r = _ORIG_MISMATCH(self, index, term)
    return r if r in ("mismatch past end of log", "mismatch before start of log") else None


def _no_heartbeat_behind_snapshot(self: C.RaftCore, s: Any, n: int,
                                  comment: str | None) -> None:
    if n == 0 and comment == "heartbeat" and s.match_index < self.log_start - 1:
        return      # "it is being caught up some other way"
    _ORIG_SEND_APPEND(self, s, n, comment)


_ORIG_VOTE = C.RaftCore._handle_vote_request
_ORIG_REPLAY = C.RaftCore._replay
_ORIG_INITIATE = C.RaftCore._initiate
_ORIG_EXEC = C.RaftCore._handle_execute_command_request
_ORIG_MISMATCH = C.RaftCore._mismatch
_ORIG_SEND_APPEND = C.RaftCore._send_append_request

MUTANTS: dict[str, tuple[str, Callable[..., Any]]] = {
    "commit entries of older terms by counting": ("_consider_updating_commit_index",
                                                  _commit_old_terms),
    "grant votes without the log check": ("_handle_vote_request", _vote_without_log_check),
    "vote twice in a term": ("_handle_vote_request", _vote_twice),
    "send before the disk says durable": ("_is_synced", lambda self, msg: True),
    "leader counts itself before its write": ("_initiate", _count_self_early),
    "forget votes on restart": ("_replay", _forget_votes),
    "skip the prerequisite check": ("_handle_execute_command_request", _no_prereq_check),
    "skip the previous-term check": ("_mismatch", _no_prev_term_check),
    "no heartbeat to a follower behind the snapshot": ("_send_append_request",
                                                       _no_heartbeat_behind_snapshot),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_the_simulator_catches_a_broken_core(name: str) -> None:
    attr, fn = MUTANTS[name]
    with mutant(attr, fn):
        for seed in range(200):
            try:
                run_seed(seed)
            except Violation:
                return
    pytest.fail(f"no seed in 0..199 caught: {name}")
