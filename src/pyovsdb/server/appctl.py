"""The control socket that `ovs-appctl -t SOCKET COMMAND ARGS...` talks to.

Rules kept here (those of lib/unixctl.c):
- JSON-RPC over a unix socket: a request's method is the command name, its params the
  command's arguments, all strings.
- A command replies with text (`result`) or an error text (`error`); ovs-appctl prints
  the first on stdout and exits 0, the second on stderr and exits 2.
- Argument counts are checked before a command runs, with the real wording.
- `list-commands` and `version` exist in every process, and the `vlog/*` commands in
  every daemon that registers them with `register_vlog` (lib/vlog.c's set).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..jsonrpc.connection import Connection
from ..jsonrpc.message import NOTIFY, REQUEST, error_reply, reply
from ..util import vlog
from ..util.unixsock import listen_unix

log = logging.getLogger("unixctl")

Handler = Callable[[list[str]], str]


class CommandError(Exception):
    """Raised by a command handler to reply with an error text."""


@dataclass
class Command:
    usage: str
    min_args: int
    max_args: int
    handler: Handler


class UnixctlServer:
    def __init__(self, path: str, version: str) -> None:
        self.path = path
        self.commands: dict[str, Command] = {}
        # What the owner needs to register more commands later.
        self.extensions: dict[str, Any] = {}
        self.server: asyncio.AbstractServer | None = None
        self.register("list-commands", "", 0, 0, self._list_commands)
        self.register("version", "", 0, 0, lambda args: version)

    def register(self, name: str, usage: str, min_args: int, max_args: int,
                 handler: Handler) -> None:
        self.commands[name] = Command(usage, min_args, max_args, handler)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_unix_server(lambda: _UnixctlConn(self),
                                                    sock=listen_unix(self.path, 128))

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def _list_commands(self, args: list[str]) -> str:
        lines = ["The available commands are:"]
        for name in sorted(self.commands):
            lines.append(f"  {name:<23} {self.commands[name].usage}")
        return "\n".join(lines) + "\n"

    def run(self, method: str, params: list[Any]) -> tuple[bool, str]:
        cmd = self.commands.get(method)
        if cmd is None:
            return False, (f'"{method}" is not a valid command (use "list-commands" to see a '
                           "list of valid commands)\n")
        if len(params) < cmd.min_args:
            return False, (f'"{method}" command requires at least {cmd.min_args} arguments\n')
        if len(params) > cmd.max_args:
            return False, f'"{method}" command takes at most {cmd.max_args} arguments\n'
        if not all(type(p) is str for p in params):
            return False, f'"{method}" command has non-string argument\n'
        try:
            ok, text = True, cmd.handler(list(params))
        except CommandError as e:
            ok, text = False, str(e)
        except Exception as e:  # a bug in a command must not take the daemon down
            log.exception("unixctl command %s failed", method)
            ok, text = False, f"internal error: {e}"
        # The real unixctl ends every non-empty reply with a newline.
        if text and not text.endswith("\n"):
            text += "\n"
        return ok, text


class _UnixctlConn(Connection):
    def __init__(self, owner: UnixctlServer) -> None:
        super().__init__("unixctl")
        self.owner = owner

    def on_message(self, kind: str, msg: dict[str, Any]) -> None:
        if kind not in (REQUEST, NOTIFY):
            log.warning("%s: received unexpected %s message", self.name, kind)
            self.close()
            return
        ok, text = self.owner.run(msg["method"], msg["params"])
        if kind == NOTIFY:
            return
        if ok:
            self.send(reply(text, msg["id"]))
        else:
            self.send(error_reply(text, msg["id"]))


def register_vlog(uc: UnixctlServer) -> None:
    """The log commands every OVS daemon serves (vlog_init in lib/vlog.c)."""
    uc.register("vlog/list", "", 0, 0, lambda a: vlog.current().list())
    uc.register("vlog/list-pattern", "", 0, 0, lambda a: vlog.current().list_patterns())
    uc.register("vlog/set", "{spec | PATTERN:destination:pattern}", 0, 2**31, _vlog_set)
    uc.register("vlog/reopen", "", 0, 0, _vlog_reopen)
    uc.register("vlog/close", "", 0, 0, _vlog_close)


def _vlog_set(args: list[str]) -> str:
    try:
        for spec in args or [""]:
            vlog.current().set_spec(spec)
    except ValueError as e:
        raise CommandError(str(e)) from None
    return ""


def _vlog_reopen(args: list[str]) -> str:
    try:
        vlog.current().reopen()
    except OSError as e:
        raise CommandError(f"could not reopen log file ({e.strerror})") from None
    return ""


def _vlog_close(args: list[str]) -> str:
    vlog.current().close()
    return ""
