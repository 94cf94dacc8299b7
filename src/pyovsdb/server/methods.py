"""The JSON-RPC methods of the OVSDB server (RFC 7047 section 4 and OVS extensions).

Rules kept here:
- Each handler gets (session, params, id) and returns the result, raises OvsdbError for
  an error reply, or returns PENDING when it will reply later itself.
- Error wording, and which errors are error replies rather than results, follow the
  real ovsdb-server; "syntax" members carry the offending params.
- `transact`: a committed transaction is stored and its updates are sent before the
  reply; a blocked `wait` becomes a trigger that replies when it completes.
- `monitor_cond_since` answers from the transaction history when it can (found=true
  with only the missed changes), else with the full initial contents.
- A transaction runs with the session's permissions of when it arrived (`rbac.Access`):
  read-only and RBAC checks happen in the transaction engine, per operation. Locks are
  refused to read-only sessions; `convert` to sessions with a role ("permission
  error") and then to read-only ones ("not allowed", as OVS 3.1.7; 3.1.0 let them
  convert), before its params are looked at.
- Intended differences (docs/compat.md): `monitor` with fewer than 3 params gets an
  error (the real server crashes), and `_Server` is never converted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..jsonrpc.message import error_reply, notification, reply
from ..ovsdb.convert import convert as convert_database
from ..ovsdb.datum import is_uuid_string
from ..ovsdb.errors import OvsdbError, RpcStringError, syntax_error
from ..ovsdb.rbac import convert_denied
from ..ovsdb.schema import DatabaseSchema
from ..ovsdb.transaction import Blocked, Committed, Outcome
from .cluster import Canceled
from .hosted import HostedDb, Trigger
from .monitor import V1, V2, V3, Monitor, parse_monitor_requests
from .session import Session, json_key

if TYPE_CHECKING:
    pass

PENDING = object()
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_ID_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _is_id(s: Any) -> bool:
    return (type(s) is str and s != "" and (s[0].isalpha() or s[0] == "_")
            and all(c in _ID_CHARS for c in s))


def _db(session: Session, params: list[Any], method: str) -> HostedDb:
    name = params[0] if params else None
    if type(name) is not str:
        raise syntax_error(params, f"{method} request params must begin with <db-name>")
    hosted = session.server.dbs.get(name)
    if hosted is None:
        raise OvsdbError(
            "unknown database", f"{method} request specifies unknown database {name}", params
        )
    return hosted


# -- simple methods ------------------------------------------------------------------------


def list_dbs(session: Session, params: list[Any], msg_id: Any) -> Any:
    return session.server.db_names()


def get_schema(session: Session, params: list[Any], msg_id: Any) -> Any:
    hosted = _db(session, params, "get_schema")
    # Normalized, as the real server reports it, whatever the file's text was.
    return hosted.db.schema.to_json()


def echo(session: Session, params: list[Any], msg_id: Any) -> Any:
    return params


def get_server_id(session: Session, params: list[Any], msg_id: Any) -> Any:
    return session.server.server_id


def set_db_change_aware(session: Session, params: list[Any], msg_id: Any) -> Any:
    if len(params) != 1 or type(params[0]) is not bool:
        raise syntax_error(params, "set_db_change_aware: true or false parameter expected")
    session.db_change_aware = params[0]
    return {}


# -- transactions --------------------------------------------------------------------------


def transact(session: Session, params: list[Any], msg_id: Any) -> Any:
    hosted = _db(session, params, "transact")
    if hosted.relay is not None:
        hosted.relay.forward(session, params, msg_id)
        return PENDING
    key = json_key(msg_id) if session.pending else b""
    if key and key in session.pending:
        raise syntax_error(params, "transact: duplicate request ID")
    ops = params[1:]
    owns_lock = session.access()
    started = hosted.clock()
    cluster = hosted.cluster
    if cluster is not None and cluster.busy():
        # Transactions of clients are on their way through the cluster: this one runs
        # after them, so that it sees their effects (a client's pipelined
        # transactions see each other's, as on a standalone server).
        def answer(result: Outcome) -> None:
            _answer_clustered(session, result, msg_id)
            _observe(session, hosted, result, started)

        cluster.submit_ops(ops, started, owns_lock, answer)
        return PENDING
    outcome = hosted.execute(ops, started=started, owns_lock=owns_lock, now=started)
    if isinstance(outcome, Blocked):
        key = key or json_key(msg_id)
        session.pending[key] = msg_id

        def finish(result: Outcome) -> None:
            session.pending.pop(key, None)
            _complete_transact(session, hosted, result, msg_id, ops, started, owns_lock)

        hosted.add_trigger(Trigger(ops, started, finish, session, msg_id, owns_lock), outcome)
        return PENDING
    _complete_transact(session, hosted, outcome, msg_id, ops, started, owns_lock)
    return PENDING


def _complete_transact(session: Session, hosted: HostedDb, outcome: Outcome, msg_id: Any,
                       ops: list[Any], started: float, owns_lock: Any) -> None:
    cluster = hosted.cluster
    if cluster is not None and isinstance(outcome, Committed) and outcome.changeset:
        # Committed through Raft; the reply goes out once the entry is applied here.
        def done(result: Outcome) -> None:
            _answer_clustered(session, result, msg_id)
            _observe(session, hosted, result, started)

        cluster.submit(ops, started, owns_lock, outcome, done)
        return
    if isinstance(outcome, Committed) and outcome.changeset:
        hosted.commit(outcome.changeset, outcome.durable)
        session.server.note_commit(hosted)
    elif isinstance(outcome, Committed) and outcome.durable and hosted.storage is not None:
        hosted.storage.sync()
    session.send(reply(outcome.results, msg_id))  # type: ignore[attr-defined]
    _observe(session, hosted, outcome, started)


def _observe(session: Session, hosted: HostedDb, outcome: Outcome, started: float) -> None:
    """A transaction answered, for the metrics endpoint (if there is one)."""
    metrics = session.server.metrics
    if metrics is not None:
        results = None if isinstance(outcome, Canceled) else \
            getattr(outcome, "results", None)
        metrics.transaction(hosted.name, results, (hosted.clock() - started) / 1000)


def _answer_clustered(session: Session, result: Outcome, msg_id: Any) -> None:
    if isinstance(result, Canceled):
        session.send(error_reply("canceled", msg_id))
    else:
        session.send(reply(result.results, msg_id))  # type: ignore[attr-defined]


def cancel(session: Session, params: list[Any]) -> None:
    if len(params) != 1:
        return
    key = json_key(params[0])
    if session.pending.pop(key, None) is None:
        return
    for hosted in session.server.dbs.values():
        if hosted.cancel_triggers(session, params[0]):
            session.send(error_reply("canceled", params[0]))
            return


# -- monitors ------------------------------------------------------------------------------


def _add_monitor(session: Session, params: list[Any], version: int) -> tuple[Monitor, HostedDb]:
    """Validate a monitor request in the real server's order: database name, database,
    number of params, requests object, monitor id, then the requests (and, for
    monitor_cond_since, the last transaction id)."""
    method = {V1: "monitor", V2: "monitor_cond", V3: "monitor_cond_since"}[version]
    hosted = _db(session, params, method)
    n = len(params)
    # `monitor` ignores extra params; with fewer than 3 the real server crashes (see
    # docs/compat.md), we reply as the other methods do.
    if n != (4 if version == V3 else 3) and not (version == V1 and n > 3):
        raise syntax_error(params, "invalid parameters")
    mon_id, requests = params[1], params[2]
    if type(requests) is not dict:
        raise syntax_error(requests, "monitor-requests must be object")
    if json_key(mon_id) in session.monitors:
        raise syntax_error(mon_id, "duplicate monitor ID")
    tables = parse_monitor_requests(hosted.db.schema, requests, version)
    if version == V3:
        last_id = params[3]
        if type(last_id) is not str:
            raise syntax_error(last_id, "last-txn-id must be string")
        if not is_uuid_string(last_id):
            raise syntax_error(last_id, "last-txn-id must be UUID format.")
    mon = Monitor(mon_id, hosted.name, version, tables, session.send_update)
    return mon, hosted


def monitor(session: Session, params: list[Any], msg_id: Any) -> Any:
    return _monitor(session, params, V1)


def monitor_cond(session: Session, params: list[Any], msg_id: Any) -> Any:
    return _monitor(session, params, V2)


def _monitor(session: Session, params: list[Any], version: int) -> Any:
    mon, hosted = _add_monitor(session, params, version)
    initial = mon.initial(hosted.db)
    session.monitors[json_key(mon.id)] = mon
    hosted.add_monitor(mon)
    return initial


def monitor_cond_since(session: Session, params: list[Any], msg_id: Any) -> Any:
    mon, hosted = _add_monitor(session, params, V3)
    last_id = params[3].lower()
    found = False
    updates: dict[str, Any] | None = None
    if last_id != ZERO_UUID:
        missed = hosted.changes_since(last_id)
        if missed is not None:
            found = True
            updates = mon.updates(missed, {}) if missed else None
    if not found:
        updates = mon.initial(hosted.db)
    session.monitors[json_key(mon.id)] = mon
    hosted.add_monitor(mon)
    return [found, hosted.last_txn_id, updates or {}]


def monitor_cond_change(session: Session, params: list[Any], msg_id: Any) -> Any:
    if len(params) != 3:
        raise syntax_error(params, "invalid parameters")
    old_key = json_key(params[0])
    mon = session.monitors.get(old_key)
    if mon is None:
        raise syntax_error(params[0], "unknown monitor session")
    new_key = json_key(params[1])
    if new_key != old_key and new_key in session.monitors:
        raise syntax_error(params[1], "duplicate monitor ID")
    hosted = session.server.dbs[mon.db_name]
    session.release_held(mon)  # (held under the old conditions: judged by them)
    try:
        updates = mon.change_condition(hosted.db, params[2])
    finally:  # also after an error: the tables set before it have a new condition
        hosted.conditions_changed(mon)
    if new_key != old_key:
        del session.monitors[old_key]
        mon.id = params[1]
        session.monitors[new_key] = mon
    if updates is not None:
        mon.sink(mon, hosted.last_txn_id, updates)
    return {}


def monitor_cancel(session: Session, params: list[Any], msg_id: Any) -> Any:
    if len(params) != 1:
        raise RpcStringError("invalid parameters")
    mon = session.remove_monitor(json_key(params[0]))
    if mon is None:
        raise RpcStringError("unknown monitor")
    return {}


# -- locks ---------------------------------------------------------------------------------


def _lock_name(session: Session, params: list[Any], method: str) -> str:
    if session.read_only:
        raise RpcStringError("lock and unlock methods not allowed, DB server is read only.")
    if len(params) != 1 or not _is_id(params[0]):
        raise syntax_error(params, f"{method} request params must be <id>")
    return params[0]


def lock(session: Session, params: list[Any], msg_id: Any) -> Any:
    name = _lock_name(session, params, "lock")
    locks = session.server.locks
    if locks.waiting(session, name):
        raise syntax_error(params, 'must issue "unlock" before new "lock"')
    return {"locked": locks.lock(session, name)}


def steal(session: Session, params: list[Any], msg_id: Any) -> Any:
    name = _lock_name(session, params, "steal")
    locks = session.server.locks
    if locks.waiting(session, name):
        raise syntax_error(params, 'must issue "unlock" before new "steal"')
    victim = locks.steal(session, name)
    if victim is not None and victim is not session:
        victim.send(notification("stolen", [name]))
    # The thief learns it holds the lock from the reply alone: the real server sends it
    # no "locked" notification.
    return {"locked": True}


def unlock(session: Session, params: list[Any], msg_id: Any) -> Any:
    name = _lock_name(session, params, "unlock")
    locks = session.server.locks
    if not locks.waiting(session, name):
        raise syntax_error(params, 'unlock: "unlock" without "lock" or "steal"')
    new_owner = locks.unlock(session, name)
    if new_owner is not None:
        new_owner.send(notification("locked", [name]))
    return {}


def convert(session: Session, params: list[Any], msg_id: Any) -> Any:
    """Checks in the real server's order: database, params, the new schema, its name.
    Unlike the real server we refuse to convert `_Server` (see docs/compat.md)."""
    hosted = _db(session, params, "convert")
    denied = convert_denied(session.access(), hosted.name)
    if denied is not None:
        raise denied
    if len(params) != 2:
        raise syntax_error(params, "array expected")
    schema = DatabaseSchema.from_json(params[1], allow_reserved=hosted.name.startswith("_"))
    if schema.name != hosted.name:
        raise OvsdbError("invalid parameters", f"new schema name ({schema.name}) does not "
                                               f"match database name ({hosted.name})")
    if hosted.read_only_reason is not None:
        raise OvsdbError("not allowed", f"cannot convert {hosted.name}")
    if hosted.cluster is not None:
        # (through the cluster: every member loads the converted database as it
        # applies the entry; answered once it is applied here)
        new_db = convert_database(hosted.db, schema)

        def done(result: Outcome) -> None:
            if isinstance(result, Canceled):
                session.send(error_reply("canceled", msg_id))
            else:
                session.send(reply({}, msg_id))

        hosted.cluster.convert(params[1], new_db, done)
        return PENDING
    session.server.convert_db(hosted, params[1], requester=session)
    return {}


HANDLERS: dict[str, Callable[[Session, list[Any], Any], Any]] = {
    "convert": convert,
    "list_dbs": list_dbs,
    "get_schema": get_schema,
    "echo": echo,
    "get_server_id": get_server_id,
    "set_db_change_aware": set_db_change_aware,
    "transact": transact,
    "monitor": monitor,
    "monitor_cond": monitor_cond,
    "monitor_cond_since": monitor_cond_since,
    "monitor_cond_change": monitor_cond_change,
    "monitor_cancel": monitor_cancel,
    "lock": lock,
    "steal": steal,
    "unlock": unlock,
}
