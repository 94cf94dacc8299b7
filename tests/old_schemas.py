"""An older release's OVN Northbound schema, made from the shipped one, and transactions
that fill a database of it: the starting point of the upgrade tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from procs import NB_SCHEMA

DB = "OVN_Northbound"


def old_nb_schema() -> dict[str, Any]:
    """The shipped NB schema as an older release might have had it: a lower version,
    without the Copp table (and the columns that refer to it), with a column since
    dropped."""
    schema = json.loads(Path(NB_SCHEMA).read_text())
    schema["version"] = "6.3.0"
    del schema["tables"]["Copp"]
    for table in schema["tables"].values():
        for column in [c for c, v in table["columns"].items() if "Copp" in json.dumps(v)]:
            del table["columns"][column]
    schema["tables"]["Logical_Switch"]["columns"]["old_col"] = {
        "type": {"key": "string", "min": 0, "max": 1}}
    return schema


# Several records: inserts with references, an update of a dropped column, a delete.
OLD_NB_TXNS: list[list[Any]] = [
    [DB, {"op": "insert", "table": "NB_Global", "row": {}},
     {"op": "insert", "table": "Logical_Switch", "uuid-name": "s",
      "row": {"name": "sw0", "old_col": "x", "ports": ["named-uuid", "p"]}},
     {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
      "row": {"name": "p0", "addresses": "00:00:00:00:00:01 10.0.0.1"}}],
    [DB, {"op": "insert", "table": "Logical_Switch",
          "row": {"name": "sw1", "external_ids": ["map", [["a", "b"]]]}},
     {"op": "update", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
      "row": {"old_col": "y", "other_config": ["map", [["k", "v"]]]}}],
    [DB, {"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "sw1"]]},
     {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw2"}}],
]
