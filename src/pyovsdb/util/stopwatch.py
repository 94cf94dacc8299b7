"""Stopwatches as Open vSwitch keeps them (lib/stopwatch.c), with the text of
`stopwatch/show` and the effect of `stopwatch/reset`.

Rules kept here:
- A stopwatch measures samples between `start` and `stop` (whole milliseconds, from
  the caller's clock; a `stop` without a `start`, or a second `start`, is ignored). Its
  statistics are OVS's, quirks included: the count, maximum and minimum; the 95th
  percentile, exact below 50 samples (of an array whose first slot the first sample
  never fills) and by the P-square estimate after; averages weighted 0.5 (short term)
  and 0.01 (long term), both starting at the first sample.
- `reset` zeroes the count, extremes, percentile and averages, but keeps the
  percentile's markers and sample array, and a sample in progress, as OVS does.
- `show` lists every stopwatch in the order OVS walks its hash table of names (the
  names hashed as OVS hashes strings, in the order they were created), or the one
  named ("No such stopwatch" otherwise).
- Time is given by the caller; nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ovshash import shash_order

P = 0.95
MARKERS = 5
P_SQUARE_MIN = 50


@dataclass(slots=True)
class Percentile:
    n: list[int] = field(default_factory=lambda: [0] * MARKERS)
    n_prime: list[float] = field(default_factory=lambda: [0.0] * MARKERS)
    q: list[float] = field(default_factory=lambda: [0.0] * MARKERS)
    dn: list[float] = field(default_factory=lambda: [0.0] * MARKERS)
    samples: list[int] = field(default_factory=lambda: [0] * P_SQUARE_MIN)
    percentile: float = 0.0

    def add(self, n_samples: int, new: int) -> None:
        """`calc_percentile` for the `n_samples`th sample (from the second on)."""
        if n_samples < P_SQUARE_MIN:
            self.samples[n_samples - 1] = new
        q, n = self.q, self.n
        if n_samples <= MARKERS:
            q[n_samples - 1] = float(new)
            q[:n_samples] = sorted(q[:n_samples])
            if n_samples == MARKERS:
                self.n = n = [0, 1, 2, 3, 4]
                self.n_prime = [0.0, 2 * P, 4 * P, 2 + 2 * P, 4.0]
                self.dn = [0.0, P / 2, P, (1 + P) / 2, 1.0]
            self.percentile = q[0]  # `q[(int) P * n_samples]`: (int) P is 0
            return
        if new < q[0]:
            k = 0
            q[0] = float(new)
        elif new < q[1]:
            k = 0
        elif new < q[2]:
            k = 1
        elif new < q[3]:
            k = 2
        elif new <= q[4]:
            k = 3
        else:
            k = 3
            q[4] = float(new)
        for i in range(k + 1, MARKERS):
            n[i] += 1
        for i in range(MARKERS):
            self.n_prime[i] += self.dn[i]
        for i in range(1, MARKERS - 1):
            d = self.n_prime[i] - n[i]
            if (d >= 1 and n[i + 1] - n[i] > 1) or (d <= -1 and n[i - 1] - n[i] < -1):
                d = 1.0 if d >= 0 else -1.0
                a = d / (n[i + 1] - n[i - 1])
                b = (n[i] - n[i - 1] + d) * (q[i + 1] - q[i]) / (n[i + 1] - n[i])
                c = (n[i + 1] - n[i] - d) * (q[i] - q[i - 1]) / (n[i] - n[i - 1])
                candidate = q[i] + a * (b + c)
                if q[i - 1] < candidate < q[i + 1]:
                    q[i] = candidate
                else:
                    j = i + int(d)
                    q[i] = q[i] + d * (q[j] - q[i]) / (n[j] - n[i])
                n[i] += int(d)
        if n_samples < P_SQUARE_MIN:
            self.samples[:n_samples] = sorted(self.samples[:n_samples])
            self.percentile = float(self.samples[int(P * n_samples)])
        else:
            self.percentile = q[2]


@dataclass(slots=True)
class Stopwatch:
    units: str = "msec"
    n_samples: int = 0
    max: int = 0
    min: int = 0
    pctl: Percentile = field(default_factory=Percentile)
    short_term: float = 0.0
    long_term: float = 0.0
    sample_start: int = 0
    in_progress: bool = False

    def add_sample(self, new: int) -> None:
        if new > self.max:
            self.max = new
        if new < self.min or self.n_samples == 0:
            self.min = new
        self.n_samples += 1
        if self.n_samples == 1:
            self.short_term = self.long_term = float(new)
            return
        self.pctl.add(self.n_samples, new)
        self.short_term = new * 0.50 + (1 - 0.50) * self.short_term
        self.long_term = new * 0.01 + (1 - 0.01) * self.long_term

    def reset(self) -> None:
        self.short_term = self.long_term = 0.0
        self.pctl.percentile = 0.0
        self.n_samples = self.max = self.min = 0

    def text(self, name: str) -> str:
        u = self.units
        return (f"Statistics for '{name}'\n"
                f"  Total samples: {self.n_samples}\n"
                f"  Maximum: {self.max} {u}\n"
                f"  Minimum: {self.min} {u}\n"
                f"  95th percentile: {self.pctl.percentile:f} {u}\n"
                f"  Short term average: {self.short_term:f} {u}\n"
                f"  Long term average: {self.long_term:f} {u}\n")


class Stopwatches:
    """The stopwatches of one process, by name."""

    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self._by_name: dict[str, Stopwatch] = {}
        for name in names:
            self.create(name)

    def create(self, name: str) -> None:
        self._by_name.setdefault(name, Stopwatch())

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Stopwatch:
        return self._by_name[name]

    def start(self, name: str, now_ms: int) -> None:
        sw = self._by_name.get(name)
        if sw is not None and not sw.in_progress:
            sw.sample_start = now_ms
            sw.in_progress = True

    def stop(self, name: str, now_ms: int) -> None:
        sw = self._by_name.get(name)
        if sw is not None and sw.in_progress:
            sw.add_sample(now_ms - sw.sample_start)
            sw.in_progress = False

    def sample(self, name: str, ms: int) -> None:
        """A sample measured by the caller (a `start` and `stop` `ms` apart)."""
        sw = self._by_name.get(name)
        if sw is not None:
            sw.add_sample(ms)

    def show(self, name: str | None = None) -> tuple[bool, str]:
        """`stopwatch/show [NAME]`: (found, text)."""
        if name is not None:
            sw = self._by_name.get(name)
            if sw is None:
                return False, "No such stopwatch"
            return True, sw.text(name)
        return True, "".join(self._by_name[n].text(n) for n in shash_order(self._by_name))

    def reset(self, name: str | None = None) -> None:
        """`stopwatch/reset [NAME]` (an unknown name changes nothing)."""
        if name:
            sw = self._by_name.get(name[:31])  # the request carries at most 31 bytes
            if sw is not None:
                sw.reset()
            return
        for sw in self._by_name.values():
            sw.reset()
