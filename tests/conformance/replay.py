"""Run corpus cases by name against both servers and print what each server sent,
normalized as the harness compares it (for writing and debugging cases).

    python tests/conformance/replay.py CASE-NAME-OR-GLOB... [--raw]
    python tests/conformance/replay.py --file FILE.json [--raw] [--ambiguous]
"""

from __future__ import annotations

import fnmatch
import json
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from conformance_harness import ServerPair, compare, load_cases, normalize, run_case  # noqa: E402


def main(argv: list[str]) -> int:
    raw = "--raw" in argv
    ambiguous = "--ambiguous" in argv  # as for generated transactions
    files = [argv[i + 1] for i, a in enumerate(argv) if a == "--file"]
    patterns = [a for i, a in enumerate(argv)
                if not a.startswith("--") and (i == 0 or argv[i - 1] != "--file")]
    if files:
        cases = [c for f in files for c in load_cases(Path(f).parent)
                 if c.file == Path(f).name]
    else:
        cases = [c for c in load_cases() if any(fnmatch.fnmatch(c.name, p) for p in patterns)]
    pairs: dict[tuple[str, bool], ServerPair] = {}
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for case in cases:
                key = (case.schema, case.clustered)
                pair = pairs.get(key)
                if pair is None:
                    pair = pairs[key] = ServerPair(
                        case.schema, Path(tmp) / f"{case.schema}{'-c' if case.clustered else ''}",
                        case.clustered)
                records = run_case(pair, case)
                print(f"=== {case.name}")
                for kind, rec in records.items():
                    steps = rec.steps if raw else normalize(rec, case, pair.schema)
                    for i, st in enumerate(steps):
                        print(f"--- {kind} step {i}")
                        for conn, msgs in st.messages.items():
                            for m in msgs:
                                print(f"  {conn}: {json.dumps(m, sort_keys=True)}")
                        if i == len(steps) - 1 or raw:
                            print(f"  dump: {json.dumps(st.dump, sort_keys=True)}")
                diffs, intended = compare(case, pair.schema, records["ours"], records["real"],
                                          ambiguous=ambiguous)
                for d in diffs:
                    print("DIFFERENCE", d.render(case))
                    status = 1
                if intended:
                    print("intended:", dict(intended))
        finally:
            for p in pairs.values():
                p.stop()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
