"""Which NB columns and documented keys the differential corpus exercises.

What it owns: the checklist of `docs/northd_coverage.md`. For the four tables that
make up the logical topology (`Logical_Switch`, `Logical_Switch_Port`,
`Logical_Router`, `Logical_Router_Port`) an item is every schema column and every
`COLUMN:KEY` of a map column that `ovn-nb(5)` documents (its "Details" entries such as
`options : nat-addresses`, `other_config : mcast_snoop`, `external_ids :
neutron:port_name`, `ipv6_ra_configs : mtu`). Each item lists the corpus scripts
(`tests/northd/corpus/*.txt`) whose `nbctl`/`sbctl` lines set it.

Rules kept here:
- The manual is the groff source of ovn-nb(5) as installed with OVN 23.03; the items
  come from its "Details" entries only (prose mentions of other tables' keys are not
  items). The committed checklist lists them too (`checklist_keys`), so the scripts'
  coverage can be checked where the manual is not installed.
- A script sets an item when one of its `nbctl` commands writes that column or key:
  the database commands (`set`, `add`, `create`, `remove`, `clear`) name it, and the
  `ovn-nbctl` commands that write one (`lsp-set-options P K=V`, `lrp-add ... peer=P`,
  `lsp-add SW P PARENT TAG`, ...) are mapped in `_COMMANDS`. Static: no script is run.
- The columns northd writes itself (`up`, `dynamic_addresses`, `tag`,
  `Logical_Router_Port.ipv6_prefix`) count as set by the input that makes northd write
  them (`IMPLIED`).
- An item no script sets is allowed only in `EXCLUDED`, with its reason; an excluded
  item that a script sets is an error too (the exclusion is stale).
- Pure functions of texts (manual, schema, scripts); `main` does the file I/O.

Run `python tests/northd/corpus_coverage.py` to rewrite the checklist, `--check` to compare.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
CHECKLIST = ROOT / "docs" / "northd_coverage.md"
SCHEMA = ROOT / "src" / "pyovsdb" / "schemas" / "ovn-nb.ovsschema"
TABLES = ("Logical_Switch", "Logical_Switch_Port", "Logical_Router", "Logical_Router_Port")
MANUAL_VERSION = "23.03"
SHOWN = 4  # script names shown per item


@dataclass(frozen=True, order=True)
class Item:
    table: str
    column: str
    key: str = ""

    def __str__(self) -> str:
        return f"{self.column}:{self.key}" if self.key else self.column


# Items no corpus script sets, each with why. Empty while the corpus covers everything.
EXCLUDED: dict[Item, str] = {}


# -- the manual and the schema ---------------------------------------------------------

_SECTION = re.compile(r'^\.SH "(\w+) TABLE"')
_DETAIL = re.compile(r'^\.IP "\\fB([\w-]+)(?: : ([^\\]+))?\\fR')
_GROUP = re.compile(r'^\.ST "(.*?):?"')


def manual_version(text: str) -> str:
    """The OVN version on the manual's `.TH` line ("" if none)."""
    m = re.search(r'^\.TH .*"Open vSwitch (\d+\.\d+)[.\d]*"', text, re.M)
    return m.group(1) if m else ""


def manual_items(text: str, tables: Sequence[str] = TABLES) -> dict[Item, str]:
    """The documented `COLUMN:KEY` items of `tables` -> the manual's group heading
    ("Options for localnet ports"); a key documented under two groups keeps both."""
    out: dict[Item, str] = {}
    table = ""
    details = False
    group = ""
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m is not None or line.startswith(".SH "):
            table = m.group(1) if m is not None else ""
            details = False
            continue
        if table not in tables:
            continue
        if line.startswith('.SS "Details'):
            details = True
            continue
        g = _GROUP.match(line)
        if g is not None:
            group = g.group(1)
            continue
        d = _DETAIL.match(line)
        if details and d is not None and d.group(2):
            item = Item(table, d.group(1), d.group(2).strip())
            out[item] = f"{out[item]}; {group}" if item in out else group
    return out


def schema_items(schema: Mapping[str, object], tables: Sequence[str] = TABLES) -> list[Item]:
    columns = schema["tables"]
    assert isinstance(columns, dict)
    return [Item(t, c) for t in tables for c in sorted(columns[t]["columns"])]


# -- what a script sets ------------------------------------------------------------------

LS, LSP, LR, LRP = TABLES

# ovn-nbctl command -> the columns it writes: (table, column); "options" columns with a
# key taken from the command's KEY=VALUE arguments are handled in `_command_items`.
_COMMANDS: dict[str, tuple[tuple[str, str], ...]] = {
    "ls-add": ((LS, "name"),),
    "lr-add": ((LR, "name"),),
    "lsp-add": ((LS, "ports"), (LSP, "name")),
    "lrp-add": ((LR, "ports"), (LRP, "name"), (LRP, "mac"), (LRP, "networks")),
    "lsp-set-addresses": ((LSP, "addresses"),),
    "lsp-set-port-security": ((LSP, "port_security"),),
    "lsp-set-enabled": ((LSP, "enabled"),),
    "lsp-set-type": ((LSP, "type"),),
    "lsp-set-dhcpv4-options": ((LSP, "dhcpv4_options"),),
    "lsp-set-dhcpv6-options": ((LSP, "dhcpv6_options"),),
    "lsp-attach-mirror": ((LSP, "mirror_rules"),),
    "lrp-set-enabled": ((LRP, "enabled"),),
    "lrp-set-gateway-chassis": ((LRP, "gateway_chassis"),),
    "lrp-set-redirect-type": ((LRP, "options"),),
    "qos-add": ((LS, "qos_rules"),),
    "ls-lb-add": ((LS, "load_balancer"),),
    "lr-lb-add": ((LR, "load_balancer"),),
    "lr-route-add": ((LR, "static_routes"),),
    "lr-policy-add": ((LR, "policies"),),
    "lr-nat-add": ((LR, "nat"),),
    "fwd-group-add": ((LS, "forwarding_groups"),),
    "ls-copp-add": ((LS, "copp"),),
    "lr-copp-add": ((LR, "copp"),),
}
_DB_COMMANDS = ("set", "add", "create", "remove", "clear")

# Columns northd writes, counted as set by the input that makes northd write them
# (`script_items` applies these rules; the text is shown in the checklist).
IMPLIED: dict[Item, str] = {
    Item(LSP, "up"): "every script with a switch port (northd writes `up` of each)",
    Item(LSP, "dynamic_addresses"): "`addresses` with `dynamic` (northd's IPAM writes it)",
    Item(LSP, "tag"): "`tag_request` (northd allocates the tag)",
    Item(LRP, "ipv6_prefix"): "`sbctl` setting a binding's `options:ipv6_ra_pd_list` "
                              "(northd copies the delegated prefix)",
}


def _table(name: str) -> str:
    """An ovn-nbctl table name as the tool matches it (case-insensitive, or a unique
    prefix of one of `TABLES`); "" for another table."""
    exact = [t for t in TABLES if t.lower() == name.lower()]
    if exact:
        return exact[0]
    prefix = [t for t in TABLES if t.lower().startswith(name.lower())]
    return prefix[0] if len(prefix) == 1 else ""


def _map_keys(value: str) -> list[str]:
    """The keys of an ovsdb map literal `{k1=v1, "k2"=v2}` (or a bare `k=v`)."""
    body = value.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    keys = []
    for part in re.split(r",\s*", body):
        if "=" in part:
            keys.append(part.split("=", 1)[0].strip().strip('"'))
    return keys


def _column_items(table: str, args: Sequence[str], *, with_values: bool) -> set[Item]:
    """The items of `COL[:KEY]=VALUE` arguments (or bare `COL`/`COL KEY=VALUE` of
    `add`/`remove`/`clear`, `with_values=False`)."""
    out: set[Item] = set()
    if not with_values:
        if not args:
            return out
        column = args[0]
        out.add(Item(table, column))
        for value in args[1:]:
            out.update(Item(table, column, k) for k in _map_keys(value))
        return out
    for arg in args:
        lhs, sep, value = arg.partition("=")
        if not sep:
            continue
        column, colon, key = lhs.partition(":")
        out.add(Item(table, column))
        if colon:
            out.add(Item(table, column, key.strip('"')))
        elif value.startswith("{"):
            out.update(Item(table, column, k) for k in _map_keys(value))
    return out


def _command_items(options: Sequence[str], words: Sequence[str]) -> set[Item]:
    """The items one ovn-nbctl command (`words`, after its `options`) sets."""
    cmd, args = words[0], list(words[1:])
    out = {Item(t, c) for t, c in _COMMANDS.get(cmd, ())}
    if cmd in _DB_COMMANDS:
        table = _table(args[0]) if args else ""
        if table and cmd in ("create", "set"):
            out |= _column_items(table, args[1 if cmd == "create" else 2:], with_values=True)
        elif table:
            out |= _column_items(table, args[2:], with_values=False)
    elif cmd in ("lsp-set-options", "lrp-set-options"):
        table = LSP if cmd == "lsp-set-options" else LRP
        out.add(Item(table, "options"))
        out.update(Item(table, "options", a.split("=", 1)[0]) for a in args[1:] if "=" in a)
    elif cmd == "lrp-set-redirect-type":
        out.add(Item(LRP, "options", "redirect-type"))
    elif cmd == "lsp-add" and len(args) == 4:
        out.add(Item(LSP, "tag_request"))
        if args[2]:  # `lsp-add SW P "" TAG` is a tagged localnet port, with no parent
            out.add(Item(LSP, "parent_name"))
    elif cmd == "lrp-add" and any(a.startswith("peer=") for a in args):
        out.add(Item(LRP, "peer"))
    elif cmd == "acl-add" and "--type=port-group" not in options:
        out.add(Item(LS, "acls"))
    if Item(LSP, "addresses") in out and any(re.search(r"\bdynamic\b", a) for a in args):
        out.add(Item(LSP, "dynamic_addresses"))
    return out


def _commands(args: Sequence[str]) -> Iterable[tuple[list[str], list[str]]]:
    """The commands of one ovn-nbctl call (split at `--`): (options, words)."""
    current: list[str] = []
    for a in [*args, "--"]:
        if a != "--":
            current.append(a)
            continue
        n = 0
        while n < len(current) and current[n].startswith("--"):
            n += 1
        if n < len(current):
            yield current[:n], current[n:]
        current = []


def script_items(text: str) -> set[Item]:
    """Every item the `nbctl`/`sbctl` lines of a corpus script set."""
    out: set[Item] = set()
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        if words[0] == "nbctl":
            for options, cmd in _commands(words[1:]):
                out |= _command_items(options, cmd)
        elif words[0] == "sbctl" and any("ipv6_ra_pd_list" in w for w in words):
            out.add(Item(LRP, "ipv6_prefix"))
    if Item(LSP, "name") in out:
        out.add(Item(LSP, "up"))
    if Item(LSP, "tag_request") in out:
        out.add(Item(LSP, "tag"))
    return out


# -- the checklist -----------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    items: dict[Item, str]  # item -> manual group ("" for a schema column)
    scripts: dict[Item, list[str]]  # item -> the scripts that set it, sorted

    def uncovered(self) -> list[Item]:
        return sorted(i for i in self.items if not self.scripts.get(i) and i not in EXCLUDED)

    def stale_exclusions(self) -> list[Item]:
        return sorted(i for i in EXCLUDED if self.scripts.get(i) or i not in self.items)


def coverage(keys: Mapping[Item, str], schema: Mapping[str, object],
             scripts: Mapping[str, str]) -> Coverage:
    """`keys`: the documented keys (`manual_items`, or `checklist_keys` of the
    committed checklist)."""
    items: dict[Item, str] = {i: "" for i in schema_items(schema)}
    items.update(keys)
    sets = {name: script_items(text) for name, text in scripts.items()}
    by_item = {i: sorted((n for n, got in sets.items() if i in got), key=_script_order)
               for i in items}
    return Coverage(items, by_item)


def _script_order(name: str) -> tuple[int, str]:
    head = name.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, name)


def render(cov: Coverage) -> str:
    lines = [
        "# northd corpus coverage",
        "",
        "Generated by `python tests/northd/corpus_coverage.py` from the OVN "
        f"{MANUAL_VERSION} `ovn-nb(5)` manual, the NB schema and "
        "`tests/northd/corpus/*.txt`; do not edit. "
        "`tests/northd/test_corpus_coverage.py` fails when this file is stale, when an item has "
        "no script, and when an exclusion is stale.",
        "",
        "An item is a schema column of the table or a `COLUMN:KEY` the manual documents; "
        "its scripts are those of the differential corpus that set it "
        f"(the first {SHOWN}, then how many more).",
        "",
    ]
    for table in TABLES:
        mine = sorted(i for i in cov.items if i.table == table)
        done = sum(1 for i in mine if cov.scripts.get(i))
        lines += [f"## {table}", "", f"{done} of {len(mine)} items set by a script.", "",
                  "| item | manual group | scripts |", "|---|---|---|"]
        for item in mine:
            lines.append(f"| `{item}` | {cov.items[item]} | {_cell(cov, item)} |")
        lines.append("")
    return "\n".join(lines)


def _cell(cov: Coverage, item: Item) -> str:
    names = cov.scripts.get(item, [])
    if not names:
        return f"**excluded**: {EXCLUDED[item]}" if item in EXCLUDED else "**none**"
    more = f" (+{len(names) - SHOWN})" if len(names) > SHOWN else ""
    implied = f"; {IMPLIED[item]}" if item in IMPLIED else ""
    return ", ".join(names[:SHOWN]) + more + implied


# -- I/O ---------------------------------------------------------------------------------


_ROW = re.compile(r"^\| `([\w-]+):([^`]+)` \| ([^|]*) \|")


def checklist_keys(text: str) -> dict[Item, str]:
    """The documented keys a rendered checklist lists (its `COLUMN:KEY` rows)."""
    out: dict[Item, str] = {}
    table = ""
    for line in text.splitlines():
        if line.startswith("## "):
            table = line[3:].strip()
            continue
        m = _ROW.match(line)
        if m is not None and table:
            out[Item(table, m.group(1), m.group(2))] = m.group(3).strip()
    return out


MAN_PATHS = ("/usr/share/man/man5/ovn-nb.5.gz", "/usr/share/man/man5/ovn-nb.5",
             "/usr/local/share/man/man5/ovn-nb.5.gz", "/usr/local/share/man/man5/ovn-nb.5")


def find_manual() -> Path | None:
    """The installed ovn-nb(5) (`man -w`, else the usual places), or None."""
    try:
        p = subprocess.run(["man", "-w", "5", "ovn-nb"], capture_output=True, text=True,
                           timeout=30)
        found = p.stdout.strip() if p.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        found = ""
    for path in (Path(c) for c in (found, *MAN_PATHS) if c):
        if path.exists():
            return path
    return None


def read_manual(path: Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode()


def corpus_texts(directory: Path = CORPUS) -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(directory.glob("*.txt"))}


def current(keys: Mapping[Item, str]) -> Coverage:
    """The corpus's coverage of the schema's columns and `keys`."""
    with open(SCHEMA) as f:
        schema = json.load(f)
    return coverage(keys, schema, corpus_texts())


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manual", type=Path, help="ovn-nb.5[.gz] (default: man -w)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the checklist is stale or an item is uncovered")
    args = ap.parse_args(argv)
    path = args.manual or find_manual()
    if path is None:
        print("ovn-nb(5) is not installed", file=sys.stderr)
        return 2
    manual = read_manual(path)
    if manual_version(manual) != MANUAL_VERSION:
        print(f"{path} is OVN {manual_version(manual)!r}, not {MANUAL_VERSION}",
              file=sys.stderr)
        return 2
    cov = current(manual_items(manual))
    text = render(cov)
    for item in cov.uncovered():
        print(f"no script sets {item.table}.{item}", file=sys.stderr)
    if args.check:
        stale = not CHECKLIST.exists() or CHECKLIST.read_text() != text
        if stale:
            print(f"{CHECKLIST} is stale", file=sys.stderr)
        return 1 if stale or cov.uncovered() or cov.stale_exclusions() else 0
    CHECKLIST.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
