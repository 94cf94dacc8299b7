"""The metrics endpoint: `--metrics=ptcp:PORT[:IP]`, a registry's text over HTTP.

Rules kept here:
- `GET /metrics` (or `/`) answers the registry's exposition: OpenMetrics when the
  request's `Accept` asks for it (Prometheus does), the classic text format otherwise;
  `HEAD` the same headers. Other methods get 405, other paths 404, a request that is
  not HTTP 400, a render that fails 500 (and a log line); every answer closes the
  connection.
- A peer cannot make the process hold more than `MAX_REQUEST` bytes or wait on it for
  more than `READ_TIMEOUT` seconds: a longer or slower request is answered 400 or
  dropped; beyond `MAX_CONNECTIONS` open at once, new ones are closed unanswered.
- A scrape renders on the event loop, as an `ovs-appctl` command runs.
- `ptcp:PORT[:IP]` as OVS spells passive TCP remotes (IP defaults to every IPv4
  address; an IPv6 address in brackets); port 0 takes an ephemeral port, which the
  log line names.
"""

from __future__ import annotations

import asyncio
import logging

from .daemon import Fatal
from .metrics import OPENMETRICS_TYPE, TEXT_TYPE, Registry, wants_openmetrics

log = logging.getLogger("metrics")

MAX_REQUEST = 8192
READ_TIMEOUT = 10.0
MAX_CONNECTIONS = 64  # at once; more are closed unanswered


class MetricsTargetError(ValueError):
    pass


def parse_target(target: str) -> tuple[str, int]:
    """`ptcp:PORT[:IP]` -> (host, port)."""
    kind, _, rest = target.partition(":")
    if kind != "ptcp" or not rest:
        raise MetricsTargetError(f"{target}: the metrics endpoint takes ptcp:PORT[:IP]")
    port_s, _, host = rest.partition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_s)
    except ValueError:
        raise MetricsTargetError(f"{target}: bad port {port_s!r}") from None
    if not 0 <= port <= 65535:
        raise MetricsTargetError(f"{target}: bad port {port}")
    return host or "0.0.0.0", port


def option_problem(target: str | None) -> str | None:
    """What is wrong with a `--metrics` option's target, as the command says it (None:
    nothing, or no option)."""
    if target is None:
        return None
    try:
        parse_target(target)
    except MetricsTargetError as e:
        return f"--metrics={e}"
    return None


async def start_endpoint(registry: Registry, target: str) -> MetricsServer:
    """The endpoint of `--metrics=TARGET`, listening; a daemon's fatal error, naming
    the option, if it cannot listen (a port in use, say)."""
    endpoint = MetricsServer(registry, target)
    try:
        await endpoint.start()
    except OSError as e:
        raise Fatal(f"--metrics={target}: {e.strerror or e}") from None
    return endpoint


class MetricsServer:
    """The listening endpoint of one registry."""

    def __init__(self, registry: Registry, target: str) -> None:
        self.registry = registry
        self.host, self.port = parse_target(target)
        self._server: asyncio.Server | None = None
        self.scrapes = 0
        self.open = 0

    async def start(self) -> tuple[str, int]:
        """Listen; the address bound (the port the system chose for port 0)."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port,
                                                  limit=MAX_REQUEST)
        sock = self._server.sockets[0]
        host, port = sock.getsockname()[:2]
        log.info("listening on http://%s/metrics",
                 f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        return host, port

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        if self.open >= MAX_CONNECTIONS:
            writer.close()
            return
        self.open += 1
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
            except asyncio.LimitOverrunError:
                await self._answer(writer, 400, "request too large\n")
                return
            except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                return
            await self._request(writer, head)
        finally:
            self.open -= 1
            writer.close()

    async def _request(self, writer: asyncio.StreamWriter, head: bytes) -> None:
        try:
            lines = head.decode("latin-1").split("\r\n")
            method, path, version = lines[0].split(" ")
        except ValueError:
            await self._answer(writer, 400, "bad request\n")
            return
        if not version.startswith("HTTP/1."):
            await self._answer(writer, 400, "bad request\n")
            return
        if method not in ("GET", "HEAD"):
            await self._answer(writer, 405, "method not allowed\n", allow="GET, HEAD")
            return
        if path.split("?")[0] not in ("/metrics", "/"):
            await self._answer(writer, 404, "not found: try /metrics\n")
            return
        accept = ""
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "accept":
                accept = value.strip()
        openmetrics = wants_openmetrics(accept)
        try:
            body = self.registry.render(openmetrics)
        except Exception:  # (a collector's bug: answered, logged, the process goes on)
            log.exception("rendering the metrics failed")
            await self._answer(writer, 500, "internal error\n")
            return
        self.scrapes += 1
        await self._answer(writer, 200, body, head_only=method == "HEAD",
                           content_type=OPENMETRICS_TYPE if openmetrics else TEXT_TYPE)

    async def _answer(self, writer: asyncio.StreamWriter, status: int, body: str, *,
                      head_only: bool = False, content_type: str = "text/plain",
                      allow: str | None = None) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found",
                  405: "Method Not Allowed", 500: "Internal Server Error"}[status]
        data = body.encode()
        headers = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}",
                   f"Content-Length: {len(data)}", "Connection: close"]
        if allow is not None:
            headers.append(f"Allow: {allow}")
        writer.write(("\r\n".join(headers) + "\r\n\r\n").encode())
        if not head_only:
            writer.write(data)
        try:
            await writer.drain()
        except ConnectionError:
            pass
