"""The pyovsdb IDL: a replica of an OVSDB database kept up to date over a monitor, with
change tracking and transactions (asyncio; `BlockingIdl` for threaded programs)."""

from .blocking import BlockingIdl
from .idl import ALERT, MONITOR, ON_DEMAND, Idl, NoServerError
from .replica import Index, Replica, ReplicaTable
from .row import IdlRow
from .txn import NewRow, Result, Status, Transaction, TxnError

__all__ = [
    "ALERT",
    "MONITOR",
    "ON_DEMAND",
    "BlockingIdl",
    "Idl",
    "IdlRow",
    "Index",
    "NewRow",
    "NoServerError",
    "Replica",
    "ReplicaTable",
    "Result",
    "Status",
    "Transaction",
    "TxnError",
]
