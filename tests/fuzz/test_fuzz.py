"""The fuzz targets as ordinary tests: the seed corpus, random mutations of it, a few
seconds of coverage-guided fuzzing with atheris, and a timing check that the stream
framing stays linear on inputs built to make it rescan.

A long run is started by hand (docs/fuzzing.md); what it finds goes into the corpus
(`tests/fuzz/corpus/<target>/`) so that these tests replay it from then on.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fuzz_stream
import fuzz_txn
import pytest

from procs import require
from pyovsdb.jsonrpc.stream import JsonStream
from pyovsdb.storage.log import write_new_file
from robust_counts import COUNTS

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
TARGETS: dict[str, Callable[[bytes], None]] = {
    "stream": fuzz_stream.TestOneInput,
    "txn": fuzz_txn.TestOneInput,
}
OPTIONS = {
    "stream": ["-max_len=4096", f"-dict={HERE / 'json.dict'}"],
    "txn": ["-max_len=1024", "-len_control=0"],
}
FUZZ_SECONDS = 4


def _corpus(name: str) -> list[bytes]:
    return [p.read_bytes() for p in sorted((CORPUS / name).iterdir())]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seed_corpus(name: str) -> None:
    inputs = _corpus(name)
    assert inputs
    for data in inputs:
        TARGETS[name](data)
    COUNTS.fuzzed(f"{name} (corpus)", len(inputs))


def _mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(5)
        if k == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif k == 1 and b:
            i = rng.randrange(len(b))
            del b[i:i + rng.randint(1, 8)]
        elif k == 2:
            other = rng.choice(pool)
            i = rng.randrange(len(other) + 1)
            b[rng.randrange(len(b) + 1):0] = other[i:i + rng.randint(1, 64)]
        elif k == 3 and b:
            i = rng.randrange(len(b))
            b[i:i] = bytes([b[i]]) * rng.randint(1, 16)
        else:
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(b)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_random_mutations_of_the_corpus(name: str) -> None:
    """Works without atheris too: 1.5 s of blind mutations, reproducible by seed."""
    pool = _corpus(name)
    rng = random.Random(20261130)
    n = 0
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        data = _mutate(rng, rng.choice(pool), pool)
        try:
            TARGETS[name](data)
        except Exception:
            pytest.fail(f"{name} target failed on input {data!r}")
        n += 1
    COUNTS.fuzzed(f"{name} (mutations)", n)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_coverage_guided_fuzzing(name: str, tmp_path: Path) -> None:
    """A short atheris run; a long one is the same command with a longer time."""
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS / name, corpus)
    cmd = [sys.executable, str(HERE / f"fuzz_{name}.py"), str(corpus),
           f"-max_total_time={FUZZ_SECONDS}", "-timeout=20", "-rss_limit_mb=2048",
           f"-artifact_prefix={tmp_path}/", "-print_final_stats=1", *OPTIONS[name]]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    found = sorted(tmp_path.glob("crash-*")) + sorted(tmp_path.glob("timeout-*")) + \
        sorted(tmp_path.glob("oom-*"))
    if p.returncode != 0 or found:
        crash = found[0].read_bytes() if found else b""
        pytest.fail(f"fuzz_{name} failed (exit {p.returncode}); input {crash!r}\n"
                    f"add it to tests/fuzz/corpus/{name}/ once fixed\n{p.stderr[-6000:]}")
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", p.stderr)
    assert m, p.stderr[-2000:]
    COUNTS.fuzzed(f"{name} (atheris)", int(m.group(1)))


@pytest.mark.interop
def test_txn_records_read_by_the_real_tool(tmp_path: Path) -> None:
    """The committed transactions of the seed corpus, written as a database file, are
    read by the real ovsdb-tool into the same rows as ours."""
    require("ovsdb-tool")
    for i, data in enumerate(_corpus("txn")):
        records: list[Any] = []
        ours = fuzz_txn.check(data, records)
        path = tmp_path / f"db{i}"
        write_new_file(str(path), [fuzz_txn.SCHEMA_JSON, *records])
        ops = [{"op": "select", "table": t, "where": [],
                "columns": sorted({c for rows in ours[t].values() for c in rows} | {"_uuid"})}
               for t in fuzz_txn.TABLES]
        p = subprocess.run(["ovsdb-tool", "query", str(path),
                            json.dumps([fuzz_txn.SCHEMA_JSON["name"], *ops])],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        theirs = json.loads(p.stdout)
        for t, res in zip(fuzz_txn.TABLES, theirs, strict=True):
            assert {r["_uuid"][1]: r for r in res["rows"]} == ours[t], (i, t)


# -- linear cost of the framing --------------------------------------------------------------


def _adversarial(kind: str, n: int) -> tuple[bytes, int]:
    """About n bytes meant to make a scanner rescan, and the read size to feed them in."""
    if kind == "deep containers cut everywhere":
        unit = b"[" * 9 + b'"a",1' + b"]" * 9 + b","
        return b'{"p":[' + unit * (n // len(unit)) + b'0]}', 7
    if kind == "nesting at the depth limit":
        unit = b"[" * 1000 + b"]" * 1000
        return b"[" + b",".join([unit] * max(1, n // len(unit))) + b"]", 4096
    if kind == "escapes cut at backslashes":
        return b'{"s":"' + b'\\"\\\\' * (n // 4) + b'"}', 3
    if kind == "many small messages":
        return b"{}" * (n // 2), 65536
    if kind == "one big string":
        return b'{"s":"' + b"x" * n + b'"}', 1000
    if kind == "whitespace between messages":
        return (b"{}" + b" " * 50) * (n // 52), 5
    raise AssertionError(kind)


KINDS = ["deep containers cut everywhere", "nesting at the depth limit",
         "escapes cut at backslashes", "many small messages", "one big string",
         "whitespace between messages"]


class _Counting:
    """Wraps a compiled pattern or the JSON parser, adding up the bytes each call
    covers: the framing's work, independent of how busy the machine is."""

    def __init__(self, target: Any, counter: list[int], attr: str) -> None:
        self._target = target
        self._counter = counter
        self._attr = attr

    def match(self, buf: Any, pos: int = 0, *args: Any) -> Any:
        m = self._target.match(buf, pos, *args)
        endpos = args[0] if args else len(buf)
        self._counter[0] += 1 + (m.end() if m is not None else endpos) - pos
        return m

    def search(self, buf: Any, pos: int = 0, *args: Any) -> Any:
        m = self._target.search(buf, pos, *args)
        endpos = args[0] if args else len(buf)
        self._counter[0] += 1 + (m.end() if m is not None else endpos) - pos
        return m

    def loads(self, data: Any) -> Any:
        self._counter[0] += 1 + len(data)
        return self._target.loads(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def _feed_work(data: bytes, read: int, monkeypatch: pytest.MonkeyPatch) -> int:
    from pyovsdb.jsonrpc import stream as stream_mod

    work = [0]
    with monkeypatch.context() as m:
        for name in dir(stream_mod):
            obj = getattr(stream_mod, name)
            if isinstance(obj, re.Pattern):
                m.setattr(stream_mod, name, _Counting(obj, work, name))
        m.setattr(stream_mod, "orjson", _Counting(stream_mod.orjson, work, "orjson"))
        s = JsonStream()
        for i in range(0, len(data), read):
            s.feed(data[i:i + read])
    return work[0]


@pytest.mark.parametrize("kind", KINDS)
def test_framing_cost_is_linear(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight times the input may cost about eight times the work, never sixty-four:
    the bytes every scan and parse covers are counted, so the check does not depend
    on timing."""
    n = 40_000
    small = _feed_work(*_adversarial(kind, n), monkeypatch)
    large = _feed_work(*_adversarial(kind, 8 * n), monkeypatch)
    assert large <= 10 * small, (kind, small, large)
