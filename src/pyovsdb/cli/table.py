"""Text output of `pyovsdb client`, byte for byte what `ovsdb-client` prints: its tables
(table, list, html, csv and json formats), the text of OVSDB values in table cells,
and its JSON.

Rules kept here:
- JSON text is OVS's: compact, or with `--pretty` one member or element per line,
  indented two spaces a level, closing brackets at the end of the last line; object
  members sorted bytewise; control characters escaped as lowercase `\\u00xx`, nothing
  else but `"` and `\\` escaped.
- A number read from the wire that is integral prints as an integer, because OVS's JSON
  parser reads `1.0` as the integer 1; a real taken out of a datum (`Real`) prints as
  `%.15g`, as OVS's `json_real_create` values do.
- A cell holds literal text or JSON with its column type. JSON with a type is shown as
  `ovsdb_datum_to_string` (or to_bare) shows it; JSON that does not parse as that type
  is shown as JSON text, as the real tool falls back to it.
- Widths and padding count UTF-8 bytes, and the table format drops trailing spaces from
  every line, as the real tool does.
- Where the real tool walks a JSON object or a schema in hash-table order
  (`SHASH_FOR_EACH`), `shash_order` reproduces that order from the order in which the
  keys were inserted; the real tool's hash and bucket logic are modelled exactly, so
  the order is the same whatever the keys.
- Consecutive tables of one format are separated by a blank line, counted for the life
  of the printer, as the real tool's per-format static counters do.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any

from ..ovsdb.datum import atom_to_string
from ..ovsdb.datum import datum_to_string as _datum_to_string
from ..ovsdb.types import REAL, STRING, UUID, BaseType, ColumnType
from ..util.ovsjson import Real, json_to_string

# --------------------------------------------------------------------------------------
# Datums as the real tool shows them (lib/ovsdb-data.c)

def atom_to_bare(atype: str, atom: Any) -> str:
    return str(atom) if atype == STRING else atom_to_string(atype, atom)


def _elements(ctype: ColumnType, value: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(keys, values) of a datum in the canonical form of `ovsdb.datum`."""
    if ctype.is_scalar:
        return (value,), ()
    if ctype.value is not None:
        return tuple(k for k, _ in value), tuple(v for _, v in value)
    return tuple(value), ()


def datum_to_string(ctype: ColumnType, value: Any) -> str:
    return _datum_to_string(ctype.codec, value)


def datum_to_bare(ctype: ColumnType, value: Any) -> str:
    keys, values = _elements(ctype, value)
    kt = ctype.key.type
    if ctype.value is not None:
        vt = ctype.value.type
        return " ".join(f"{atom_to_bare(kt, k)}={atom_to_bare(vt, v)}"
                        for k, v in zip(keys, values, strict=True))
    return " ".join(atom_to_bare(kt, k) for k in keys)


def _atom_json(atype: str, atom: Any) -> Any:
    if atype == UUID:
        return ["uuid", atom]
    if atype == REAL:
        return Real(atom)
    return atom


def datum_to_json(ctype: ColumnType, value: Any) -> Any:
    """`ovsdb_datum_to_json`: a map, else a bare atom if there is exactly one, else a set."""
    keys, values = _elements(ctype, value)
    kt = ctype.key.type
    if ctype.value is not None:
        vt = ctype.value.type
        return ["map", [[_atom_json(kt, k), _atom_json(vt, v)]
                        for k, v in zip(keys, values, strict=True)]]
    if len(keys) == 1:
        return _atom_json(kt, keys[0])
    return ["set", [_atom_json(kt, k) for k in keys]]


def _plain(json: Any) -> Any:
    """`json` with every `Real` made a float again, as the datum parser wants."""
    if type(json) is Real:
        return float(json)
    if type(json) is list:
        return [_plain(j) for j in json]
    return json


def datum_sort_key(ctype: ColumnType, value: Any) -> Any:
    """Orders datums as `ovsdb_datum_compare_3way`."""
    return ctype.codec.sort_key(value)


def relaxed_type(ctype: ColumnType) -> ColumnType:
    """The type `ovsdb_unconstrained_datum_from_json` parses with: same atomic types, no
    constraints, any number of elements."""
    value = BaseType(ctype.value.type) if ctype.value is not None else None
    return ColumnType(BaseType(ctype.key.type), value, 0, float("inf"))


def type_to_json(ctype: ColumnType) -> Any:
    """`ovsdb_type_to_json`, leaving out every bound that equals its default."""
    key = base_type_to_json(ctype.key)
    if ctype.value is None and ctype.min == 1 and ctype.max == 1 and isinstance(key, str):
        return key
    out: dict[str, Any] = {"key": key}
    if ctype.value is not None:
        out["value"] = base_type_to_json(ctype.value)
    if ctype.min != 1:
        out["min"] = ctype.min
    if ctype.max == float("inf"):
        out["max"] = "unlimited"
    elif ctype.max != 1:
        out["max"] = ctype.max
    return out


_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1
_DBL_MAX = sys.float_info.max
_UINT_MAX = (1 << 32) - 1


def base_type_to_json(base: BaseType) -> Any:
    out: dict[str, Any] = {"type": base.type}
    if base.enum is not None:
        atoms = [_atom_json(base.type, a) for a in sorted(base.enum)]
        out["enum"] = atoms[0] if len(atoms) == 1 else ["set", atoms]
    if base.min_integer is not None and base.min_integer != _INT_MIN:
        out["minInteger"] = base.min_integer
    if base.max_integer is not None and base.max_integer != _INT_MAX:
        out["maxInteger"] = base.max_integer
    if base.min_real is not None and base.min_real != -_DBL_MAX:
        out["minReal"] = Real(base.min_real)
    if base.max_real is not None and base.max_real != _DBL_MAX:
        out["maxReal"] = Real(base.max_real)
    if base.min_length is not None and base.min_length != 0:
        out["minLength"] = base.min_length
    if base.max_length is not None and base.max_length != _UINT_MAX:
        out["maxLength"] = base.max_length
    if base.ref_table is not None:
        out["refTable"] = base.ref_table
        if base.ref_type == "weak":
            out["refType"] = "weak"
    return out["type"] if len(out) == 1 else out


# --------------------------------------------------------------------------------------
# Tables (lib/table.c)

NO_JSON: Any = object()


@dataclass
class Cell:
    text: str | None = None
    json: Any = NO_JSON
    type: ColumnType | None = None


@dataclass
class Table:
    columns: list[str]
    caption: str | None = None
    timestamp: bool = False
    rows: list[list[Cell]] = field(default_factory=list)

    def add_row(self, *cells: Cell) -> list[Cell]:
        """A row of the given cells, padded with empty ones."""
        row = list(cells) + [Cell() for _ in range(len(self.columns) - len(cells))]
        self.rows.append(row)
        return row


FORMATS = ("table", "list", "html", "csv", "json")
CELL_FORMATS = ("string", "bare", "json")


@dataclass
class Style:
    format: str = "table"
    cell_format: str = "string"
    headings: bool = True
    pretty: bool = False


_UUID_PREFIX_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HTML_RE = re.compile(r"[&<>\"]")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


def _html_escape(s: str) -> str:
    return _HTML_RE.sub(lambda m: _HTML[m.group()], s)


def _blen(s: str) -> int:
    return len(s.encode())


def _pad(s: str, width: int) -> str:
    return s + " " * (width - _blen(s))


def timestamp_now() -> str:
    now = time.time()
    ms = int(now * 1000) % 1000
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now)) + f".{ms:03d}"


class Printer:
    """Prints tables in one style; remembers how many it printed in each format."""

    def __init__(self, style: Style, out: IO[str] | None = None) -> None:
        self.style = style
        self.out = out if out is not None else sys.stdout
        self.counts: dict[str, int] = {}

    def cell_text(self, cell: Cell) -> str:
        if cell.text is not None:
            return cell.text
        if cell.json is NO_JSON:
            return ""
        if self.style.cell_format == "json" or cell.type is None:
            return json_to_string(cell.json)
        try:
            value = cell.type.codec.from_json(_plain(cell.json))
        except Exception:  # any value that does not parse shows as its JSON
            return json_to_string(cell.json)
        if self.style.cell_format == "string":
            return datum_to_string(cell.type, value)
        return datum_to_bare(cell.type, value)

    def print(self, table: Table) -> None:
        fmt = self.style.format
        getattr(self, f"_print_{fmt}")(table)

    def _separate(self, fmt: str, lines: list[str], table: Table) -> None:
        n = self.counts.get(fmt, 0)
        self.counts[fmt] = n + 1
        if n:
            lines.append("")
        if table.timestamp:
            lines.append(timestamp_now())
        if table.caption is not None:
            lines.append(table.caption)

    def _emit(self, lines: list[str]) -> None:
        if lines:
            self.out.write("\n".join(lines) + "\n")

    def _texts(self, table: Table) -> list[list[str]]:
        return [[self.cell_text(c) for c in row] for row in table.rows]

    def _print_table(self, table: Table) -> None:
        lines: list[str] = []
        self._separate("table", lines, table)
        texts = self._texts(table)
        # Headings count toward the widths only when they are shown.
        widths = [_blen(h) if self.style.headings else 0 for h in table.columns]
        for row in texts:
            for x, text in enumerate(row):
                widths[x] = max(widths[x], _blen(text))
        if self.style.headings:
            lines.append(" ".join(_pad(h, w) for h, w in zip(table.columns, widths,
                                                               strict=True)).rstrip(" "))
            lines.append(" ".join("-" * w for w in widths).rstrip(" "))
        for row in texts:
            lines.append(" ".join(_pad(t, w) for t, w in zip(row, widths,
                                                             strict=True)).rstrip(" "))
        self._emit(lines)

    def _print_list(self, table: Table) -> None:
        lines: list[str] = []
        self._separate("list", lines, table)
        for y, row in enumerate(self._texts(table)):
            if y:
                lines.append("")
            for heading, text in zip(table.columns, row, strict=True):
                lines.append(f"{_pad(heading, 20)}: {text}" if self.style.headings else text)
        self._emit(lines)

    def _html_cell(self, element: str, content: str) -> str:
        parts: list[str] = []
        pos = 0
        for m in _UUID_PREFIX_RE.finditer(content):
            parts.append(_html_escape(content[pos:m.start()]))
            u = m.group()
            parts.append(f'<a href="#{u}">{u[:8]}</a>')
            pos = m.end()
        parts.append(_html_escape(content[pos:]))
        return f"    <{element}>{''.join(parts)}</{element}>"

    def _print_html(self, table: Table) -> None:
        lines: list[str] = []
        if table.timestamp:
            lines.append(timestamp_now())
        lines.append("<table border=1>")
        if table.caption is not None:
            lines.append(self._html_cell("caption", table.caption))
        if self.style.headings:
            lines.append("  <tr>")
            lines.extend(self._html_cell("th", h) for h in table.columns)
            lines.append("  </tr>")
        for row in self._texts(table):
            lines.append("  <tr>")
            for heading, text in zip(table.columns, row, strict=True):
                if heading == "_uuid":
                    short = text.encode()[:8].decode(errors="ignore")
                    lines.append(f'    <td><a name="{_html_escape(text)}">'
                                 f"{_html_escape(short)}</a></td>")
                else:
                    lines.append(self._html_cell("td", text))
            lines.append("  </tr>")
        lines.append("</table>")
        self._emit(lines)

    @staticmethod
    def _csv_cell(text: str) -> str:
        if "\n" in text or '"' in text or "," in text:
            return '"' + text.replace('"', '""') + '"'
        return text

    def _print_csv(self, table: Table) -> None:
        lines: list[str] = []
        self._separate("csv", lines, table)
        if self.style.headings:
            lines.append(",".join(self._csv_cell(h) for h in table.columns))
        for row in self._texts(table):
            lines.append(",".join(self._csv_cell(t) for t in row))
        self._emit(lines)

    def _print_json(self, table: Table) -> None:
        obj: dict[str, Any] = {}
        if table.caption is not None:
            obj["caption"] = table.caption
        if table.timestamp:
            obj["time"] = timestamp_now()
        obj["headings"] = list(table.columns)
        data = []
        for row in table.rows:
            cells: list[Any] = []
            for cell in row:
                if cell.text is not None:
                    cells.append(cell.text)
                elif cell.json is not NO_JSON:
                    cells.append(cell.json)
                else:
                    cells.append(None)
            data.append(cells)
        obj["data"] = data
        self.out.write(json_to_string(obj, self.style.pretty) + "\n")
