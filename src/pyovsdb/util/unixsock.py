"""Unix domain sockets at any path, as Open vSwitch reaches them.

A socket address holds at most 107 bytes of path. The real tools bind and connect
longer names through the directory: they open it and use
`/proc/self/fd/N/BASENAME` (lib/socket-util-unix.c), so a run directory deep in a
test harness or a container's mount works. We do the same.

Rules kept here:
- A path that fits is used as it is; a longer one through its directory's descriptor,
  held open only while binding or connecting. If even that name is too long (a long
  base name), the error is the kernel's "AF_UNIX path too long".
- `listen_unix` removes a file left at the path first, as the real server does.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

MAX_PATH = 107  # sizeof(sun_path) less the terminating NUL


@contextmanager
def short_name(path: str) -> Iterator[str]:
    """A name of at most MAX_PATH bytes that reaches `path`, valid inside the block."""
    if len(os.fsencode(path)) <= MAX_PATH:
        yield path
        return
    directory, base = os.path.split(path)
    fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        name = f"/proc/self/fd/{fd}/{base}"
        if len(os.fsencode(name)) > MAX_PATH:
            raise OSError(errno.ENAMETOOLONG, "AF_UNIX path too long")
        yield name
    finally:
        os.close(fd)


def listen_unix(path: str, backlog: int) -> socket.socket:
    """A listening stream socket bound at `path`."""
    if os.path.lexists(path):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with short_name(path) as name:
            sock.bind(name)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def connect_unix(path: str, timeout: float | None = None) -> socket.socket:
    """A blocking stream socket connected to `path`."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with short_name(path) as name:
            sock.connect(name)
    except OSError:
        sock.close()
        raise
    sock.settimeout(None)
    return sock


async def aconnect_unix(path: str) -> socket.socket:
    """A non-blocking stream socket connected to `path`, for the running loop."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        with short_name(path) as name:
            await asyncio.get_running_loop().sock_connect(sock, name)
    except BaseException:
        sock.close()
        raise
    return sock
