"""northd's engine nodes, one per module (OVN's `en-*.c`); `graph.py` wires them.

Every node reads only the inputs it declares (tables through `tables.declared`), and
does its incremental work in change handlers.
"""
