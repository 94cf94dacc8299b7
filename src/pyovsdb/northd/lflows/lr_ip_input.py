"""(Being written.) One area of the logical router pipeline; see the package docstring."""

from __future__ import annotations

from .context import LflowContext
from .table import LflowTable


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
