"""The process name (/proc/PID/comm) that `pidof`, `killall`, `ps -C` and the real
init scripts look for.

Rules kept here:
- `pyovsdb server` names itself `ovsdb-server`, as the program it replaces; its
  `--monitor` supervisor names itself `monitor`, as the real one does. The command
  line (/proc/PID/cmdline) is left as it was.
- The name is set with prctl(PR_SET_NAME), else by writing /proc/self/comm; the kernel
  keeps at most 15 bytes. Failing to set it is not an error: nothing depends on it to
  serve.
"""

from __future__ import annotations

import ctypes
import ctypes.util

PR_SET_NAME = 15


def set_name(name: str) -> bool:
    raw = name.encode()[:15]
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(PR_SET_NAME, ctypes.c_char_p(raw), 0, 0, 0) == 0:
            return True
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/comm", "wb") as f:
            f.write(raw)
        return True
    except OSError:
        return False


def get_name() -> str:
    try:
        with open("/proc/self/comm") as f:
            return f.read().strip()
    except OSError:
        return ""
