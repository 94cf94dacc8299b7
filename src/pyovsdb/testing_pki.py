"""Throwaway certificate authorities for tests and benchmarks, made with the
`openssl` command line (as `ovs-pki` does, with EC keys: much faster to make than RSA
ones): a CA, and certificates it signs whose subject CN is a given name (RBAC's client
id)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Cert:
    key: str
    cert: str
    ca: str  # the CA certificate that signed it

    def options(self) -> list[str]:
        """The three PKI options of the OVS tools (`-p`, `-c`, `-C`)."""
        return [f"--private-key={self.key}", f"--certificate={self.cert}",
                f"--ca-cert={self.ca}"]


class Authority:
    def __init__(self, directory: Path, name: str = "ca") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self.key = str(directory / f"{name}-key.pem")
        self.cert = str(directory / f"{name}-cert.pem")
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-keyout", self.key, "-out", self.cert, "-days", "30",
                 "-subj", f"/O=pyovsdb tests/CN={name}")

    def issue(self, cn: str, days: int = 30) -> Cert:
        """A key and a certificate for `cn`, signed by this authority (`days` < 0: one
        that expired that many days ago)."""
        key, csr = str(self.dir / f"{cn}-key.pem"), str(self.dir / f"{cn}-req.pem")
        cert = str(self.dir / f"{cn}-cert.pem")
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", key, "-out", csr, "-subj", f"/O=pyovsdb tests/CN={cn}")
        if days >= 0:
            _openssl("x509", "-req", "-in", csr, "-CA", self.cert, "-CAkey", self.key,
                     "-CAcreateserial", "-out", cert, "-days", str(days))
        else:  # (`x509` sets no dates in the past before OpenSSL 3.4: `ca` does)
            conf = self.dir / "ca.cnf"
            (self.dir / "index.txt").write_text("")
            (self.dir / "serial").write_text("01\n")
            conf.write_text(f"""[ca]
default_ca = here
[here]
database = {self.dir}/index.txt
new_certs_dir = {self.dir}
serial = {self.dir}/serial
default_md = sha256
policy = any
[any]
commonName = supplied
""")
            _openssl("ca", "-batch", "-config", str(conf), "-cert", self.cert, "-keyfile",
                     self.key, "-in", csr, "-out", cert, "-notext",
                     "-startdate", "20240101000000Z", "-enddate", "20250101000000Z")
        return Cert(key, cert, self.cert)
