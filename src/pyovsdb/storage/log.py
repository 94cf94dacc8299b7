"""OVSDB log files: the record framing shared by standalone and clustered databases.

Rules kept here:
- A record is `<magic> <length> <sha1>\\n<body>`, where the body is one JSON text plus a
  newline, `length` its size in bytes and `sha1` the lowercase hex SHA-1 of the body.
  The magic is "OVSDB JSON" for standalone files and "OVSDB CLUSTER" for clustered ones.
- Reading stops at the first record that is torn or corrupt (bad header, short body,
  checksum mismatch, invalid JSON). Everything before it is kept and the problem is
  reported; the first write after such a read truncates the file at the last good
  record, so a crash in the middle of a write never poisons later records.
- Replacing the whole file (compaction, conversion) writes a temporary file, fsyncs it
  and renames it over the original, then fsyncs the directory: at every instant the
  path names either the complete old file or the complete new one.
- A file that is open for writing is locked (`.NAME.~lock~`, fcntl), with the same lock
  file as the real tools use, so two writers never interleave.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator
from typing import Any

import orjson

from ..ovsdb.errors import OvsdbError

MAGIC_STANDALONE = "OVSDB JSON"
MAGIC_CLUSTERED = "OVSDB CLUSTER"
_HEADER_RE = re.compile(rb"(OVSDB JSON|OVSDB CLUSTER) (\d{1,20}) ([0-9a-f]{40})\n")
_MAX_HEADER = 80


def frame(obj: Any, magic: str = MAGIC_STANDALONE) -> bytes:
    body = orjson.dumps(obj) + b"\n"
    return b"%s %d %s\n%s" % (magic.encode(), len(body), hashlib.sha1(body).hexdigest().encode(),
                              body)


class ReadResult:
    """Records of a file, the offset where the good part ends, and the first problem."""

    __slots__ = ("end", "error", "magic", "records", "size")

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.end = 0
        self.size = 0
        self.error: str | None = None
        self.magic: str | None = None


def parse_records(data: bytes, expected_magic: str | None = None) -> ReadResult:
    res = ReadResult()
    res.size = len(data)
    pos = 0
    n = len(data)
    while pos < n:
        m = _HEADER_RE.match(data, pos, min(n, pos + _MAX_HEADER))
        if m is None:
            res.error = f"{pos}: parse error reading header"
            break
        magic = m.group(1).decode()
        if res.magic is None:
            res.magic = magic
            if expected_magic is not None and magic != expected_magic:
                res.error = f'{pos}: bad magic "{magic}" (expected "{expected_magic}")'
                break
        elif magic != res.magic:
            res.error = f'{pos}: bad magic "{magic}" (expected "{res.magic}")'
            break
        length = int(m.group(2))
        body_start = m.end()
        body_end = body_start + length
        if body_end > n:
            res.error = (f"{pos}: record ends after the end of the file "
                         f"(expected {length} bytes, {n - body_start} available)")
            break
        body = data[body_start:body_end]
        if hashlib.sha1(body).hexdigest() != m.group(3).decode():
            res.error = f"{pos}: checksum mismatch"
            break
        try:
            rec = orjson.loads(body)
        except orjson.JSONDecodeError as e:
            res.error = f"{pos}: parse error in record: {e.msg}"
            break
        res.records.append(rec)
        pos = body_end
        res.end = pos
    return res


def read_file(path: str, expected_magic: str | None = None) -> ReadResult:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OvsdbError("I/O error", f"{path}: open failed ({e.strerror})") from None
    if not data:
        raise OvsdbError("I/O error", f"{path}: cannot identify file type")
    return parse_records(data, expected_magic)


def lock_path(path: str) -> str:
    d, base = os.path.split(os.path.abspath(path))
    return os.path.join(d, f".{base}.~lock~")


class FileLock:
    """The `.NAME.~lock~` lock the real ovsdb-server and ovsdb-tool take. fcntl locks do
    not exclude the process that holds them, so we also refuse a second holder here."""

    _held: set[str] = set()

    def __init__(self, path: str) -> None:
        self.path = lock_path(path)
        if self.path in FileLock._held:
            self.fd = -1
            raise OvsdbError("I/O error", f"{self.path}: failed to lock lockfile (already "
                                          "locked by this process)")
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(self.fd)
            if e.errno in (errno.EAGAIN, errno.EACCES):
                raise OvsdbError(
                    "I/O error", f"{self.path}: failed to lock lockfile (Resource temporarily "
                    "unavailable)"
                ) from None
            raise
        FileLock._held.add(self.path)

    def release(self) -> None:
        if self.fd >= 0:
            FileLock._held.discard(self.path)
            try:
                fcntl.lockf(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = -1


class LogWriter:
    """Appends records to a log file whose good part ends at `offset`."""

    def __init__(self, path: str, offset: int, magic: str = MAGIC_STANDALONE,
                 lock: bool = True) -> None:
        self.path = path
        self.magic = magic
        self.lock = FileLock(path) if lock else None
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        # A torn or corrupt tail is dropped by the first write, as the real server does,
        # so that it cannot hide what we append.
        self.bad_tail = os.fstat(self.fd).st_size > offset
        self.offset = offset
        self.n_writes = 0

    def append(self, obj: Any) -> int:
        data = frame(obj, self.magic)
        return self.append_framed(data)

    def append_framed(self, data: bytes) -> int:
        if self.bad_tail:
            os.ftruncate(self.fd, self.offset)
            self.bad_tail = False
        view = memoryview(data)
        written = 0
        while written < len(data):
            written += os.pwrite(self.fd, view[written:], self.offset + written)
        self.offset += len(data)
        self.n_writes += 1
        return len(data)

    def sync(self) -> None:
        os.fsync(self.fd)

    def replace(self, records: list[Any]) -> None:
        """Atomically replace the whole file with `records`."""
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            data = b"".join(frame(r, self.magic) for r in records)
            view = memoryview(data)
            off = 0
            while off < len(data):
                off += os.write(fd, view[off:])
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        try:
            os.rename(tmp, self.path)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        # From here the path names the new file: append to it even if the directory
        # fsync below fails.
        os.close(self.fd)
        self.fd = fd
        self.offset = len(data)
        self.bad_tail = False
        self.n_writes = 0
        _fsync_dir(self.path)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.lock is not None:
            self.lock.release()
            self.lock = None


def _fsync_dir(path: str) -> None:
    dfd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def write_new_file(path: str, records: list[Any], magic: str = MAGIC_STANDALONE) -> None:
    """Create a log file that must not exist yet (ovsdb-tool create semantics)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise OvsdbError("I/O error", f"{path}: create failed (File exists)") from None
    except OSError as e:
        raise OvsdbError("I/O error", f"{path}: create failed ({e.strerror})") from None
    try:
        data = b"".join(frame(r, magic) for r in records)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def iter_framed(records: list[Any], magic: str = MAGIC_STANDALONE) -> Iterator[bytes]:
    for r in records:
        yield frame(r, magic)
