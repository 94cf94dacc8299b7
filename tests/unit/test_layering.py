"""The package's layering, checked from the source with `ast` (nothing is imported).

Rules, and why:
- Pure modules do no I/O and draw on no hidden state, so they can be tested without a
  server and every run of them is reproducible: they import none of the modules that
  reach the outside world or a clock or global randomness, call no `open()`, `print()`,
  `input()`, `datetime.now()` or `uuid.uuid4()`. Imports guarded by `if TYPE_CHECKING:`
  do not run and do not count. The pure modules: `ovsdb/`, `raft/core.py`,
  `raft/rpc.py`, `raft/records.py`, `engine/`, `northd/` except `northd/daemon.py`, the
  IDL row, replica, transaction and change-reading modules northd uses, the scale
  harness's topology, cloud and report (`scale/topology.py`, `scale/cloud.py`,
  `scale/report.py`), and the
  `util` modules those build on (`prng`, `ovsjson`, `ovshash`, `utf8`, `cnum`).
- A pure module imports, from pyovsdb, only pure modules of the layers below it:
  `engine/` nothing at all (stdlib only); `northd/` only `engine`, `ovsdb`,
  `idl.row`, `idl.replica`, `idl.txn`, `idl.tracking`, the pure `util` modules and
  `northd` itself (not `northd.daemon`); the scale harness's pure modules only each
  other and the pure `util` modules.
- `util/` is the bottom layer: it imports no other pyovsdb package.
- No run-time import cycles: among module-level imports (not inside functions, not
  under `if TYPE_CHECKING:`), no module reaches itself. Importing `a.b.c` also runs
  the `__init__` of `a.b`, so that is an edge too (except to the importer's own
  ancestors, which are already being initialised).
- Size budget: `engine/` and `northd/` files at most 800 lines, every other file at
  most 1,200, except the files in `OVER_BUDGET`, each with its reason. An entry whose
  file shrank under the budget (or went away) fails too, so the list only shrinks.

The checkers are plain functions of source text, and `test_rule_*` feed each one a
small violation to show that the rule can fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "pyovsdb"

FORBIDDEN_IN_PURE = frozenset({
    "asyncio", "socket", "os", "io", "time", "random", "subprocess", "threading",
    "selectors", "signal", "pathlib", "shutil", "tempfile", "glob", "secrets",
    "multiprocessing", "concurrent", "importlib",
})
FORBIDDEN_CALLS = frozenset({"open", "print", "input"})
# attribute calls that read a clock or global randomness: (object name, attribute)
FORBIDDEN_ATTR_CALLS = frozenset({
    ("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today"),
    ("uuid", "uuid1"), ("uuid", "uuid4"), ("uuidlib", "uuid1"), ("uuidlib", "uuid4"),
})
FORBIDDEN_NAMES_FROM = {"uuid": frozenset({"uuid1", "uuid4"})}

PURE_UTIL = frozenset({"pyovsdb.util.prng", "pyovsdb.util.ovsjson", "pyovsdb.util.ovshash",
                       "pyovsdb.util.utf8", "pyovsdb.util.cnum", "pyovsdb.util.metrics"})
# The IDL's own pure parts: rows, the replica they live in, transactions as data, and
# reading changesets (`tracking.changed_columns`); not `idl.idl` (asyncio, sockets).
PURE_IDL = frozenset({"pyovsdb.idl.row", "pyovsdb.idl.replica", "pyovsdb.idl.txn",
                      "pyovsdb.idl.tracking"})
PURE_RAFT = frozenset({"pyovsdb.raft.core", "pyovsdb.raft.rpc", "pyovsdb.raft.records"})
PURE_SCALE = frozenset({"pyovsdb.scale.topology", "pyovsdb.scale.cloud", "pyovsdb.scale.report"})
NORTHD_ADAPTER = "pyovsdb.northd.daemon"

SMALL_BUDGET = 800     # engine/, northd/
BUDGET = 1200          # everything else
OVER_BUDGET = {
    "raft/core.py": "one Raft state machine (OVS's raft.c is 5,000 lines); splitting it "
                    "by message type would scatter the invariants its docstring states",
}


# -- reading the source ----------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    target: str        # absolute module name (a module or a package)
    line: int
    runtime: bool      # runs when the importing module is imported
    typing_only: bool  # under `if TYPE_CHECKING:`


@dataclass(frozen=True)
class Module:
    name: str
    path: str          # relative to src/pyovsdb
    lines: int
    imports: tuple[Import, ...]
    io_calls: tuple[tuple[str, int], ...]   # forbidden calls: (what, line)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = importer.split(".")
    base = parts if is_package else parts[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def parse_module(name: str, path: str, source: str, known: Iterable[str]) -> Module:
    """The imports and forbidden calls of one module, `known` being every module name
    (to tell `from pkg import submodule` from `from pkg import name`)."""
    known = set(known)
    is_package = path.endswith("__init__.py")
    tree = ast.parse(source, filename=path)
    imports: list[Import] = []
    calls: list[tuple[str, int]] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = _resolve(name, is_package, node)
        out = []
        for a in node.names:
            sub = f"{base}.{a.name}"
            out.append(sub if sub in known else base)
        if node.module in FORBIDDEN_NAMES_FROM:
            for a in node.names:
                if a.name in FORBIDDEN_NAMES_FROM[node.module]:
                    calls.append((f"{node.module}.{a.name}", node.lineno))
        return out

    def visit(node: ast.AST, in_function: bool, typing_only: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for t in targets(node):
                imports.append(Import(t, node.lineno, not in_function and not typing_only,
                                      typing_only))
            return
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in FORBIDDEN_CALLS:
                calls.append((f"{f.id}()", node.lineno))
            elif isinstance(f, ast.Attribute):
                obj = f.value
                oname = obj.id if isinstance(obj, ast.Name) else (
                    obj.attr if isinstance(obj, ast.Attribute) else None)
                if (oname, f.attr) in FORBIDDEN_ATTR_CALLS:
                    calls.append((f"{oname}.{f.attr}()", node.lineno))
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            visit(node.test, in_function, typing_only)
            for child in node.body:
                visit(child, in_function, True)
            for child in node.orelse:
                visit(child, in_function, typing_only)
            return
        inner = in_function or isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for sub in ast.iter_child_nodes(node):
            visit(sub, inner, typing_only)

    visit(tree, False, False)
    return Module(name, path, len(source.splitlines()), tuple(imports), tuple(calls))


def module_name(rel: str) -> str:
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([ROOT, *parts])


def load_tree(sources: Mapping[str, str]) -> dict[str, Module]:
    """Modules by name, from {path relative to the package root: source}."""
    names = {module_name(rel): rel for rel in sources}
    return {n: parse_module(n, rel, sources[rel], names) for n, rel in names.items()}


@pytest.fixture(scope="module")
def tree() -> dict[str, Module]:
    base = SRC / ROOT
    sources = {p.relative_to(base).as_posix(): p.read_text(encoding="utf-8")
               for p in sorted(base.rglob("*.py"))}
    return load_tree(sources)


# -- the rules ---------------------------------------------------------------------------


def _within(name: str, pkg: str) -> bool:
    return name == pkg or name.startswith(pkg + ".")


def purity(name: str) -> str | None:
    """Which pure layer a module belongs to, or None for an adapter module."""
    if _within(name, "pyovsdb.ovsdb"):
        return "ovsdb"
    if name in PURE_RAFT:
        return "raft"
    if _within(name, "pyovsdb.engine"):
        return "engine"
    if _within(name, "pyovsdb.northd") and name != NORTHD_ADAPTER:
        return "northd"
    if name in PURE_IDL:
        return "idl"
    if name in PURE_UTIL:
        return "util"
    if name in PURE_SCALE:
        return "scale"
    return None


def allowed_import(layer: str, target: str) -> bool:
    """May a module of pure `layer` import pyovsdb module `target`?"""
    if layer == "engine":
        return _within(target, "pyovsdb.engine")
    if layer == "northd":
        return (_within(target, "pyovsdb.engine") or _within(target, "pyovsdb.ovsdb")
                or target in PURE_IDL or target in PURE_UTIL
                or (_within(target, "pyovsdb.northd") and target != NORTHD_ADAPTER))
    if layer == "ovsdb":
        return _within(target, "pyovsdb.ovsdb") or target in PURE_UTIL
    if layer == "raft":
        return target in PURE_RAFT or target in PURE_UTIL
    if layer == "idl":
        return _within(target, "pyovsdb.ovsdb") or target in PURE_IDL or target in PURE_UTIL
    if layer == "util":
        return target in PURE_UTIL
    if layer == "scale":
        return target in PURE_SCALE or target in PURE_UTIL
    raise AssertionError(layer)


def purity_violations(mod: Module) -> list[str]:
    layer = purity(mod.name)
    if layer is None:
        return []
    out = [f"{mod.path}:{line}: calls {what}" for what, line in mod.io_calls]
    for imp in mod.imports:
        if imp.typing_only:
            continue
        top = imp.target.split(".")[0]
        if top in FORBIDDEN_IN_PURE:
            out.append(f"{mod.path}:{imp.line}: imports {imp.target}")
        elif top == ROOT and not allowed_import(layer, imp.target):
            out.append(f"{mod.path}:{imp.line}: {layer} module imports {imp.target}")
    return out


def util_violations(mod: Module) -> list[str]:
    if not _within(mod.name, "pyovsdb.util"):
        return []
    return [f"{mod.path}:{imp.line}: util imports {imp.target}" for imp in mod.imports
            if _within(imp.target, ROOT) and not _within(imp.target, "pyovsdb.util")]


def import_graph(modules: Mapping[str, Module]) -> dict[str, set[str]]:
    """Run-time, module-level import edges between pyovsdb modules, with the implicit
    edge to the package `__init__` on the way to a submodule."""
    graph: dict[str, set[str]] = {n: set() for n in modules}
    for name, mod in modules.items():
        # itself and the packages above it (a package's own `from .x import y` is no
        # edge back to the package)
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
        for imp in mod.imports:
            if not imp.runtime or not _within(imp.target, ROOT):
                continue
            parts = imp.target.split(".")
            for i in range(2, len(parts)):
                pkg = ".".join(parts[:i])
                if pkg in modules and pkg not in ancestors:
                    graph[name].add(pkg)
            if imp.target in modules:
                graph[name].add(imp.target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components that contain a cycle (Tarjan, iterative),
    each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in graph.get(node, ()):
                    found.append(sorted(comp))
    return sorted(found)


def budget(path: str) -> int:
    return SMALL_BUDGET if path.startswith(("engine/", "northd/")) else BUDGET


def size_violations(modules: Iterable[Module], allow: Mapping[str, str]) -> list[str]:
    out = []
    sizes = {m.path: m.lines for m in modules}
    for path, lines in sorted(sizes.items()):
        limit = budget(path)
        if lines > limit and (path not in allow or limit == SMALL_BUDGET):
            out.append(f"{path}: {lines} lines, over the budget of {limit}")
    for path in sorted(allow):
        if path not in sizes:
            out.append(f"{path}: allowed over budget but gone; drop it from the list")
        elif sizes[path] <= budget(path):
            out.append(f"{path}: {sizes[path]} lines, within budget now; drop it from "
                       "the list")
    return out


# -- the tree as it is -------------------------------------------------------------------


def test_pure_modules_do_no_io_and_import_only_lower_pure_layers(
        tree: dict[str, Module]) -> None:
    assert {purity(n) for n in tree} >= {"ovsdb", "raft", "idl", "util"}
    problems = [p for m in tree.values() for p in purity_violations(m)]
    assert problems == []


def test_util_imports_nothing_above_util(tree: dict[str, Module]) -> None:
    assert [p for m in tree.values() for p in util_violations(m)] == []


def test_no_runtime_import_cycles(tree: dict[str, Module]) -> None:
    graph = import_graph(tree)
    assert "pyovsdb.ovsdb.datum" in graph["pyovsdb.ovsdb.transaction"]
    assert cycles(graph) == []


def test_file_sizes_within_budget(tree: dict[str, Module]) -> None:
    assert size_violations(tree.values(), OVER_BUDGET) == []


# -- each rule can fail ------------------------------------------------------------------


def _violations(path: str, source: str) -> list[str]:
    stubs = dict.fromkeys(["engine/__init__.py", "ovsdb/__init__.py", "idl/row.py",
                           "idl/__init__.py", "util/prng.py", "northd/daemon.py",
                           "util/vlog.py"], "")
    mods = load_tree({**stubs, path: source})
    return purity_violations(mods[module_name(path)])


@pytest.mark.parametrize("path, source", [
    ("ovsdb/x.py", "import time\n"),
    ("ovsdb/x.py", "import os.path\n"),
    ("ovsdb/x.py", "def f():\n    import random\n"),
    ("ovsdb/x.py", "from asyncio import sleep\n"),
    ("ovsdb/x.py", "def f(p):\n    return open(p).read()\n"),
    ("ovsdb/x.py", "from datetime import datetime\nT = datetime.now()\n"),
    ("ovsdb/x.py", "import uuid\nU = uuid.uuid4()\n"),
    ("ovsdb/x.py", "from uuid import uuid4\n"),
    ("ovsdb/x.py", "from ..util import vlog\n"),
    ("raft/core.py", "import random\n"),
    ("raft/core.py", "from ..ovsdb import x\n"),
    ("engine/graph.py", "from ..ovsdb import x\n"),
    ("engine/graph.py", "import socket\n"),
    ("northd/build/ports.py", "from ...idl import Idl\n"),
    ("northd/build/ports.py", "from ..daemon import run\n"),
    ("northd/build/ports.py", "from .. import daemon\n"),
    ("northd/build/ports.py", "from pyovsdb.util.vlog import Vlog\n"),
    ("northd/x.py", "print('hello')\n"),
    ("util/prng.py", "import threading\n"),
])
def test_rule_purity_catches(path: str, source: str) -> None:
    assert _violations(path, source) != []


@pytest.mark.parametrize("path, source", [
    ("ovsdb/x.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import asyncio\n"),
    ("ovsdb/x.py", "from ..util.prng import SplitMix64\nimport re\n"),
    ("northd/build/ports.py", "from ...engine import Node\nfrom ...idl.row import IdlRow\n"),
    ("northd/build/ports.py", "from ...idl import row\nimport uuid\nX = uuid.UUID(int=0)\n"),
    ("northd/daemon.py", "import asyncio\nimport time\nfrom ..idl import Idl\n"),
    ("server/x.py", "import os\nopen('f')\n"),
])
def test_rule_purity_allows(path: str, source: str) -> None:
    assert _violations(path, source) == []


def test_rule_util_catches() -> None:
    mods = load_tree({"util/a.py": "from ..ovsdb.datum import x\nfrom . import b\n",
                      "util/b.py": "", "util/__init__.py": "", "ovsdb/datum.py": ""})
    assert util_violations(mods["pyovsdb.util.a"]) == ["util/a.py:1: util imports "
                                                       "pyovsdb.ovsdb.datum"]
    assert util_violations(mods["pyovsdb.util.b"]) == []


def test_rule_cycles_catches() -> None:
    mods = load_tree({
        "a/__init__.py": "from .x import f\n",
        "a/x.py": "from ..b.y import g\n",
        "b/__init__.py": "",
        "b/y.py": "import pyovsdb.c\n",
        "c.py": "from pyovsdb.a.x import f\n",
        # not cycles: inside a function, under TYPE_CHECKING
        "d.py": "def f():\n    from . import e\n",
        "e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import d\n"
                "from . import f\n",
        "f.py": "",
    })
    graph = import_graph(mods)
    assert cycles(graph) == [["pyovsdb.a", "pyovsdb.a.x", "pyovsdb.b.y", "pyovsdb.c"]]
    assert graph["pyovsdb.a.x"] == {"pyovsdb.b", "pyovsdb.b.y"}  # b's __init__ runs too
    assert cycles({"m": {"m"}}) == [["m"]]
    assert cycles({"m": {"n"}, "n": set()}) == []


def test_rule_sizes_catches() -> None:
    mods = load_tree({"northd/big.py": "x = 1\n" * 801, "server/ok.py": "x = 1\n" * 1200,
                      "cli/big.py": "x = 1\n" * 1201, "raft/core.py": "x = 1\n" * 1300,
                      "engine/ok.py": "x = 1\n" * 800})
    assert size_violations(mods.values(), {"raft/core.py": "why"}) == [
        "cli/big.py: 1201 lines, over the budget of 1200",
        "northd/big.py: 801 lines, over the budget of 800",
    ]
    # an allowlist entry cannot exempt engine/northd, and stale entries fail
    assert size_violations(mods.values(), {"northd/big.py": "why", "cli/big.py": "why",
                                           "server/ok.py": "why", "gone.py": "why",
                                           "raft/core.py": "why"}) == [
        "northd/big.py: 801 lines, over the budget of 800",
        "gone.py: allowed over budget but gone; drop it from the list",
        "server/ok.py: 1200 lines, within budget now; drop it from the list",
    ]
