"""Completion time against topology size: the `--json` files of several
`northd_change_bench.py` runs of one topology at different sizes, drawn as an SVG (one
panel per change kind, one line per northd, both axes logarithmic). No plotting
library: the SVG is written by hand.

    python bench/plot_sizes.py OUT.svg RUN1.json RUN2.json ... [--kinds K1,K2]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

COLORS = {"23.03": "#1f77b4", "newest": "#2ca02c", "ours": "#d62728"}
PANEL_W, PANEL_H, MARGIN = 300, 210, 48


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--kinds", default="", help="change kinds to draw (default: all)")
    args = ap.parse_args()
    runs = sorted((json.loads(Path(r).read_text()) for r in args.runs),
                  key=lambda r: r["size"])
    if len({r["topology"] for r in runs}) != 1:
        ap.error("the runs are of different topologies")
    kinds = [k for k in runs[0]["northds"]["ours"]["completion_ms"]
             if not args.kinds or k in args.kinds.split(",")]
    Path(args.out).write_text(svg(runs, kinds))
    return 0


def svg(runs: list[dict[str, Any]], kinds: list[str]) -> str:
    cols = 3
    rows = math.ceil(len(kinds) / cols)
    width, height = cols * (PANEL_W + MARGIN) + MARGIN, rows * (PANEL_H + 2 * MARGIN) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{MARGIN}" y="20" font-size="14">northd completion (ms) against '
           f'{runs[0]["unit"]}, {runs[0]["topology"]} topology (log-log)</text>']
    legend_x = width - 260
    for i, (label, color) in enumerate(COLORS.items()):
        out.append(f'<line x1="{legend_x + i * 80}" y1="16" x2="{legend_x + i * 80 + 20}" '
                   f'y2="16" stroke="{color}" stroke-width="2"/>'
                   f'<text x="{legend_x + i * 80 + 24}" y="20">{label}</text>')
    sizes = [r["size"] for r in runs]
    for n, kind in enumerate(kinds):
        x0 = MARGIN + (n % cols) * (PANEL_W + MARGIN)
        y0 = 40 + (n // cols) * (PANEL_H + 2 * MARGIN)
        out += panel(runs, kind, sizes, x0, y0)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def panel(runs: list[dict[str, Any]], kind: str, sizes: list[int], x0: float, y0: float
          ) -> list[str]:
    values = [v for r in runs for n in r["northds"].values()
              if (v := n["completion_ms"].get(kind))]
    lo_y = 10 ** math.floor(math.log10(max(min(values, default=1), 1)))
    hi_y = 10 ** math.ceil(math.log10(max(values, default=10)))
    lo_x, hi_x = min(sizes), max(sizes)
    span_x = math.log10(hi_x / lo_x) if hi_x > lo_x else 1.0
    span_y = math.log10(hi_y / lo_y) if hi_y > lo_y else 1.0

    def at(size: float, ms: float) -> tuple[float, float]:
        fx = math.log10(size / lo_x) / span_x if hi_x > lo_x else 0.5
        fy = math.log10(max(ms, lo_y) / lo_y) / span_y
        return x0 + fx * PANEL_W, y0 + PANEL_H - fy * PANEL_H

    out = [f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" fill="none" '
           'stroke="#999"/>',
           f'<text x="{x0}" y="{y0 - 6}">{_escape(kind[:52])}</text>']
    decade = lo_y
    while decade <= hi_y:
        _, y = at(lo_x, decade)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" '
                   'stroke="#eee"/>'
                   f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{decade:g}</text>')
        decade *= 10
    for size in sizes:
        x, _ = at(size, lo_y)
        out.append(f'<text x="{x:.1f}" y="{y0 + PANEL_H + 14}" '
                   f'text-anchor="middle">{size:,}</text>')
    for label, color in COLORS.items():
        points = [at(r["size"], v) for r in runs
                  if (v := r["northds"].get(label, {}).get("completion_ms", {}).get(kind))]
        if not points:
            continue
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                   'stroke-width="2"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>'
                for x, y in points]
    return out


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


if __name__ == "__main__":
    sys.exit(main())
