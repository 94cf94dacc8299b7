"""What the fuzz targets share: a deterministic source of choices drawn from the input
bytes, and the entry point that runs a target under atheris (libFuzzer).

Rules kept here:
- A target is a function of one `bytes` argument that raises on a property violation.
  The same function is run by atheris (coverage-guided, `python tests/fuzz/fuzz_X.py`),
  by pytest on the seed corpus, and by pytest on random inputs when atheris is missing.
- `Choices` reads the input as a sequence of decisions, so that every input means one
  run, and libFuzzer's mutations of the bytes become mutations of the decisions. When
  the bytes run out every decision is 0 (the first item, no rare branch): short inputs
  mean small, simple runs.
- Only pyovsdb is instrumented for coverage (orjson and the standard library are not).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class Choices:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        b = self.data[self.pos]
        self.pos += 1
        return b

    def below(self, n: int) -> int:
        """An integer in [0, n)."""
        if n <= 1:
            return 0
        if n <= 256:
            return self.byte() % n
        return (self.byte() << 8 | self.byte()) % n

    def chance(self, one_in: int) -> bool:
        """True once in `one_in` (never when the bytes have run out)."""
        return self.below(one_in) == one_in - 1

    def pick(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def rest(self) -> bytes:
        out = self.data[self.pos:]
        self.pos = len(self.data)
        return out


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Instrument pyovsdb modules imported inside, when run as a fuzzer."""
    if sys.argv and sys.argv[0].endswith(".py") and _main_is_fuzzer():
        import atheris  # type: ignore[import-not-found]

        with atheris.instrument_imports(include=["pyovsdb"]):
            yield
    else:
        yield


def _main_is_fuzzer() -> bool:
    main = sys.modules.get("__main__")
    return bool(main and getattr(main, "__file__", "").rsplit("/", 1)[-1].startswith("fuzz_"))


def run(target: Callable[[bytes], Any]) -> None:
    """`python tests/fuzz/fuzz_X.py [libFuzzer options] [corpus dirs]`."""
    import atheris

    atheris.Setup(sys.argv, target)
    atheris.Fuzz()
