"""A seeded pseudo-random generator in pure arithmetic, for the pure cores.

Rules kept here:
- No global state and no stdlib `random`: every generator is an object its owner seeds
  and passes down, so a pure core that draws from it is reproducible by construction,
  and the layering test can forbid `random` in pure packages outright.
- SplitMix64 (Steele, Lea, Flood 2014): the same seed gives the same stream on every
  machine and Python version. Not for secrets.
- The interface is the part of `random.Random` the cores use (`getrandbits`,
  `randrange`), so a `random.Random` can be passed wherever this is accepted.
"""

from __future__ import annotations

__all__ = ["SplitMix64"]

_M64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


class SplitMix64:
    __slots__ = ("_state",)

    def __init__(self, seed: int = 0) -> None:
        self._state = (seed ^ 0x5851F42D4C957F2D) & _M64

    def next64(self) -> int:
        """The next 64-bit word."""
        self._state = s = (self._state + _GAMMA) & _M64
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        return z ^ (z >> 31)

    def getrandbits(self, k: int, /) -> int:
        """A non-negative integer of `k` random bits."""
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        out = 0
        n = 0
        while n < k:
            out = (out << 64) | self.next64()
            n += 64
        return out >> (n - k)

    def randrange(self, stop: int, /) -> int:
        """A uniform integer in [0, stop), without modulo bias."""
        if stop <= 0:
            raise ValueError(f"empty range for randrange({stop})")
        bits = stop.bit_length()
        while True:
            r = self.getrandbits(bits)
            if r < stop:
                return r
