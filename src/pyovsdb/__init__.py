"""pyovsdb: the OVSDB/OVN control plane in Python, wire-compatible with Open vSwitch."""

__version__ = "0.1.0"
