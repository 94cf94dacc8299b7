"""Recorded real-client traffic as corpus cases, and the UUID mapping that lets a
recording be replayed on servers that choose their own UUIDs.

Rules kept here:
- A case made from a recording has one connection per recorded client connection
  (`c1`, `c2`, ... in order of acceptance) and one step per message the client sent,
  in the recorded order. Left out: the clients' replies to the server's `echo` (the
  harness answers those itself) and their own `echo` probes (timer-driven, they carry
  nothing). A close by the client (or by the recording proxy, standing for a network
  failure) is a close step.
- A server-chosen UUID that a client sends back is a placeholder `<uN>`. Row UUIDs are
  born in the reply to the `transact` that inserted the row; placeholders are numbered
  by that birth: the steps' transactions in order, the inserts of one in operation
  order. At replay each server's own UUID born at the same place takes the name (the
  birth order is the same on both servers while their replies agree), and requests get
  it substituted before they are sent. Transaction ids (of `update3` and
  `monitor_cond_since` replies) are `<tN>`, by first appearance: a client resumes its
  monitors with them after a reconnection. A UUID born elsewhere (the `_Server` rows, a
  `_version`) that a client sends back is `<vN>`, named by first appearance in the
  messages of the steps in order (connections in case order, each message traversed
  with object members sorted); it is the less stable rule, kept for what the others do
  not cover.
- Each recorded transaction keeps the shape of the real server's reply
  (`recorded_reply`), and `replay_mismatches` says where a replay on the real server
  did otherwise: a placeholder resolved to the wrong row shows there, where comparing
  the two servers would see two equally wrong replies.
- A placeholder a server has not named by the time a request needs it stays unresolved:
  the request is sent with a fixed UUID of its own for that placeholder (the same on
  both servers) and the step records the miss, so a server that did not send a row
  shows as a difference instead of stopping the replay.
- Recordings are scrubbed of the capture's absolute paths, host name and process ids
  (fixed tokens, consistently), in every string of every message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                     r"[0-9a-fA-F]{12}")
UUID_FULL = re.compile(UUID_RE.pattern + r"\Z")
PLACEHOLDER_RE = re.compile(r"<([uvt])(\d+)>")
ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def unresolved_uuid(name: str) -> str:
    """The UUID sent for placeholder `name` when a server gave none: fixed, and never
    one a server chooses (version nibble 0)."""
    m = PLACEHOLDER_RE.fullmatch(name)
    assert m is not None, name
    kind = "uvt".index(m.group(1)) + 1
    return f"00000000-0000-0000-000{kind}-{int(m.group(2)):012d}"


# ---------------------------------------------------------------------------------------
# Where UUIDs are born


def insert_uuids(request: Any, reply: Any) -> list[str]:
    """The UUIDs of the rows a transaction's reply says it inserted, in operation order."""
    if not (isinstance(request, dict) and request.get("method") == "transact"):
        return []
    res = reply.get("result") if isinstance(reply, dict) else None
    if not isinstance(res, list):
        return []
    out = []
    for r in res:
        u = r.get("uuid") if isinstance(r, dict) else None
        if isinstance(u, list) and len(u) == 2 and u[0] == "uuid" and isinstance(u[1], str):
            out.append(u[1].lower())
    return out


def txn_id(m: Any) -> str | None:
    """The transaction id an update3 notification or a monitor_cond_since reply
    carries (lowercased), or None."""
    if not isinstance(m, dict):
        return None
    if m.get("method") == "update3":
        p = m.get("params")
        t = p[1] if isinstance(p, list) and len(p) == 3 else None
    else:
        r = m.get("result")
        t = (r[1] if isinstance(r, list) and len(r) == 3 and isinstance(r[0], bool)
             else None)
    return t.lower() if isinstance(t, str) and UUID_FULL.match(t) else None


def uuids_in(v: Any) -> Iterable[str]:
    """Every UUID in `v`, object members in sorted order."""
    if isinstance(v, str):
        for m in UUID_RE.finditer(v):
            yield m.group(0).lower()
    elif isinstance(v, list):
        for x in v:
            yield from uuids_in(x)
    elif isinstance(v, dict):
        for k in sorted(v):
            yield from uuids_in(k)
            yield from uuids_in(v[k])


class Births:
    """Names server-chosen UUIDs by where they were born (see the module docstring).
    Used on a recording (to write placeholders) and on each server at replay (to
    resolve them): the same code names both."""

    def __init__(self, client_uuids: Iterable[str] = ()) -> None:
        # UUIDs the case (the client) wrote itself: never a placeholder.
        self.client = {u.lower() for u in client_uuids} | {ZERO_UUID}
        self.by_uuid: dict[str, str] = {}
        self.by_name: dict[str, str] = {}
        self.n = {"u": 0, "v": 0, "t": 0}

    def _add(self, kind: str, u: str) -> None:
        if u in self.by_uuid or u in self.client:
            return
        self.n[kind] += 1
        name = f"<{kind}{self.n[kind]}>"
        self.by_uuid[u] = name
        self.by_name[name] = u

    def step(self, replies: list[tuple[Any, Any]], others: list[Any]) -> None:
        """One step's messages: `replies` are (request, reply) pairs of transactions in
        request order; `others` every other message (and the replies again) in order."""
        for req, rep in replies:
            for u in insert_uuids(req, rep):
                self._add("u", u)
        for m in others:
            t = txn_id(m)
            if t is not None:
                self._add("t", t)
        for m in others:
            for u in uuids_in(m):
                self._add("v", u)

    def resolve(self, v: Any, missing: list[str]) -> Any:
        """`v` with placeholders replaced by this server's UUIDs (misses in `missing`)."""
        if isinstance(v, str):
            if "<" not in v:
                return v

            def sub(m: re.Match[str]) -> str:
                u = self.by_name.get(m.group(0))
                if u is None:
                    missing.append(m.group(0))
                    return unresolved_uuid(m.group(0))
                return u
            return PLACEHOLDER_RE.sub(sub, v)
        if isinstance(v, list):
            return [self.resolve(x, missing) for x in v]
        if isinstance(v, dict):
            return {k: self.resolve(x, missing) for k, x in v.items()}
        return v


def placeholders(v: Any, births: Births) -> Any:
    """`v` (a recorded request) with the recorded server UUIDs written as their names."""
    if isinstance(v, str):
        if not UUID_RE.search(v):
            return v
        return UUID_RE.sub(lambda m: births.by_uuid.get(m.group(0).lower(), m.group(0)), v)
    if isinstance(v, list):
        return [placeholders(x, births) for x in v]
    if isinstance(v, dict):
        return {k: placeholders(x, births) for k, x in v.items()}
    return v


MONITORS = ("monitor", "monitor_cond", "monitor_cond_since")


def reply_shape(reply: Any, method: str = "transact") -> list[str] | str:
    """What a reply says happened, without values: for a transaction per operation
    `ok`, `count=N`, `rows=N`, `uuid` or `error=...`; for a monitor the number of rows
    per table (and `found` of monitor_cond_since). A replay whose placeholders resolved
    right gives the real server's recorded shapes back (an update by a wrong UUID counts
    0 rows, a condition on a wrong chassis selects none)."""
    if not isinstance(reply, dict):
        return "none"
    if reply.get("error") is not None:
        err = reply["error"]
        return f"error={err.get('error') if isinstance(err, dict) else err}"
    res = reply.get("result")
    if method in MONITORS:
        found = []
        if method == "monitor_cond_since" and isinstance(res, list) and len(res) == 3:
            found, res = [f"found={str(res[0]).lower()}"], res[2]
        if not isinstance(res, dict):
            return "result"
        return found + [f"{t}={len(rows) if isinstance(rows, dict) else '?'}"
                        for t, rows in sorted(res.items())]
    if not isinstance(res, list):
        return "result"
    out = []
    for r in res:
        if not isinstance(r, dict):
            out.append("null")
        elif "error" in r:
            out.append(f"error={r['error']}")
        elif "count" in r:
            out.append(f"count={r['count']}")
        elif "rows" in r:
            out.append(f"rows={len(r['rows']) if isinstance(r['rows'], list) else '?'}")
        elif "uuid" in r:
            out.append("uuid")
        else:
            out.append("ok")
    return out


# ---------------------------------------------------------------------------------------
# Recording -> case


class Scrubber:
    """Replaces the capture's paths, host name and pids in strings with fixed tokens."""

    def __init__(self, paths: dict[str, str], hostname: str, pids: list[int]) -> None:
        """`paths`: path -> token (longest paths are replaced first)."""
        subs: list[tuple[re.Pattern[str], str]] = []
        for p in sorted(paths, key=len, reverse=True):
            subs.append((re.compile(re.escape(p.rstrip("/"))), paths[p]))
        if hostname:
            subs.append((re.compile(rf"\b{re.escape(hostname)}\b"), "@HOST@"))
        for i, pid in enumerate(sorted(set(pids))):
            subs.append((re.compile(rf"(?<![0-9]){pid}(?![0-9])"), f"@PID{i + 1}@"))
        self.subs = subs

    def text(self, s: str) -> str:
        for rx, tok in self.subs:
            s = rx.sub(tok, s)
        return s

    def __call__(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self(x) for x in v]
        if isinstance(v, dict):
            return {self.text(k): self(x) for k, x in v.items()}
        return v


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def _is_reply(m: Any) -> bool:
    return isinstance(m, dict) and "method" not in m and "id" in m


def recording_to_steps(events: list[dict[str, Any]], scrub: Scrubber
                       ) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, list[str]]]:
    """The steps of a case replaying `events` (Recorder events as JSON), counts, and
    per connection the rows it heard of (`rows_seen`).

    Server messages are grouped into steps as the harness will see them: a reply with
    the step of its request; anything else with the step of the last request sent
    before it (the replay runs each step until every connection is quiet). A cut by
    the proxy closes the connection right after the last step that involved it: what
    the server sent it later was lost in the cut, and the replay must not deliver it."""
    conns: dict[int, str] = {}
    steps: list[dict[str, Any]] = []
    step_of: dict[tuple[int, str], int] = {}  # (conn, request id) -> step index
    replies: dict[int, list[tuple[int, Any]]] = {}  # step -> [(conn, reply)]
    others: dict[int, list[tuple[int, Any]]] = {}
    counts = {"client messages": 0, "server messages": 0, "left out": 0}
    raw_steps: list[tuple[int, Any]] = []
    s2c: dict[int, list[Any]] = {}
    last_at: dict[int, int] = {}  # conn -> the last step that involved it
    cuts: list[tuple[int, int]] = []  # (conn, after step)
    for ev in events:
        c, d, m = ev["conn"], ev["dir"], ev["msg"]
        if d == "c2s":
            counts["client messages"] += 1
            if _is_reply(m) or (isinstance(m, dict) and m.get("method") == "echo"):
                counts["left out"] += 1
                continue
            conns.setdefault(c, f"c{len(conns) + 1}")
            if isinstance(m, dict) and m.get("id") is not None:
                step_of[(c, _key(m["id"]))] = len(raw_steps)
            last_at[c] = len(raw_steps)
            raw_steps.append((c, m))
        elif d == "s2c":
            counts["server messages"] += 1
            s2c.setdefault(c, []).append(m)
            if isinstance(m, dict) and m.get("method") == "echo":
                continue
            last = len(raw_steps) - 1
            if _is_reply(m):
                k = step_of.get((c, _key(m.get("id"))))
                if k is not None:
                    replies.setdefault(k, []).append((c, m))
                    last_at[c] = max(last_at.get(c, 0), k)
                    continue
            others.setdefault(max(last, 0), []).append((c, m))
            last_at[c] = max(last_at.get(c, 0), last)
        elif d == "close" and m == "proxy" and c in conns:
            cuts.append((c, last_at.get(c, len(raw_steps) - 1)))
        elif d == "close" and m == "client" and c in conns:
            last_at[c] = len(raw_steps)
            raw_steps.append((c, None))
    if cuts:  # each cut right after the last step that involved its connection
        placed: list[tuple[int, Any]] = []
        where: dict[int, int] = {}
        for i, item in enumerate(raw_steps):
            placed.append(item)
            where[i] = len(placed) - 1
            placed += [(c, None) for c, after in cuts if after == i]
        raw_steps = placed
        replies = {where[k]: v for k, v in replies.items()}
        others = {where[k]: v for k, v in others.items()}
    order = {c: i for i, c in enumerate(conns)}
    births = Births()
    # A UUID a client sent before any server message carried it is the client's own.
    seen_server: set[str] = set()
    for i, (c, m) in enumerate(raw_steps):
        for u in uuids_in(m):
            if u not in seen_server:
                births.client.add(u)
        if m is None:
            steps.append({"conn": conns[c], "close": True})
        else:
            # (the harness gives an id when there is none; "id": null stays a notification)
            steps.append({"conn": conns[c], "request": scrub(placeholders(m, births))})
        pairs = [(m, rep) for c2, rep in replies.get(i, []) if c2 == c]
        if isinstance(m, dict) and m.get("method") in ("transact", *MONITORS):
            steps[-1]["recorded_reply"] = reply_shape(pairs[0][1] if pairs else None,
                                                      m["method"])
        msgs = sorted(replies.get(i, []) + others.get(i, []), key=lambda x: order.get(x[0], 0))
        births.step(pairs, [x for _, x in msgs])
        for _, x in msgs:
            seen_server.update(uuids_in(x))
    seen = {conns[c]: rows_seen(ms, births.by_uuid) for c, ms in s2c.items() if c in conns}
    counts["steps"] = len(steps)
    counts["connections"] = len(conns)
    counts["placeholders"] = sum(
        1 for st in steps for _ in PLACEHOLDER_RE.finditer(repr(st.get("request"))))
    return steps, counts, seen


def rows_seen(msgs: Iterable[Any], names: dict[str, str]) -> list[str]:
    """The rows (placeholder names of inserted rows) that `msgs` mention: what a
    connection heard of, however a server grouped its updates."""
    out = {names[u] for m in msgs for u in uuids_in(m) if names.get(u, "").startswith("<u")}
    return sorted(out, key=lambda n: int(n[2:-1]))


# ---------------------------------------------------------------------------------------
# Replay fidelity


def replay_mismatches(steps: list[dict[str, Any]], recorded_steps: list[Any],
                      seen: dict[str, list[str]] | None = None,
                      names: dict[str, str] | None = None) -> list[str]:
    """Where the real server's replay of a recorded case did not do what the recording
    says it did: a placeholder it did not resolve, a reply of another shape, or a
    connection that heard of other rows (`seen`, with the replay's `names`: a monitor
    condition naming a wrong row selects others). `recorded_steps` are the real server's
    StepRecords (setup first)."""
    out = []
    if seen and names is not None:
        by_conn: dict[str, list[Any]] = {}
        for st in recorded_steps[1:]:
            for c, ms in st.messages.items():
                by_conn.setdefault(c, []).extend(ms)
        for c, want in seen.items():
            got = rows_seen(by_conn.get(c, []), names)
            if got != want:
                only_rec = sorted(set(want) - set(got))[:5]
                only_rep = sorted(set(got) - set(want))[:5]
                out.append(f"{c} heard of other rows: only recorded {only_rec}, "
                           f"only replayed {only_rep}")
    for i, st in enumerate(steps):
        if i + 1 >= len(recorded_steps):
            break
        msgs = recorded_steps[i + 1].messages.get(st.get("conn", "a"), [])
        for m in msgs:
            if isinstance(m, dict) and "__unresolved__" in m:
                out.append(f"step {i + 1}: unresolved {m['__unresolved__']}")
        want = st.get("recorded_reply")
        if want is None or want == "none":  # (the client's connection was cut first)
            continue
        rid = _key(st["request"].get("id"))
        got = [m for m in msgs if isinstance(m, dict) and "method" not in m
               and _key(m.get("id")) == rid]
        shape = reply_shape(got[0] if got else None, str(st["request"].get("method")))
        if shape != want:
            out.append(f"step {i + 1}: recorded {want}, replayed {shape}")
    return out
