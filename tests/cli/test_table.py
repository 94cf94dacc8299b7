"""The client's output layer on its own (no real binaries needed): OVS's JSON text, the
text of datums, hash-table order, and the table formats."""

from __future__ import annotations

import io

from pyovsdb.cli.table import (
    Cell,
    Printer,
    Style,
    Table,
    datum_to_bare,
    datum_to_string,
    type_to_json,
)
from pyovsdb.ovsdb.datum import atom_to_string
from pyovsdb.ovsdb.types import ColumnType
from pyovsdb.util.ovsjson import Real, json_to_string, shash_order


def ctype(json: object) -> ColumnType:
    return ColumnType.from_json(json)


def test_json_compact_sorted_and_escaped() -> None:
    value = {"b": [1, 2.5, 1.0, Real(1e17), 1e300, None, True], "a": "q\"\\\x1f\n/é"}
    assert json_to_string(value) == (
        '{"a":"q\\"\\\\\\u001f\\n/é","b":[1,2.5,1,1e+17,1e+300,null,true]}')


def test_json_pretty_layout() -> None:
    assert json_to_string([{}, {"rows": []}, {"k": [1]}], pretty=True) == (
        '[\n  {\n    },\n  {\n    "rows": []},\n  {\n    "k": [\n      1]}]')


def test_atom_quoting() -> None:
    bare = ["a", "a1", "a-b.c_d", "_x"]
    quoted = ["", "1a", "true", "false", "a b", "é", "00000000-0000-0000-0000-000000000001"]
    for s in bare:
        assert atom_to_string("string", s) == s
    for s in quoted:
        assert atom_to_string("string", s) == json_to_string(s)
    assert atom_to_string("real", 0.30000000000000004) == "0.3"
    assert atom_to_string("boolean", False) == "false"


def test_datum_text() -> None:
    strmap = ctype({"key": "string", "value": "string", "min": 0, "max": "unlimited"})
    assert datum_to_string(strmap, (("a", "1"), ("b c", "x"))) == '{a="1", "b c"=x}'
    assert datum_to_string(strmap, ()) == "{}"
    assert datum_to_bare(strmap, (("a", "1"), ("b c", "x"))) == "a=1 b c=x"
    one_pair = ctype({"key": "string", "value": "integer", "min": 0, "max": 1})
    assert datum_to_string(one_pair, (("k", 3),)) == "k=3"
    assert datum_to_string(one_pair, ()) == "{}"
    optional = ctype({"key": "integer", "min": 0, "max": 1})
    assert datum_to_string(optional, (5,)) == "5"
    assert datum_to_string(optional, ()) == "[]"
    intset = ctype({"key": "integer", "min": 0, "max": 3})
    assert datum_to_string(intset, (5,)) == "[5]"
    assert datum_to_string(ctype("string"), "x y") == '"x y"'


def test_type_json_leaves_defaults_out() -> None:
    t = ctype({"key": {"type": "integer", "minInteger": -9223372036854775808,
                       "maxInteger": 10}})
    assert type_to_json(t) == {"key": {"type": "integer", "maxInteger": 10}}
    s = ctype({"key": {"type": "string", "minLength": 0}, "min": 0, "max": 1})
    assert type_to_json(s) == {"key": "string", "min": 0}


def test_shash_order_matches_ovs() -> None:
    # The columns of Logical_Switch_Port in the order the real ovsdb-server 3.1 sent
    # them, and the order in which the real ovsdb-client lists them.
    sent = ["name", "ha_chassis_group", "options", "parent_name", "enabled", "type",
            "dhcpv6_options", "addresses", "tag", "up", "external_ids", "tag_request",
            "port_security", "dynamic_addresses", "dhcpv4_options", "mirror_rules"]
    listed = ["name", "ha_chassis_group", "options", "parent_name", "enabled", "type",
              "dhcpv6_options", "_uuid", "addresses", "tag", "_version", "up",
              "external_ids", "tag_request", "port_security", "mirror_rules",
              "dhcpv4_options", "dynamic_addresses"]
    assert shash_order(["_uuid", "_version", *shash_order(sent)]) == listed


def render(style: Style, *tables: Table) -> str:
    out = io.StringIO()
    printer = Printer(style, out)
    for t in tables:
        printer.print(t)
    return out.getvalue()


def sample() -> Table:
    t = Table(["name", "v"], caption="T table")
    strmap = ctype({"key": "string", "value": "string", "min": 0, "max": "unlimited"})
    t.add_row(Cell(json="a é"), Cell(json=["map", [["k", "x,y"]]], type=strmap))
    t.add_row(Cell(text="b  "), Cell(json=["set", [1, 1]], type=strmap))  # not a map
    return t


def test_table_format() -> None:
    text = render(Style(), sample(), Table(["x"]))
    # Widths count bytes; trailing spaces go.
    assert text == ('T table\n'
                    'name   v\n'
                    '------ -------------\n'
                    '"a é" {k="x,y"}\n'
                    'b      ["set",[1,1]]\n'
                    '\n'
                    'x\n'
                    '-\n')


def test_other_formats() -> None:
    assert render(Style(format="csv"), sample()) == (
        'T table\nname,v\n"""a é""","{k=""x,y""}"\nb  ,"[""set"",[1,1]]"\n')
    assert render(Style(format="list", headings=False, cell_format="bare"), sample()) == (
        'T table\n"a é"\nk=x,y\n\nb  \n["set",[1,1]]\n')
    assert render(Style(format="json"), sample()) == (
        '{"caption":"T table","data":[["a é",["map",[["k","x,y"]]]],["b  ",["set",[1,1]]]],'
        '"headings":["name","v"]}\n')
    html = render(Style(format="html"), Table(["_uuid", "r"], rows=[[
        Cell(text="01234567-89ab-cdef-0123-456789abcdef"),
        Cell(text="<[01234567-89ab-cdef-0123-456789abcdef]>")]]))
    assert html == (
        '<table border=1>\n  <tr>\n    <th>_uuid</th>\n    <th>r</th>\n  </tr>\n  <tr>\n'
        '    <td><a name="01234567-89ab-cdef-0123-456789abcdef">01234567</a></td>\n'
        '    <td>&lt;[<a href="#01234567-89ab-cdef-0123-456789abcdef">01234567</a>]&gt;'
        '</td>\n  </tr>\n</table>\n')
