"""northd cold start against topology size: ours and ovn-northd 23.03 in one run.

    python bench/northd_cold_sizes.py --switches 100,1000 --nodes 100,250 --reps 3 \\
        --json bench/plots/cold-sizes.json --svg bench/plots/cold-sizes.svg
    python bench/northd_cold_sizes.py ... --compiled DIR   # and the accelerated build

For each size, the cold start of `northd_lflow_bench.py` (the switch mix) or of
`northd_k8s_bench.py` (the ovn-kubernetes-like cluster): fresh NB and SB (the real
`ovsdb-server`), the NB loaded in one transaction, then northd started and
`ovn-nbctl --wait=sb sync` run at once; the time until it returns, northd's CPU
seconds and peak RSS at that moment. The northds of one repetition run one after the
other and repetitions interleave them; medians. `--compiled DIR` adds our northd run
with DIR (a source tree where the accelerated modules are built) first on its
`PYTHONPATH`. The JSON keeps every size's medians; the SVG draws time, CPU and peak
RSS against size (one row of panels per topology, both axes logarithmic), and the
ratios ours / 23.03 are printed as a table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import northd_lflow_bench as lflow_bench
from northd_k8s_bench import load_cluster
from northd_lflow_bench import NORTHDS, load_mix, medians, missing_tools
from pyovsdb.testing import compile_bytecode

FIGURES = (("start_s", "until --wait=sb sync, s"), ("cpu_s", "CPU, s"),
           ("rss_mib", "peak RSS, MiB"))
COLORS = {"real": "#1f77b4", "ours": "#d62728", "compiled": "#ff7f0e"}
LABELS = {**NORTHDS, "compiled": "pyovsdb northd, accelerated"}
PANEL_W, PANEL_H, MARGIN = 280, 200, 50


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    kinds = {k: LABELS[k] for k in ("real", "ours")}
    if args.compiled:
        lflow_bench.ACCELERATED = str(Path(args.compiled).resolve())
        kinds["compiled"] = LABELS["compiled"]
    out: list[dict[str, Any]] = []
    for topology, sizes in (("switches", _sizes(args.switches)),
                            ("nodes", _sizes(args.nodes))):
        for size in sizes:
            def load(nb: str, topology: str = topology, size: int = size) -> None:
                if topology == "switches":
                    load_mix(nb, size)
                else:
                    load_cluster(nb, size, False)
            med = medians(args.reps, "real", f"pyovsdb-cold-{topology}-", load, kinds)
            out.append({"topology": topology, "size": size, "reps": args.reps,
                        "medians": med})
            print(f"[sizes] {topology} {size}: " + json.dumps(med), file=sys.stderr,
                  flush=True)
    return out


def table(results: list[dict[str, Any]]) -> str:
    kinds = list(results[0]["medians"])
    head = "| topology | size | northd | time s | CPU s | peak RSS MiB | flows " \
           "| time / 23.03 | CPU / 23.03 | RSS / 23.03 |"
    lines = [head, "|" + "---|" * 10]
    for r in results:
        real = r["medians"]["real"]
        for k in kinds:
            f = r["medians"][k]
            ratios = " | ".join(f"{f[x] / real[x]:.2f}x" for x, _ in FIGURES)
            lines.append(f"| {r['topology']} | {r['size']} | {LABELS[k]} | "
                         f"{f['start_s']:.2f} | {f['cpu_s']:.2f} | {f['rss_mib']:.0f} | "
                         f"{f['flows']:.0f} | {ratios} |")
    return "\n".join(lines)


def svg(results: list[dict[str, Any]]) -> str:
    """Panels: a row per topology, a column per figure; a line per northd."""
    topologies = sorted({r["topology"] for r in results})
    kinds = list(results[0]["medians"])
    width = MARGIN + len(FIGURES) * (PANEL_W + MARGIN)
    height = MARGIN + len(topologies) * (PANEL_H + 2 * MARGIN) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    for row, topo in enumerate(topologies):
        runs = sorted((r for r in results if r["topology"] == topo), key=lambda r: r["size"])
        sizes = [r["size"] for r in runs]
        for col, (fig, title) in enumerate(FIGURES):
            x0 = MARGIN + col * (PANEL_W + MARGIN)
            y0 = MARGIN + row * (PANEL_H + 2 * MARGIN)
            values = [r["medians"][k][fig] for r in runs for k in kinds]
            lo, hi = math.log10(min(values) * 0.8), math.log10(max(values) * 1.25)
            slo, shi = math.log10(min(sizes) * 0.8), math.log10(max(sizes) * 1.25)

            def px(size: float, slo: float = slo, shi: float = shi, x0: int = x0) -> float:
                return x0 + (math.log10(size) - slo) / (shi - slo) * PANEL_W

            def py(v: float, lo: float = lo, hi: float = hi, y0: int = y0) -> float:
                return y0 + PANEL_H - (math.log10(v) - lo) / (hi - lo) * PANEL_H
            parts.append(f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" '
                         'fill="none" stroke="#888"/>')
            parts.append(f'<text x="{x0}" y="{y0 - 8}">{topo}: {title}</text>')
            for s in sizes:
                parts.append(f'<text x="{px(s):.1f}" y="{y0 + PANEL_H + 14}" '
                             f'text-anchor="middle">{s}</text>')
            for v in (10 ** lo, 10 ** ((lo + hi) / 2), 10 ** hi):
                parts.append(f'<text x="{x0 - 4}" y="{py(v):.1f}" text-anchor="end">'
                             f'{v:.3g}</text>')
            for k in kinds:
                pts = " ".join(f"{px(r['size']):.1f},{py(r['medians'][k][fig]):.1f}"
                               for r in runs)
                parts.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[k]}" '
                             'stroke-width="2"/>')
                for r in runs:
                    parts.append(f'<circle cx="{px(r["size"]):.1f}" '
                                 f'cy="{py(r["medians"][k][fig]):.1f}" r="3" '
                                 f'fill="{COLORS[k]}"/>')
    for i, k in enumerate(kinds):
        y = height - 14
        x = MARGIN + i * 220
        parts.append(f'<rect x="{x}" y="{y - 9}" width="12" height="4" fill="{COLORS[k]}"/>')
        parts.append(f'<text x="{x + 18}" y="{y - 4}">{LABELS[k]}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--switches", default="100,1000", help="sizes of the switch mix")
    ap.add_argument("--nodes", default="100,250", help="sizes of the k8s-like cluster")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--compiled", default="", help="a source tree with the accelerated "
                    "build: its northd runs too")
    ap.add_argument("--json", default="", help="write the medians here")
    ap.add_argument("--svg", default="", help="draw them here")
    ap.add_argument("--replot", default="", help="only draw a --json file's results")
    args = ap.parse_args()
    if args.replot:
        results = json.loads(Path(args.replot).read_text())
    else:
        compile_bytecode()  # (our daemons start as an installed package's do)
        missing = missing_tools("real")
        if missing:
            print(f"bench: not installed: {', '.join(missing)}", file=sys.stderr)
            return 1
        results = run(args)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if args.svg:
        Path(args.svg).write_text(svg(results))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
