"""The server configuration that survives a `--monitor` restart: the remotes and the
database files, with the changes made at run time by `ovsdb-server/add-remote`,
`remove-remote`, `add-db` and `remove-db`.

Rules kept here:
- As in ovsdb-server.c, it lives in an unnamed temporary file created before the
  daemon forks; the supervisor and every daemon it forks share the one open file, so a
  restarted daemon reads what its crashed predecessor last wrote. Nothing is left on
  disk.
- The content is one JSON object {"remotes": [...], "db_filenames": [...]} (the real
  server's names), rewritten whole from offset 0 on every change: positioned reads and
  writes, because the processes share the file offset.
- Remotes are kept in the order they were given, each once; removing one that is not
  there changes nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field


@dataclass
class RestartConfig:
    remotes: list[str] = field(default_factory=list)
    db_filenames: list[str] = field(default_factory=list)
    fd: int = -1

    @classmethod
    def create(cls, remotes: list[str], db_filenames: list[str]) -> RestartConfig:
        fd = tempfile.TemporaryFile()  # noqa: SIM115  (kept open for the process's life)
        cfg = cls(list(dict.fromkeys(remotes)), list(dict.fromkeys(db_filenames)),
                  os.dup(fd.fileno()))
        fd.close()
        cfg.save()
        return cfg

    def save(self) -> None:
        data = json.dumps({"remotes": self.remotes,
                           "db_filenames": self.db_filenames}).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def load(self) -> None:
        size = os.fstat(self.fd).st_size
        obj = json.loads(os.pread(self.fd, size, 0) or b"{}")
        self.remotes = [str(r) for r in obj.get("remotes", [])]
        self.db_filenames = [str(d) for d in obj.get("db_filenames", [])]

    def add_remote(self, remote: str) -> None:
        if remote not in self.remotes:
            self.remotes.append(remote)
            self.save()

    def remove_remote(self, remote: str) -> None:
        if remote in self.remotes:
            self.remotes.remove(remote)
            self.save()

    def set_dbs(self, paths: list[str]) -> None:
        if paths != self.db_filenames:
            self.db_filenames = list(paths)
            self.save()
