"""TLS for OVSDB streams, as OVS 3.1's `lib/stream-ssl.c` sets it up.

Rules kept here:
- A TLS stream needs a private key, a certificate and a CA certificate. A missing one
  is logged with the real texts ("Private key must be configured to use SSL", ...) each
  time a stream is opened, and that stream fails. A listener opens regardless, as
  `pssl_open` does, and a connection made while the configuration is incomplete fails
  alone.
- Peers are verified in both directions: a server asks for the client's certificate
  and refuses a client without one signed by its CA (`SSL_VERIFY_PEER |
  SSL_VERIFY_FAIL_IF_NO_PEER_CERT`). A CA certificate named `none` turns verification
  off, with the real warning.
- `--ssl-protocols` is a comma- or space-separated list of `TLSv1`, `TLSv1.1`, `TLSv1.2`
  (case-insensitive). The default list leaves the versions to OpenSSL (TLS 1.3
  included), as 3.1 does; any other list allows exactly what it names (TLS 1.3 off). An
  unknown name is logged ("%s: SSL protocol not recognized") and the default is used.
  `--ssl-ciphers` is an OpenSSL cipher list, by default `HIGH:!aNULL:!MD5`.
- `--peer-ca-cert` is sent after our certificate, for peers that bootstrap their CA
  certificate from it. A client with `--bootstrap-ca-cert=FILE` and no FILE yet
  connects without verifying, saves the peer's CA certificate to FILE, and retries
  verified (`after_handshake`), as `do_ca_cert_bootstrap` does.
- A peer's identity is its certificate's subject common name (RBAC's client id).
- The files are read again when a name or a file's modification time changes, checked
  each time a context is asked for: a certificate renewed on disk is used by the next
  connection, as the real server re-reads its PKI files.
"""

from __future__ import annotations

import _ssl as _ssl_module  # (OpenSSL's error codes, to word errors as it does)
import asyncio
import errno
import hashlib
import logging
import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("stream_ssl")
server_log = logging.getLogger("ovsdb_jsonrpc_server")
rpc_log = logging.getLogger("jsonrpc")
reconnect_log = logging.getLogger("reconnect")

DEFAULT_PROTOCOLS = "TLSv1,TLSv1.1,TLSv1.2"
DEFAULT_CIPHERS = "HIGH:!aNULL:!MD5"
_VERSIONS = {"tlsv1": ssl.TLSVersion.TLSv1, "tlsv1.1": ssl.TLSVersion.TLSv1_1,
             "tlsv1.2": ssl.TLSVersion.TLSv1_2}


@dataclass(frozen=True)
class PkiFiles:
    """The PKI options, resolved to file names (or None where not configured)."""

    private_key: str | None = None
    certificate: str | None = None
    ca_cert: str | None = None
    protocols: str | None = None
    ciphers: str | None = None
    peer_ca_cert: str | None = None  # a CA certificate sent along with ours
    bootstrap: bool = False  # `ca_cert` came from --bootstrap-ca-cert


def _stamp(path: str | None) -> tuple[str | None, float | None]:
    if path is None:
        return None, None
    try:
        return path, os.stat(path).st_mtime
    except OSError:
        return path, None


def protocol_range(text: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion] | None:
    """The (minimum, maximum) TLS version `--ssl-protocols` allows; None for no limit
    (the default list, which 3.1 leaves to OpenSSL, TLS 1.3 included), or, logged, for
    a name not recognized. Any other list allows exactly what it names: 3.1 starts from
    OpenSSL's mask of every protocol, so TLS 1.3 is off then."""
    if text == DEFAULT_PROTOCOLS:
        return None
    words = [w for w in text.replace(",", " ").replace("\t", " ").split() if w]
    if not words:
        log.error("SSL protocol settings invalid")
        return None
    chosen = []
    for word in words:
        version = _VERSIONS.get(word.lower())
        if version is None:
            log.error("%s: SSL protocol not recognized", word)
            return None
        chosen.append(version)
    return min(chosen), max(chosen)


def peer_common_name(cert: Any) -> str | None:
    """The subject CN of a certificate as `SSLSocket.getpeercert()` returns it."""
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


class TlsContexts:
    """Contexts made from `PkiFiles`, made again only when the files change."""

    def __init__(self) -> None:
        self._made: dict[tuple[bool, Any], ssl.SSLContext] = {}

    def context(self, pki: PkiFiles, server_side: bool) -> ssl.SSLContext | None:
        """A context for one stream, or None (its problems logged) if `pki` is
        incomplete or its files cannot be used."""
        missing = False
        if pki.private_key is None:
            log.error("Private key must be configured to use SSL")
            missing = True
        if pki.certificate is None:
            log.error("Certificate must be configured to use SSL")
            missing = True
        if pki.ca_cert is None:
            log.error("CA certificate must be configured to use SSL")
            missing = True
        if missing:
            return None
        key = (server_side, (_stamp(pki.private_key), _stamp(pki.certificate),
                             _stamp(pki.ca_cert), pki.protocols, pki.ciphers,
                             _stamp(pki.peer_ca_cert)))
        ctx = self._made.get(key)
        if ctx is None:
            ctx = self._make(pki, server_side)
            if ctx is None:
                return None
            self._made = {k: v for k, v in self._made.items() if k[0] != server_side}
            self._made[key] = ctx
        return ctx

    @staticmethod
    def _make(pki: PkiFiles, server_side: bool) -> ssl.SSLContext | None:
        assert pki.private_key and pki.certificate and pki.ca_cert
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server_side
                             else ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False  # (OVS checks the CA's signature, not names)
        versions = protocol_range(pki.protocols or DEFAULT_PROTOCOLS)
        if versions is not None:
            try:
                ctx.minimum_version, ctx.maximum_version = versions
            except (ValueError, ssl.SSLError):
                pass  # (this OpenSSL refuses so old a minimum: its own stays)
        try:
            ctx.set_ciphers(pki.ciphers or DEFAULT_CIPHERS)
        except ssl.SSLError as e:
            log.error("SSL_CTX_set_cipher_list: %s", _reason(e))
        try:
            _load_chain(ctx, pki)
        except (OSError, ssl.SSLError) as e:
            log.error("SSL_use_certificate_file: %s", _reason(e))
            return None
        if pki.ca_cert == "none":
            log.warning("Peer certificate validation disabled (this is a security risk)")
            ctx.verify_mode = ssl.CERT_NONE
            return ctx
        if pki.bootstrap and not server_side and not os.path.exists(pki.ca_cert):
            # (no CA certificate yet: the first peer's is saved, `after_handshake`)
            ctx.verify_mode = ssl.CERT_NONE
            ctx.bootstrap_file = pki.ca_cert  # type: ignore[attr-defined]
            return ctx
        try:
            ctx.load_verify_locations(pki.ca_cert)
        except (OSError, ssl.SSLError) as e:
            log.error("SSL_CTX_load_verify_locations: %s", _reason(e))
            return None
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


def _load_chain(ctx: ssl.SSLContext, pki: PkiFiles) -> None:
    """Our key and certificate, and `--peer-ca-cert` (if any) sent after the
    certificate, so that a peer without our CA's certificate can bootstrap it."""
    assert pki.certificate and pki.private_key
    if not pki.peer_ca_cert:
        ctx.load_cert_chain(pki.certificate, pki.private_key)
        return
    with open(pki.certificate, "rb") as f:
        chain = f.read().rstrip(b"\n") + b"\n"
    with open(pki.peer_ca_cert, "rb") as f:
        chain += f.read()
    with tempfile.NamedTemporaryFile(suffix=".pem") as combined:  # (read at once)
        combined.write(chain)
        combined.flush()
        ctx.load_cert_chain(combined.name, pki.private_key)


_LIBRARIES = {"SSL": "SSL routines", "X509": "x509 certificate routines",
              "PEM": "PEM routines", "SYS": "system library"}


def _reason(e: BaseException) -> str:
    """An error as OpenSSL's `ERR_error_string` words it
    (`error:0A000086:SSL routines::certificate verify failed`), or a system error's
    text."""
    if isinstance(e, ssl.SSLError) and e.reason:
        text = str(e.reason).lower().replace("_", " ")
        codes = getattr(_ssl_module, "err_names_to_codes", {}).get(e.reason)
        if codes is None:
            return text
        lib, reason = codes
        library = _LIBRARIES.get(str(e.library), f"{str(e.library).lower()} routines")
        return f"error:{(lib << 23) | reason:08X}:{library}::{text}"
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e)


def failure_text(e: BaseException) -> str:
    """What a failed handshake is logged with after "SSL_accept: " (or
    "SSL_connect: "), as `interpret_ssl_error` words it."""
    if isinstance(e, ssl.SSLError) and e.reason:
        return _reason(e)
    if isinstance(e, OSError) and e.strerror:
        return f"system error ({e.strerror})"
    return str(e) or "unexpected SSL connection close"


HANDSHAKE_TIMEOUT = 60.0  # s: a peer that never finishes its handshake is dropped


class TlsAcceptor(asyncio.Protocol):
    """An accepted TCP connection whose TLS handshake is made before the stream's own
    protocol (`make()`) sees it: the context is asked for at accept time (`context()`,
    None refuses the connection, its reasons already logged). The peer's first bytes are
    read here, so that a failed handshake is logged as `SSL_accept` failures are, with
    what the peer spoke if it was not TLS (`stream_report_content`), and are then handed
    to the TLS layer. The protocol is started on the TLS transport, named
    `ssl:IP:PORT`. A peer that sends nothing is dropped after `HANDSHAKE_TIMEOUT`."""

    def __init__(self, make: Callable[[], asyncio.BaseProtocol],
                 context: Callable[[], ssl.SSLContext | None], listener: str) -> None:
        self.make = make
        self.context = context
        self.listener = listener  # `pssl:PORT:IP`, as the accept failure names it
        self.task: asyncio.Task[None] | None = None
        self.transport: asyncio.Transport | None = None
        self.ctx: ssl.SSLContext | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        ctx = self.context()
        if ctx is None:
            server_log.warning("%s: accept failed: Protocol not available", self.listener)
            transport.abort()
            return
        self.transport, self.ctx = transport, ctx
        self._timer = asyncio.get_running_loop().call_later(HANDSHAKE_TIMEOUT,
                                                            transport.abort)

    def data_received(self, data: bytes) -> None:
        transport, ctx = self.transport, self.ctx
        if transport is None or ctx is None or self.task is not None:
            return
        transport.pause_reading()  # (the TLS layer reads from now on)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.task = asyncio.get_running_loop().create_task(
            self._handshake(transport, ctx, data))

    def eof_received(self) -> bool | None:
        return None  # (closed before a byte: nothing to log)

    async def _handshake(self, transport: asyncio.Transport, ctx: ssl.SSLContext,
                         first: bytes) -> None:
        app = self.make()
        early = _Early()
        loop = asyncio.get_running_loop()
        started = asyncio.ensure_future(loop.start_tls(
            transport, early, ctx, server_side=True, ssl_handshake_timeout=HANDSHAKE_TIMEOUT))
        # (runs once start_tls has made the TLS layer the transport's protocol, before
        # it starts the handshake: the bytes read here go in first)
        loop.call_soon(_feed, transport, first)
        try:
            secure = await started
        except (TimeoutError, OSError, ssl.SSLError) as e:
            name = ssl_peer_name(transport)
            log.warning("SSL_accept: %s", failure_text(e))
            spoke = _content(first)
            if spoke is not None:
                log.warning("%s: received %s data on SSL channel", name, spoke)
            rpc_log.warning("%s: receive error: Protocol error", name)
            reconnect_log.warning("%s: connection dropped (Protocol error)", name)
            transport.abort()
            return
        if secure is None:  # (the connection went meanwhile)
            transport.abort()
            return
        if not getattr(app, "name", "x"):
            app.name = ssl_peer_name(transport)  # type: ignore[attr-defined]
        app.connection_made(secure)
        secure.set_protocol(app)
        early.hand_over(app)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _feed(transport: asyncio.Transport, data: bytes) -> None:
    """`data`, read before the handshake began, given to the transport's protocol now
    (the TLS layer) as if it had just been read."""
    _deliver(transport.get_protocol(), data)


def _deliver(proto: asyncio.BaseProtocol, data: bytes) -> None:
    """`data` given to `proto` as if its transport had just read it (a buffered
    protocol in as many reads as its buffer asks for)."""
    if isinstance(proto, asyncio.BufferedProtocol):
        while data:
            view = memoryview(proto.get_buffer(len(data)))
            n = min(len(view), len(data))
            view[:n] = data[:n]
            proto.buffer_updated(n)
            data = data[n:]
    elif isinstance(proto, asyncio.Protocol):
        proto.data_received(data)


def _content(data: bytes) -> str | None:
    """What a peer spoke, if not TLS, as `stream_guess_content` guesses it."""
    head = data[:2]
    if head == b'{"':
        return "JSON-RPC"
    if head == b"\x01\x00":
        return "OpenFlow"
    return None


class _Early(asyncio.BufferedProtocol):
    """The protocol of a TLS stream until its own is started on it: what arrives with
    the end of the handshake, before `start_tls` returns, is kept for it."""

    def __init__(self) -> None:
        self.buffer = bytearray(16384)
        self.kept: list[bytes] = []
        self.eof = False

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self.buffer)

    def buffer_updated(self, nbytes: int) -> None:
        self.kept.append(bytes(self.buffer[:nbytes]))

    def eof_received(self) -> bool | None:
        self.eof = True
        return None

    def hand_over(self, app: asyncio.BaseProtocol) -> None:
        """What was kept, given to `app` (now the stream's protocol)."""
        for data in self.kept:
            _deliver(app, data)
        self.kept.clear()
        if self.eof and isinstance(app, (asyncio.Protocol, asyncio.BufferedProtocol)):
            app.eof_received()


_SHORT_NAMES = {"countryName": "C", "stateOrProvinceName": "ST", "localityName": "L",
                "organizationName": "O", "organizationalUnitName": "OU",
                "commonName": "CN"}


def after_handshake(ssl_object: Any, ctx: ssl.SSLContext | None) -> None:
    """A client's TLS stream just connected with `ctx`: in bootstrap mode (no CA
    certificate file yet, `--bootstrap-ca-cert`), the peer's CA certificate (the last
    of the chain it sent, which must be self-signed) is saved to that file, logged as
    `do_ca_cert_bootstrap` logs it, and the connection is refused (EPROTO) so that the
    next one is verified against it."""
    path = getattr(ctx, "bootstrap_file", None)
    if path is None or ssl_object is None:
        return
    inner = getattr(ssl_object, "_sslobj", ssl_object)
    chain = inner.get_unverified_chain() if hasattr(inner, "get_unverified_chain") else None
    if not chain:
        log.error("could not bootstrap CA cert: no certificate presented by peer")
        raise OSError(errno.EPROTO, os.strerror(errno.EPROTO))
    cert = chain[-1]
    info = cert.get_info()
    if info.get("subject") != info.get("issuer"):
        log.error("could not bootstrap CA cert: obtained certificate is not self-signed")
        if len(chain) < 2:
            log.error("only one certificate was received, so probably the peer is not "
                      "configured to send its CA certificate")
        raise OSError(errno.EPROTO, os.strerror(errno.EPROTO))
    pem = cert.public_bytes(_ssl_module.ENCODING_PEM)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o444)
    except OSError as e:
        log.error("could not bootstrap CA cert: creating %s failed: %s", path, e.strerror)
        raise OSError(errno.EPROTO, os.strerror(errno.EPROTO)) from None
    with os.fdopen(fd, "w") as f:
        f.write(pem if isinstance(pem, str) else pem.decode())
    der = ssl.PEM_cert_to_DER_cert(pem if isinstance(pem, str) else pem.decode())
    subject = "".join(f"/{_SHORT_NAMES.get(k, k)}={v}" for rdn in info.get("subject", ())
                      for k, v in rdn)
    fingerprint = ":".join(f"{b:02x}" for b in hashlib.sha1(der).digest())
    log.info("successfully bootstrapped CA cert to %s", path)
    log.info("Trusting CA cert from %s (%s) (fingerprint %s)", path, subject, fingerprint)
    log.info("killing successful connection to retry using CA cert")
    raise OSError(errno.EPROTO, os.strerror(errno.EPROTO))


def ssl_peer_name(transport: asyncio.BaseTransport) -> str:
    """`ssl:IP:PORT` of a TLS stream's peer, as the real server names it."""
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = f"[{peer[0]}]" if ":" in str(peer[0]) else peer[0]
        return f"ssl:{host}:{peer[1]}"
    return "ssl:"


# The PKI of this process's outgoing `ssl:` streams, as OVS keeps it per process
# (`stream_ssl_set_key_and_cert` and the rest): the tools set it from their options.
_client = PkiFiles()
_client_contexts = TlsContexts()


def set_client_pki(pki: PkiFiles) -> None:
    global _client
    _client = pki


def client_context() -> ssl.SSLContext | None:
    """The context of an outgoing `ssl:` stream opened now (None: not configured, the
    reasons logged)."""
    return _client_contexts.context(_client, server_side=False)


def ssl_address(remote: str) -> tuple[str, int]:
    """(host, port) of `ssl:HOST:PORT` (an IPv6 host in brackets)."""
    host, _, port = remote.partition(":")[2].rpartition(":")
    return host.strip("[]"), int(port)
