"""The scale harness's report: a machine-readable summary and an HTML page with plots.

Rules kept here:
- Pure: a run's results (plain values) in, a summary dict and an HTML string out. The
  plots are SVG written here, no plotting library.
- Percentiles are nearest-rank (P50, P90, P99) over the measured pods, with the max;
  every ratio is named for what it divides (the second stack's figure over the
  first's), so below 1.0 the second is cheaper or faster.
- The page holds, per stack: the pod latency percentiles of every stage, the
  `--wait=hv` times, each process's CPU seconds and peak resident memory, the database
  file sizes and the chassis' own CPU; and the plots: the distribution of the time to
  port up, CPU use over time and resident memory over time, per process.
"""

from __future__ import annotations

import html
import itertools
import math
from typing import Any

# The stages of a pod, each a time from its Northbound write: the write's reply, its
# Southbound Port_Binding, the chassis' claim, the Southbound up, the Northbound up.
STAGES = ("nb", "sb", "claim", "up_sb", "up")
# The stages of a policy, from its transaction's send: northd's and every chassis'
# acknowledgement of the nb_cfg it carried (`ovn-nbctl --wait=hv`).
POLICY_STAGES = ("sb_cfg", "hv_cfg")
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")
W, H, M = 520, 260, 48


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def parse_engine_stats(text: str) -> dict[str, dict[str, int]]:
    """northd's `inc-engine/show-stats` text (23.03's, ours the same): per engine node
    its counters (recompute, compute, abort)."""
    out: dict[str, dict[str, int]] = {}
    node: dict[str, int] | None = None
    for line in text.splitlines():
        if line.startswith("Node: "):
            node = out[line[len("Node: "):].strip()] = {}
        elif line.startswith("- ") and node is not None:
            key, _, value = line[2:].partition(":")
            if value.strip().isdigit():
                node[key.strip()] = int(value)
    return out


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p90": percentile(values, 90),
            "p99": percentile(values, 99), "max": max(values, default=math.nan),
            "n": len(values)}


def summarize(run: dict[str, Any]) -> dict[str, Any]:
    """The figures of one stack's run (see `cli.scale`)."""
    scenario = run["scenario"]
    pods = scenario["pods"]
    stages = {stage: _stats([p[stage] for p in pods if stage in p]) for stage in STAGES}
    policies = scenario.get("policies", [])
    chassis = run.get("chassis", [])
    engine = run.get("engine", {})
    return {
        "stack": run["stack"],
        "latency_ms": stages,
        "policy_ms": {stage: _stats([p[stage] for p in policies if stage in p])
                      for stage in POLICY_STAGES},
        "iteration_ms": _stats(scenario.get("iterations_ms", [])),
        # (the recomputes of the nodes that build everything: a sum over every node
        # would count the inputs' own, which recompute on every change)
        "engine": {"northd_recompute": engine.get("northd", {}).get("recompute", 0),
                   "lflow_recompute": engine.get("lflow", {}).get("recompute", 0)},
        "wait_hv_ms": scenario["wait_hv_ms"],
        "startup_s": scenario["startup_s"],
        "pods_s": scenario["pods_s"],
        "processes": {role: {"cpu_s": s["cpu_s"], "peak_mib": s["peak_mib"]}
                      for role, s in run["series"].items()},
        "db_bytes": run["db_bytes"],
        "chassis": {"n": len(chassis),
                    "cpu_s_total": sum(c["cpu_s"] for c in chassis),
                    "cpu_s_max": max((c["cpu_s"] for c in chassis), default=0.0),
                    "wakes_total": sum(c["wakes"] for c in chassis),
                    # what the Southbound server sent them, over the whole run
                    "updates_total": sum(c.get("updates", 0) for c in chassis),
                    "bytes_in_total": sum(c.get("bytes_in", 0) for c in chassis)},
    }


def ratios(first: dict[str, Any], second: dict[str, Any]) -> dict[str, float]:
    """second / first for the headline figures."""
    out: dict[str, float] = {}
    for q in ("p50", "p99"):
        for label, a, b in (
                ("port up", first["latency_ms"]["up"][q], second["latency_ms"]["up"][q]),
                ("policy --wait=hv", first["policy_ms"]["hv_cfg"][q],
                 second["policy_ms"]["hv_cfg"][q]),
                ("iteration", first["iteration_ms"][q], second["iteration_ms"][q])):
            if not math.isnan(a):
                out[f"{label} {q}"] = b / a if a else math.nan
    for role in first["processes"]:
        if role in second["processes"] and role != "chassis":
            a, b = first["processes"][role]["cpu_s"], second["processes"][role]["cpu_s"]
            out[f"{role} CPU"] = b / a if a else math.nan
            a, b = first["processes"][role]["peak_mib"], second["processes"][role]["peak_mib"]
            out[f"{role} peak RSS"] = b / a if a else math.nan
    a, b = first["wait_hv_ms"].get("hv_cfg"), second["wait_hv_ms"].get("hv_cfg")
    if a and b:
        out["--wait=hv"] = b / a
    return out


# -- HTML ---------------------------------------------------------------------------


def render_html(title: str, params: dict[str, Any], runs: list[dict[str, Any]],
                summaries: list[dict[str, Any]]) -> str:
    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
             "th:first-child,td:first-child{text-align:left}</style></head><body>",
             f"<h1>{esc(title)}</h1><p>{esc(_params(params))}</p>"]
    parts.append("<h2>Time from the Northbound write (ms)</h2><table><tr><th>stage</th>")
    parts += [f"<th>{esc(s['stack'])} {q}</th>" for s in summaries
              for q in ("p50", "p90", "p99", "max")]
    parts.append("</tr>")
    for stage in STAGES:
        parts.append(f"<tr><td>{stage}</td>")
        parts += [f"<td>{s['latency_ms'][stage][q]:.1f}</td>" for s in summaries
                  for q in ("p50", "p90", "p99", "max")]
        parts.append("</tr>")
    parts.append("</table>")
    rows = [(f"policy {stage} (--wait=hv)", [x["policy_ms"][stage] for x in summaries])
            for stage in POLICY_STAGES if summaries[0]["policy_ms"][stage]["n"]]
    if summaries[0]["iteration_ms"]["n"]:
        rows.append(("iteration", [x["iteration_ms"] for x in summaries]))
    if rows:
        parts.append("<h2>Policies and iterations (ms)</h2><table><tr><th>figure</th>")
        parts += [f"<th>{esc(s['stack'])} {q}</th>" for s in summaries
                  for q in ("p50", "p90", "p99", "max")]
        parts.append("</tr>")
        for label, figures in rows:
            parts.append(f"<tr><td>{esc(label)}</td>")
            parts += [f"<td>{f[q]:.1f}</td>" for f in figures
                      for q in ("p50", "p90", "p99", "max")]
            parts.append("</tr>")
        parts.append("</table>")
    parts.append("<h2>Processes</h2><table><tr><th>stack</th><th>process</th>"
                 "<th>CPU s</th><th>peak RSS MiB</th></tr>")
    for s in summaries:
        for role, p in s["processes"].items():
            parts.append(f"<tr><td>{esc(s['stack'])}</td><td>{esc(role)}</td>"
                         f"<td>{p['cpu_s']:.2f}</td><td>{p['peak_mib']:.0f}</td></tr>")
    parts.append("</table><h2>Other figures</h2><table><tr><th>stack</th><th>--wait=hv"
                 " sb_cfg ms</th><th>hv_cfg ms</th><th>startup s</th><th>measured pods s</th>"
                 "<th>NB bytes</th><th>SB bytes</th><th>chassis CPU s (sum)</th>"
                 "<th>chassis wakes</th><th>SB updates to chassis</th>"
                 "<th>SB bytes to chassis</th><th>engine recomputes of northd</th>"
                 "<th>of lflow</th></tr>")
    for s in summaries:
        w = s["wait_hv_ms"]
        parts.append(
            f"<tr><td>{esc(s['stack'])}</td><td>{w.get('sb_cfg', math.nan):.0f}</td>"
            f"<td>{w.get('hv_cfg', math.nan):.0f}</td><td>{s['startup_s']:.1f}</td>"
            f"<td>{s['pods_s']:.1f}</td><td>{s['db_bytes'].get('nb', 0)}</td>"
            f"<td>{s['db_bytes'].get('sb', 0)}</td><td>{s['chassis']['cpu_s_total']:.2f}</td>"
            f"<td>{s['chassis']['wakes_total']}</td>"
            f"<td>{s['chassis'].get('updates_total', 0)}</td>"
            f"<td>{s['chassis'].get('bytes_in_total', 0)}</td>"
            f"<td>{s['engine']['northd_recompute']}</td>"
            f"<td>{s['engine']['lflow_recompute']}</td></tr>")
    parts.append("</table>")
    if len(summaries) >= 2:
        parts.append("<h2>Ratios</h2><table><tr><th>figure</th>")
        parts += [f"<th>{esc(s['stack'])} / {esc(summaries[0]['stack'])}</th>"
                  for s in summaries[1:]]
        parts.append("</tr>")
        rs = [ratios(summaries[0], s) for s in summaries[1:]]
        for key in rs[0]:
            parts.append(f"<tr><td>{esc(key)}</td>")
            parts += [f"<td>{r.get(key, math.nan):.2f}</td>" for r in rs]
            parts.append("</tr>")
        parts.append("</table>")
    parts.append("<h2>Time to port up</h2>")
    parts.append(_cdf_svg({r["stack"]: [p["up"] for p in r["scenario"]["pods"] if "up" in p]
                           for r in runs}))
    parts.append("<h2>CPU over time (% of one core)</h2>")
    parts.append(_series_svg(runs, cpu=True))
    parts.append("<h2>Resident memory over time (MiB)</h2>")
    parts.append(_series_svg(runs, cpu=False))
    parts.append("</body></html>\n")
    return "".join(parts)


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _axes(xmax: float, ymax: float, xlabel: str, ylabel: str) -> list[str]:
    out = [f"<line x1='{M}' y1='{H - M}' x2='{W - 10}' y2='{H - M}' stroke='black'/>",
           f"<line x1='{M}' y1='10' x2='{M}' y2='{H - M}' stroke='black'/>",
           f"<text x='{W / 2}' y='{H - 10}' text-anchor='middle'>{html.escape(xlabel)}</text>",
           f"<text x='12' y='{H / 2}' transform='rotate(-90 12 {H / 2})' "
           f"text-anchor='middle'>{html.escape(ylabel)}</text>"]
    for i in range(5):
        fx, fy = i / 4, i / 4
        x, y = M + fx * (W - M - 10), H - M - fy * (H - M - 10)
        out.append(f"<text x='{x}' y='{H - M + 14}' text-anchor='middle' font-size='10'>"
                   f"{xmax * fx:.3g}</text>")
        out.append(f"<text x='{M - 4}' y='{y + 3}' text-anchor='end' font-size='10'>"
                   f"{ymax * fy:.3g}</text>")
    return out


def _polyline(points: list[tuple[float, float]], xmax: float, ymax: float, color: str) -> str:
    xy = " ".join(f"{M + x / xmax * (W - M - 10):.1f},{H - M - y / ymax * (H - M - 10):.1f}"
                  for x, y in points)
    return f"<polyline fill='none' stroke='{color}' stroke-width='1.5' points='{xy}'/>"


def _legend(names: list[str]) -> list[str]:
    return [f"<text x='{W - 150}' y='{20 + 14 * i}' fill='{COLORS[i % len(COLORS)]}' "
            f"font-size='11'>{html.escape(n)}</text>" for i, n in enumerate(names)]


def _cdf_svg(values: dict[str, list[float]]) -> str:
    xmax = max((max(v) for v in values.values() if v), default=1.0) or 1.0
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}'>",
           *_axes(xmax, 1.0, "ms from the Northbound write to up=true", "fraction of pods")]
    for i, vals in enumerate(values.values()):
        ordered = sorted(vals)
        pts = [(v, (k + 1) / len(ordered)) for k, v in enumerate(ordered)]
        if pts:
            out.append(_polyline([(0.0, 0.0), *pts], xmax, 1.0, COLORS[i % len(COLORS)]))
    out += _legend(list(values))
    out.append("</svg>")
    return "".join(out)


def _series_svg(runs: list[dict[str, Any]], cpu: bool) -> str:
    lines: dict[str, list[tuple[float, float]]] = {}
    for r in runs:
        for role, s in r["series"].items():
            pts = s["samples"]
            if cpu:
                pts = [(t1, max(0.0, (c1 - c0) / (t1 - t0) * 100)) for (t0, c0, _), (t1, c1, _)
                       in itertools.pairwise(pts) if t1 > t0]
            else:
                pts = [(t, m) for t, _, m in pts]
            lines[f"{r['stack']} {role}"] = pts
    xmax = max((p[-1][0] for p in lines.values() if p), default=1.0) or 1.0
    ymax = max((y for p in lines.values() for _, y in p), default=1.0) or 1.0
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}'>",
           *_axes(xmax, ymax, "seconds", "% CPU" if cpu else "MiB")]
    for i, pts in enumerate(lines.values()):
        if len(pts) > 1:
            out.append(_polyline(pts, xmax, ymax, COLORS[i % len(COLORS)]))
    out += _legend(list(lines))
    out.append("</svg>")
    return "".join(out)
