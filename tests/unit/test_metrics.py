"""The metrics registry (`util.metrics`): its text as Prometheus's own parsers read it,
in both exposition formats, and the mistakes it refuses at once."""

from __future__ import annotations

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as parse_text

from pyovsdb.util.metrics import Registry, wants_openmetrics


def _registry() -> Registry:
    r = Registry()
    c = r.counter("x_requests", "Requests.", ("path",))
    c.inc(1, 'a "quoted"\\path\nwith a newline')
    c.inc(2, "b")
    h = r.histogram("x_latency_seconds", "Latency.", (0.001, 0.01, 1), ("db",))
    for v in (0.0005, 0.005, 0.5, 5.0):
        h.observe(v, "nb")
    g = r.gauge("x_sessions", "Sessions.")
    r.collector(lambda: g.set(7))
    return r


@pytest.mark.parametrize("openmetrics", [True, False])
def test_both_formats_parse_as_prometheus_parses_them(openmetrics: bool) -> None:
    text = _registry().render(openmetrics)
    families = {f.name: f for f in (parse_openmetrics(text) if openmetrics
                                    else parse_text(text))}
    requests = families["x_requests"]
    assert requests.type == "counter"
    by_path = {s.labels["path"]: s.value for s in requests.samples
               if s.name == "x_requests_total"}
    assert by_path == {'a "quoted"\\path\nwith a newline': 1, "b": 2}
    latency = families["x_latency_seconds"]
    buckets = {s.labels["le"]: s.value for s in latency.samples
               if s.name.endswith("_bucket")}
    assert buckets == {"0.001": 1, "0.01": 2, "1.0": 3, "+Inf": 4}
    counts = {s.name: s.value for s in latency.samples if not s.name.endswith("_bucket")}
    assert counts["x_latency_seconds_count"] == 4
    assert counts["x_latency_seconds_sum"] == pytest.approx(5.5055)
    assert [s.value for s in families["x_sessions"].samples] == [7]  # (the collector's)
    assert text.endswith("# EOF\n") == openmetrics


def test_mistakes_refused_at_once() -> None:
    r = Registry()
    c = r.counter("ok_things", "Things.", ("kind",))
    with pytest.raises(ValueError, match="does not go down"):
        c.inc(-1, "a")
    with pytest.raises(ValueError, match="labels"):
        c.inc(1)
    with pytest.raises(ValueError, match="registered twice"):
        r.counter("ok_things", "Again.")
    for bad in ("1st", "with-dash", "x_total"):
        with pytest.raises(ValueError, match="bad metric name"):
            r.counter(bad, "Bad.")
    with pytest.raises(ValueError, match="bad label name"):
        r.gauge("g", "G.", ("le",))
    c.set_total(5, "a")
    with pytest.raises(ValueError, match="does not go down"):
        c.set_total(4, "a")


def test_accept_header() -> None:
    assert wants_openmetrics("application/openmetrics-text; version=1.0.0,text/plain;q=0.5")
    assert not wants_openmetrics("*/*")
    assert not wants_openmetrics("")
