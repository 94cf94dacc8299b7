"""OVSDB log files: the record framing shared by standalone and clustered databases.

Rules kept here:
- A record is `<magic> <length> <sha1>\\n<body>`, where the body is one JSON text plus a
  newline, `length` its size in bytes and `sha1` the lowercase hex SHA-1 of the body.
  The magic is "OVSDB JSON" for standalone files and "OVSDB CLUSTER" for clustered ones.
- Reading stops at the first record that is torn or corrupt (bad header, short body,
  checksum mismatch, invalid JSON, JSON that is not an object). Everything before it is
  kept and the problem is reported in the real tools' words (`syntax error: NAME: parse
  error at offset N in header line "..."`, ...); the first write after such a read
  truncates the file at the last good record, so a crash in the middle of a write
  never poisons later records.
- A body may hold strings with bytes that are not UTF-8 (the real server writes a
  transaction's comment as it received it): such a record is read as the real tools
  read it (`util.utf8.loads_raw`), not taken for a corrupt one, and written with those
  bytes as they came, as the real server writes them.
- Every whole file is written the same way (`write_whole`): all its records, however
  short each write() falls (on Linux at most 2 GiB less 4 KiB go at once), then an
  fsync. A write that fails cuts the file back to the records written whole; the
  tools' writes then log `ovsdb_log` "NAME: write failed (ERROR)" (the absolute name)
  and report "I/O error: NAME: write failed (ERROR)", as the real tools. The new file
  of a compaction or conversion that fails is removed.
- Replacing the whole file (compaction, conversion) writes a temporary file and renames
  it over the original, then fsyncs the directory (`rename_over`): at every instant
  the path names either the complete old file or the complete new one. A symlinked
  path keeps its link: the target is replaced, as the real server and tool do. As
  theirs, a directory that cannot be fsynced is logged (`socket_util`), not an error:
  the rename has happened.
- Files are created with mode 0660 less the umask, as the real tools and server create
  them (0640 under the usual umask 022): a new file, and the new file that replaces
  the old one on compaction or conversion, whose mode is not carried over.
- A file that is open for writing is locked (`.NAME.~lock~`, fcntl, next to the file a
  symlink points to), with the same lock file as the real tools use, so two writers
  never interleave.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import logging
import os
import re
from collections.abc import Iterator
from typing import Any

import orjson

from ..ovsdb.errors import OvsdbError
from ..util.utf8 import loads_raw, with_raw_strings

MAGIC_STANDALONE = "OVSDB JSON"
MAGIC_CLUSTERED = "OVSDB CLUSTER"
_HEADER_RE = re.compile(rb"(OVSDB JSON|OVSDB CLUSTER) (\d{1,20}) ([0-9a-f]{40})\n")
_MAX_HEADER = 80
FILE_MODE = 0o660  # less the umask, as `open(name, flags, 0660)` in the real tools


def frame(obj: Any, magic: str = MAGIC_STANDALONE) -> bytes:
    try:
        body = orjson.dumps(obj) + b"\n"
    except TypeError:  # a string with bytes that are not UTF-8: written as they came
        body = orjson.dumps(with_raw_strings(obj)) + b"\n"
    return b"%s %d %s\n%s" % (magic.encode(), len(body), hashlib.sha1(body).hexdigest().encode(),
                              body)


class ReadResult:
    """Records of a file, the offset where the good part ends, and the first problem:
    `problem` in the real tools' words (tag and text), `error` its text alone."""

    __slots__ = ("end", "magic", "problem", "records", "size")

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.end = 0
        self.size = 0
        self.problem: OvsdbError | None = None
        self.magic: str | None = None

    @property
    def error(self) -> str | None:
        return None if self.problem is None else self.problem.details


def _header_line(data: bytes, pos: int) -> str:
    """The header line as the real reader quotes it: read with fgets() into a 128-byte
    buffer, quoted up to the newline; but its parser has already cut the line after the
    magic (`OVSDB JSON`) if the line got that far."""
    line = data[pos:pos + 127].split(b"\n", 1)[0]
    if line.startswith(b"OVSDB "):
        magic, sep, _ = line[6:].partition(b" ")
        if sep:
            line = b"OVSDB " + magic
    return line.decode("utf-8", "replace")


def parse_records(data: bytes, expected_magic: str | None = None, name: str = "") -> ReadResult:
    """The records of a log file's contents; `name` (the file as the user named it)
    prefixes the problem, as in the real tools' messages."""
    res = ReadResult()
    res.size = len(data)
    pos = 0
    n = len(data)
    while pos < n:
        m = _HEADER_RE.match(data, pos, min(n, pos + _MAX_HEADER))
        magic = m.group(1).decode() if m is not None else None
        if pos == 0:
            # What the real tools check when they open the file.
            if magic is None:
                res.problem = OvsdbError("ovsdb error", f"{name}: unexpected file format")
                break
            res.magic = magic
            if expected_magic is not None and magic != expected_magic:
                res.problem = OvsdbError("ovsdb error", f"{name}: cannot identify file type")
                break
        if m is None or magic != res.magic:
            res.problem = OvsdbError(
                "syntax error", f"{name}: parse error at offset {pos} in header line "
                f'"{_header_line(data, pos)}"')
            break
        length = int(m.group(2))
        body_start = m.end()
        body_end = body_start + length
        if body_end > n:
            res.problem = OvsdbError(
                "I/O error", f"{name}: error reading {length} bytes starting at offset "
                f"{body_start} (End of file)")
            break
        body = data[body_start:body_end]
        digest = hashlib.sha1(body).hexdigest()
        if digest != m.group(3).decode():
            res.problem = OvsdbError(
                "syntax error", f"{name}: {length} bytes starting at offset {body_start} "
                f"have SHA-1 hash {digest} but should have hash {m.group(3).decode()}")
            break
        try:
            rec = orjson.loads(body)
        except orjson.JSONDecodeError as e:
            try:  # a string with bytes that are not UTF-8 (the real server writes a
                rec = loads_raw(body)  # transaction's comment as the client sent it)
            except ValueError:
                res.problem = OvsdbError(
                    "syntax error", f"{name}: {length} bytes starting at offset "
                    f"{body_start} are not valid JSON ({e.msg})")
                break
        if type(rec) is not dict:
            res.problem = OvsdbError(
                "syntax error", f"{name}: {length} bytes starting at offset {body_start} "
                "are not a JSON object")
            break
        res.records.append(rec)
        pos = body_end
        res.end = pos
    return res


def read_file(path: str, expected_magic: str | None = None, name: str | None = None
              ) -> ReadResult:
    """Read a whole log file; `name` is how messages name it (default: `path`)."""
    name = path if name is None else name
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OvsdbError("I/O error", f"{name}: open failed ({e.strerror})") from None
    if not data:
        raise OvsdbError("ovsdb error", f"{name}: cannot identify file type")
    return parse_records(data, expected_magic, name)


def lock_path(path: str) -> str:
    """The lock of the file a (possibly symlinked) path names: next to the target."""
    d, base = os.path.split(os.path.realpath(path))
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
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
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
        write_all(self.fd, data, self.offset)
        self.offset += len(data)
        self.n_writes += 1
        return len(data)

    def sync(self) -> None:
        os.fsync(self.fd)

    def replace(self, records: list[Any]) -> None:
        """Atomically replace the whole file with `records`. If the path is a symlink
        its target is replaced (the temporary file goes next to it): the link stays."""
        target = os.path.realpath(self.path)
        tmp = target + ".tmp"
        # A stale temporary file goes first: the new one gets the mode of a new file.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        frames = [frame(r, self.magic) for r in records]
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            write_whole(fd, frames)
            rename_over(tmp, target)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(self.fd)
        self.fd = fd
        self.offset = sum(map(len, frames))
        self.bad_tail = False
        self.n_writes = 0

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.lock is not None:
            self.lock.release()
            self.lock = None


def write_all(fd: int, data: bytes, offset: int | None = None) -> None:
    """Write all of `data`, at `offset` (else at the file's position): one write()
    may write less than it was given."""
    view = memoryview(data)
    done = 0
    while done < len(view):
        if offset is None:
            done += os.write(fd, view[done:])
        else:
            done += os.pwrite(fd, view[done:], offset + done)


def write_whole(fd: int, frames: list[bytes]) -> None:
    """Write `frames` (framed records) as the whole of the empty file open as `fd`, in
    full, and fsync it. If a write fails, the file is cut back to the records written
    whole (as the real tools leave it) and the OSError raised."""
    try:
        write_all(fd, b"".join(frames))
        os.fsync(fd)
    except OSError:
        written = os.fstat(fd).st_size
        end = 0
        for f in frames:
            if end + len(f) > written:
                break
            end += len(f)
        try:
            os.ftruncate(fd, end)
        except OSError:
            pass  # nothing more to do, as the real tools
        raise


def write_failed(path: str, e: OSError) -> OvsdbError:
    """A failed write of the file `path` (as the user named it): logged under its
    absolute name, and reported, in the real tools' words."""
    full = path if os.path.isabs(path) else f"{os.getcwd()}/{path}"  # `abs_file_name`
    logging.getLogger("ovsdb_log").warning("%s: write failed (%s)", full, e.strerror)
    return OvsdbError("I/O error", f"{path}: write failed ({e.strerror})")


def rename_over(tmp: str, target: str) -> None:
    """Put the complete, fsynced file `tmp` in place of `target` (the rename's OSError
    if it fails), then fsync the directory so that the rename lasts."""
    os.rename(tmp, target)
    fsync_dir(target)


def fsync_dir(path: str) -> None:
    """`fsync_parent_dir`: a failure is logged, not raised (a directory that does not
    support it, EINVAL or EROFS, silently), as the real tools."""
    d = os.path.dirname(path) or "."
    try:
        dfd = os.open(d, os.O_RDONLY)
    except OSError as e:
        logging.getLogger("socket_util").error("%s: open failed (%s)", d, e.strerror)
        return
    try:
        os.fsync(dfd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.EROFS):
            logging.getLogger("socket_util").error("%s: fsync failed (%s)", d, e.strerror)
    finally:
        os.close(dfd)


def write_new_file(path: str, records: list[Any], magic: str = MAGIC_STANDALONE) -> None:
    """Create a log file that must not exist yet (ovsdb-tool create semantics), holding
    its lock meanwhile as the real tools do (the lock file stays); a dangling symlink
    gets its target created."""
    lock = FileLock(path)
    # A dangling symlink: create the file it names (O_EXCL would refuse the link).
    dangling = os.path.islink(path) and not os.path.exists(path)
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | (0 if dangling else os.O_EXCL),
                         FILE_MODE)
        except FileExistsError:
            raise OvsdbError("I/O error", f"{path}: create failed (File exists)") from None
        except OSError as e:
            raise OvsdbError("I/O error", f"{path}: create failed ({e.strerror})") from None
        try:
            write_whole(fd, [frame(r, magic) for r in records])
        except OSError as e:
            raise write_failed(path, e) from None
        finally:
            os.close(fd)
    finally:
        lock.release()


def overwrite_file(path: str, records: list[Any], magic: str = MAGIC_STANDALONE) -> None:
    """Write `records` as the whole of the log file at `path`, created if need be (the
    real tools' OVSDB_LOG_CREATE, as `ovsdb-tool compact DB DST` writes DST): an
    existing file keeps its mode but must be a log file of this kind. A failed write
    removes the file."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as e:
        raise OvsdbError("I/O error", f"{path}: create or open failed ({e.strerror})"
                         ) from None
    try:
        head = os.pread(fd, 128, 0)
        if head:
            m = _HEADER_RE.match(head)
            if m is None:
                raise OvsdbError("ovsdb error", f"{path}: unexpected file format")
            if m.group(1).decode() != magic:
                raise OvsdbError("ovsdb error", f"{path}: cannot identify file type")
        try:
            os.ftruncate(fd, 0)
            write_whole(fd, [frame(r, magic) for r in records])
        except OSError as e:
            os.unlink(path)
            raise write_failed(path, e) from None
    finally:
        os.close(fd)


def iter_framed(records: list[Any], magic: str = MAGIC_STANDALONE) -> Iterator[bytes]:
    for r in records:
        yield frame(r, magic)
