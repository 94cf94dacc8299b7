"""Output batching: everything one burst of input causes is written with as few system
calls as possible, storage first.

Rules kept here:
- While a batch is open, connections queue what they send instead of writing it, and
  storages queue records instead of writing them.
- Closing the outermost batch first runs the storage flushes (records reach the file,
  and are fsynced if any transaction asked for durability), then the connection
  flushes. So no client, not even one watching through a monitor, ever sees a change
  before its record is written: the order that writing each commit immediately gives,
  at the cost of one write per burst instead of one per transaction.
- What a storage flush sends (a clustered member applies the entries a message
  committed, and answers and updates the clients) is queued too and goes out in the
  same connection flushes: the updates and the reply that one commit causes leave in
  one write, not one each.
- Between the two, the render steps run (`defer_render`): what a batch's commits owe
  the monitors is rendered once per monitor, merged, after every commit of the batch
  and before any connection writes (as the real server composes a monitor's update
  from all the changes since its last flush).
- Outside a batch, every send and every commit is written at once.
"""

from __future__ import annotations

from collections.abc import Callable

_depth = 0
_storage: dict[int, Callable[[], None]] = {}
_renders: dict[int, Callable[[], None]] = {}
_outputs: dict[int, Callable[[], None]] = {}


def active() -> bool:
    return _depth > 0


def begin() -> None:
    global _depth
    _depth += 1


def end() -> None:
    global _depth
    _depth -= 1
    if _depth == 0:
        flush()


def flush() -> None:
    global _depth
    _depth += 1  # sends made by the flushes below are queued, and flushed here
    try:
        while _storage or _renders or _outputs:
            storage = list(_storage.values())
            _storage.clear()
            for f in storage:
                f()
            renders = list(_renders.values())
            _renders.clear()
            for f in renders:
                f()
            if _storage:  # (a render cannot commit; but should one, storage first)
                continue
            outputs = list(_outputs.values())
            _outputs.clear()
            for f in outputs:
                f()
    finally:
        _depth -= 1


def defer_storage(key: object, flush_fn: Callable[[], None]) -> None:
    _storage[id(key)] = flush_fn


def defer_render(key: object, render_fn: Callable[[], None]) -> None:
    _renders[id(key)] = render_fn


def defer_output(key: object, flush_fn: Callable[[], None]) -> None:
    _outputs[id(key)] = flush_fn
