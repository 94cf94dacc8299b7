"""The pyovsdb IDL: a replica of an OVSDB database kept up to date over a monitor, with
change tracking and transactions (asyncio; `BlockingIdl` for threaded programs)."""

from .blocking import BlockingIdl
from .idl import (
    ALERT,
    MONITOR,
    ON_DEMAND,
    Backoff,
    Idl,
    IdlConfigError,
    NoServerError,
)
from .replica import Batch, Index, Replica, ReplicaTable
from .row import IdlRow, NotFetchedError
from .tracking import DELETE, INSERT, UPDATE, ChangeView, Watch, changed_columns
from .txn import NewRow, Result, Status, Transaction, TxnError

__all__ = [
    "ALERT",
    "DELETE",
    "INSERT",
    "MONITOR",
    "ON_DEMAND",
    "UPDATE",
    "Backoff",
    "Batch",
    "BlockingIdl",
    "ChangeView",
    "Idl",
    "IdlConfigError",
    "IdlRow",
    "Index",
    "NewRow",
    "NoServerError",
    "NotFetchedError",
    "Replica",
    "ReplicaTable",
    "Result",
    "Status",
    "Transaction",
    "TxnError",
    "Watch",
    "changed_columns",
]
