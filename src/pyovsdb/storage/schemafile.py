"""Schema files on disk: reading a `.ovsschema` file into a `DatabaseSchema`.

Rules kept here:
- `ovsdb` parses schemas but never opens files; this adapter is where a schema file is
  read, so the pure core stays free of I/O.
- `load_schema` (the library's): a file that cannot be read is an "I/O error" naming the
  path and the system's reason, bad JSON a "syntax error" naming the path.
- `read_schema_file` (the command-line tools'): the real tools' words
  (ovsdb_schema_from_file): `failed to read schema: "PATH" could not be read as JSON
  (REASON)`, REASON being the open or read failure or the real JSON parser's message
  (`storage.jsontext`); a schema the JSON does not make is the schema's own error, its
  details prefixed with `failed to parse "PATH" as ovsdb schema: `.
"""

from __future__ import annotations

import os
from typing import Any

from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema, schema_from_text
from . import jsontext


def load_schema(path: str) -> DatabaseSchema:
    """The schema in the file at `path`, or OvsdbError."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OvsdbError("I/O error", f"{path}: {e.strerror}") from None
    return schema_from_text(data, path)


def read_json_file(path: str) -> Any:
    """The JSON object or array in the file at `path` (json_from_file), or OvsdbError
    tagged "failed to read schema" with the real reason."""
    def refuse(reason: str) -> OvsdbError:
        return OvsdbError("failed to read schema",
                          f'"{path}" could not be read as JSON ({reason})')

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise refuse(f'error opening "{path}": {os.strerror(e.errno or 0)}') from None
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read()
    except OSError as e:
        raise refuse(f"error reading JSON stream: {os.strerror(e.errno or 0)}") from None
    try:
        return jsontext.parse(data)
    except jsontext.JsonTextError as e:
        raise refuse(str(e)) from None


def read_schema_file(path: str) -> DatabaseSchema:
    """The schema in the file at `path`, with the errors of the real tools."""
    json = read_json_file(path)
    try:
        schema = DatabaseSchema.from_json(json)
    except OvsdbError as e:
        raise OvsdbError(e.tag, f'failed to parse "{path}" as ovsdb schema: {e.details}',
                         syntax=e.syntax) from None
    schema.json = json
    return schema
