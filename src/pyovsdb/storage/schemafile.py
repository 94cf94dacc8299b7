"""Schema files on disk: reading a `.ovsschema` file into a `DatabaseSchema`.

Rules kept here:
- `ovsdb` parses schemas but never opens files; this adapter is where a schema file is
  read, so the pure core stays free of I/O.
- Errors are the real tools' words: a file that cannot be read is an "I/O error"
  naming the path and the system's reason, bad JSON a "syntax error" naming the path.
"""

from __future__ import annotations

from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema, schema_from_text


def load_schema(path: str) -> DatabaseSchema:
    """The schema in the file at `path`, or OvsdbError."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OvsdbError("I/O error", f"{path}: {e.strerror}") from None
    return schema_from_text(data, path)
