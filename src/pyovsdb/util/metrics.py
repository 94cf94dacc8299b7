"""Metrics as the text Prometheus scrapes: counters, gauges and histograms, with labels.

Rules kept here:
- Pure: no I/O and no clock; durations are measured by the caller and given here.
- Names follow the exposition formats' grammar (`[a-zA-Z_:][a-zA-Z0-9_:]*`, labels
  without `:`); a bad name, a label set of the wrong size or a counter going down is a
  `ValueError` at once, not a broken scrape later.
- A family renders in one of two formats (`render`): OpenMetrics 1.0 (a counter's
  samples end in `_total`, the text ends in `# EOF`) or the classic text format 0.0.4,
  which names a counter family by its `_total` sample. Families come in registration
  order, samples in the order their label sets were first seen.
- Label values are escaped (backslash, double quote, newline).
- Collectors run at render time and set gauges from the process's live state (what
  it holds at the moment of the scrape), so nothing is counted twice and nothing costs
  between scrapes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")

OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Latency buckets, in seconds: 100 µs to 10 s.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                   0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Size buckets (operations, rows): 1 to 100,000.
SIZE_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000,
                50_000, 100_000)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()
                                  and abs(value) < 1e15):
        return str(int(value))
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(value)


def _labels(names: tuple[str, ...], values: tuple[str, ...],
            extra: tuple[tuple[str, str], ...] = ()) -> str:
    pairs = [*zip(names, values, strict=True), *extra]
    if not pairs:
        return ""
    return "{" + ",".join(f'{n}="{_escape(v)}"' for n, v in pairs) + "}"


class _Family:
    kind = ""

    def __init__(self, name: str, help_text: str, labels: tuple[str, ...]) -> None:
        if not _NAME.match(name) or (name.endswith("_total") and self.kind == "counter"):
            raise ValueError(f"bad metric name {name!r}")
        for label in labels:
            if not _LABEL.match(label) or label.startswith("__") or label == "le":
                raise ValueError(f"bad label name {label!r} of {name}")
        self.name = name
        self.help = help_text
        self.label_names = labels

    def _key(self, values: tuple[str, ...]) -> tuple[str, ...]:
        if len(values) != len(self.label_names):
            raise ValueError(f"{self.name}: labels {self.label_names}, given {values}")
        return values

    def header(self, openmetrics: bool) -> list[str]:
        name = self.name if openmetrics or self.kind != "counter" else self.name + "_total"
        return [f"# HELP {name} {self.help}", f"# TYPE {name} {self.kind}"]

    def lines(self, openmetrics: bool) -> list[str]:
        raise NotImplementedError


class Counter(_Family):
    """A count that only goes up (`inc`)."""

    kind = "counter"

    def __init__(self, name: str, help_text: str, labels: tuple[str, ...] = ()) -> None:
        super().__init__(name, help_text, labels)
        self.values: dict[tuple[str, ...], float] = {}

    def inc(self, amount: float = 1, *labels: str) -> None:
        if amount < 0:
            raise ValueError(f"{self.name}: a counter does not go down ({amount})")
        key = labels if len(labels) == len(self.label_names) else self._key(labels)
        self.values[key] = self.values.get(key, 0) + amount

    def set_total(self, total: float, *labels: str) -> None:
        """The count as kept elsewhere (read by a collector); it must not go down."""
        key = self._key(labels)
        if total < self.values.get(key, 0):
            raise ValueError(f"{self.name}: a counter does not go down ({total})")
        self.values[key] = total

    def lines(self, openmetrics: bool) -> list[str]:
        return [f"{self.name}_total{_labels(self.label_names, k)} {_number(v)}"
                for k, v in self.values.items()]


class Gauge(_Family):
    """A value that goes up and down (`set`); `clear` forgets every label set, for a
    collector that sets the current ones again."""

    kind = "gauge"

    def __init__(self, name: str, help_text: str, labels: tuple[str, ...] = ()) -> None:
        super().__init__(name, help_text, labels)
        self.values: dict[tuple[str, ...], float] = {}

    def set(self, value: float, *labels: str) -> None:
        self.values[self._key(labels)] = value

    def clear(self) -> None:
        self.values.clear()

    def lines(self, openmetrics: bool) -> list[str]:
        return [f"{self.name}{_labels(self.label_names, k)} {_number(v)}"
                for k, v in self.values.items()]


class Histogram(_Family):
    """Observations counted in cumulative buckets (`observe`), with their count and
    sum."""

    kind = "histogram"

    def __init__(self, name: str, help_text: str, buckets: Iterable[float],
                 labels: tuple[str, ...] = ()) -> None:
        super().__init__(name, help_text, labels)
        self.bounds = tuple(sorted(set(buckets)))
        if not self.bounds:
            raise ValueError(f"{name}: no buckets")
        # label values -> (per-bucket counts, the last for +Inf; count; sum)
        self.values: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, value: float, *labels: str) -> None:
        key = labels if len(labels) == len(self.label_names) else self._key(labels)
        found = self.values.get(key)
        if found is None:
            found = self.values[key] = ([0] * (len(self.bounds) + 1), [0, 0.0])
        counts, total = found
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                counts[i] += 1
                break
        else:
            counts[-1] += 1
        total[0] += 1
        total[1] += value

    def lines(self, openmetrics: bool) -> list[str]:
        out: list[str] = []
        for key, (counts, total) in self.values.items():
            running = 0
            for bound, n in zip((*self.bounds, math.inf), counts, strict=True):
                running += n
                le = (("le", "+Inf" if math.isinf(bound) else repr(float(bound))),)
                out.append(f"{self.name}_bucket{_labels(self.label_names, key, le)} "
                           f"{running}")
            out.append(f"{self.name}_count{_labels(self.label_names, key)} {total[0]}")
            out.append(f"{self.name}_sum{_labels(self.label_names, key)} "
                       f"{_number(total[1])}")
        return out


class Registry:
    """The metric families of one process, and the collectors that refresh them."""

    def __init__(self) -> None:
        self.families: dict[str, _Family] = {}
        self.collectors: list[Callable[[], None]] = []

    def _add(self, family: _Family) -> None:
        if family.name in self.families:
            raise ValueError(f"metric {family.name} registered twice")
        self.families[family.name] = family

    def counter(self, name: str, help_text: str, labels: tuple[str, ...] = ()) -> Counter:
        c = Counter(name, help_text, labels)
        self._add(c)
        return c

    def gauge(self, name: str, help_text: str, labels: tuple[str, ...] = ()) -> Gauge:
        g = Gauge(name, help_text, labels)
        self._add(g)
        return g

    def histogram(self, name: str, help_text: str, buckets: Iterable[float],
                  labels: tuple[str, ...] = ()) -> Histogram:
        h = Histogram(name, help_text, buckets, labels)
        self._add(h)
        return h

    def collector(self, collect: Callable[[], None]) -> None:
        """`collect()` runs before every render."""
        self.collectors.append(collect)

    def render(self, openmetrics: bool = True) -> str:
        for collect in self.collectors:
            collect()
        lines: list[str] = []
        for family in self.families.values():
            lines += family.header(openmetrics)
            lines += family.lines(openmetrics)
        if openmetrics:
            lines.append("# EOF")
        return "\n".join(lines) + "\n"


def wants_openmetrics(accept: str) -> bool:
    """Whether an HTTP `Accept` header asks for OpenMetrics (Prometheus asks for it
    first; a bare `curl` does not, and gets the classic text format)."""
    return "application/openmetrics-text" in accept
