#!/usr/bin/env python3
"""Forwarders from the real node's pod network to services that listen on the host's 127.0.0.1 only.

Pods reach the host through the node bridge's gateway address; the API server, the AWS emulator and
OpenBao listen on 127.0.0.1, which inside a pod is the pod's own loopback. One process serves every
forwarder given on the command line:

  --tcp  LISTEN_IP:PORT=UPSTREAM_IP:PORT   byte-for-byte relay (TLS passes through untouched: the API server)
  --http LISTEN_IP:PORT=UPSTREAM_IP:PORT   HTTP/1.1 relay that sets `X-Forwarded-For: <client IP>` on every
                                           request of a keep-alive connection (the AWS emulator records it,
                                           so a test can tell which pod made each AWS call)

The HTTP relay replaces any X-Forwarded-For the client sent: the header names the pod that connected, not a
chain a client could make up. Only the request side is parsed (head, then a Content-Length or chunked body);
responses are relayed as bytes. An Upgrade or CONNECT request turns the connection into a plain relay.

Each accepted connection is logged (`accept tcp 10.244.0.7:41234 -> 127.0.0.1:16443`), so a test can prove a
pod's connection went through a forwarder. SIGTERM closes the listeners and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time

HEAD_LIMIT = 64 * 1024
CHUNK = 64 * 1024


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def parse_pair(spec: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """`IP:PORT=IP:PORT` -> ((ip, port), (ip, port)), with a message naming the bad part."""
    try:
        listen, upstream = spec.split("=", 1)
        out = []
        for part in (listen, upstream):
            host, port = part.rsplit(":", 1)
            out.append((host, int(port)))
        return out[0], out[1]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"forwarder {spec!r}: expected LISTEN_IP:PORT=UPSTREAM_IP:PORT, e.g. 10.244.0.1:4566=127.0.0.1:4566"
        ) from None


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
    """Copies until EOF, then half-closes the far side; returns the bytes copied."""
    n = 0
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            n += len(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()  # the other direction sees EOF and ends too
    return n


class BadRequest(Exception):
    pass


def rewrite_head(head: bytes, client_ip: str) -> tuple[bytes, int | None, bool, bool]:
    """The request head with X-Forwarded-For set to `client_ip`; (head, content length, chunked, raw after).

    `raw after`: an Upgrade or CONNECT request, after which the connection is relayed as bytes."""
    lines = head.split(b"\r\n")
    request_line, headers = lines[0], [h for h in lines[1:] if h]
    parts = request_line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
        raise BadRequest(f"not an HTTP/1.x request line: {request_line[:80]!r}")
    kept, length, chunked, upgrade = [], None, False, parts[0] == b"CONNECT"
    for h in headers:
        name, sep, value = h.partition(b":")
        if not sep:
            raise BadRequest(f"header line without a colon: {h[:80]!r}")
        key = name.strip().lower()
        if key == b"x-forwarded-for":
            continue
        if key == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise BadRequest(f"Content-Length {value.strip()[:20]!r} is not a number") from None
        elif key == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        elif key == b"upgrade":
            upgrade = True
        kept.append(h)
    kept.append(b"X-Forwarded-For: " + client_ip.encode())
    return b"\r\n".join([request_line, *kept]) + b"\r\n\r\n", length, chunked, upgrade


async def copy_exact(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    while n > 0:
        data = await reader.read(min(n, CHUNK))
        if not data:
            raise asyncio.IncompleteReadError(b"", n)
        writer.write(data)
        n -= len(data)
        await writer.drain()


async def copy_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Relays a chunked body verbatim: size lines, data, the last chunk and the trailers."""
    while True:
        size_line = await reader.readuntil(b"\r\n")
        writer.write(size_line)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BadRequest(f"bad chunk size line {size_line[:40]!r}") from None
        if size == 0:
            while True:  # trailers, up to the empty line
                line = await reader.readuntil(b"\r\n")
                writer.write(line)
                if line == b"\r\n":
                    await writer.drain()
                    return
        await copy_exact(reader, writer, size + 2)  # data and its CRLF


async def http_requests(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_ip: str) -> int:
    """Relays the client's requests one by one with X-Forwarded-For set; returns the request count."""
    count = 0
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as e:
                if e.partial:
                    log(f"http {client_ip}: connection closed inside a request head ({len(e.partial)} bytes)")
                break
            head, length, chunked, raw_after = rewrite_head(head, client_ip)
            writer.write(head)
            count += 1
            if chunked:
                await copy_chunked(reader, writer)
            elif length:
                await copy_exact(reader, writer, length)
            await writer.drain()
            if raw_after:
                await pipe(reader, writer)
                return count
        if writer.can_write_eof():
            writer.write_eof()
    except asyncio.LimitOverrunError:
        log(f"http {client_ip}: request head larger than {HEAD_LIMIT} bytes: connection closed")
        writer.close()
    except BadRequest as e:
        log(f"http {client_ip}: {e}: connection closed")
        writer.close()
    except (ConnectionError, OSError, asyncio.IncompleteReadError):
        writer.close()
    return count


CONNECTIONS: set[asyncio.Task] = set()


def handler(kind: str, upstream: tuple[str, int]):
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        CONNECTIONS.add(task)
        try:
            await relay(reader, writer)
        except asyncio.CancelledError:
            writer.close()  # shutting down
        finally:
            CONNECTIONS.discard(task)

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        client = f"{peer[0]}:{peer[1]}"
        log(f"accept {kind} {client} -> {upstream[0]}:{upstream[1]}")
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream, limit=HEAD_LIMIT)
        except OSError as e:
            log(f"{kind} {client}: upstream {upstream[0]}:{upstream[1]} refused: {e}")
            writer.close()
            return
        if kind == "http":
            sent = asyncio.create_task(http_requests(reader, up_writer, str(peer[0])))
        else:
            sent = asyncio.create_task(pipe(reader, up_writer))
        try:
            received = await pipe(up_reader, writer)
        finally:
            # The upstream closed (or we are stopping): the client gets no more answers, its side is done too.
            sent.cancel()
        try:
            detail = await sent
            detail = f"{detail} requests" if kind == "http" else f"{detail} bytes up"
        except asyncio.CancelledError:
            detail = "upstream closed first"
        for w in (writer, up_writer):
            w.close()
        log(f"close {kind} {client}: {detail}, {received} bytes down")

    return handle


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcp", action="append", default=[], type=parse_pair, metavar="LISTEN=UPSTREAM")
    ap.add_argument("--http", action="append", default=[], type=parse_pair, metavar="LISTEN=UPSTREAM")
    args = ap.parse_args()
    if not args.tcp and not args.http:
        ap.error("give at least one --tcp or --http forwarder")
    servers = []
    for kind, pairs in (("tcp", args.tcp), ("http", args.http)):
        for listen, upstream in pairs:
            try:
                srv = await asyncio.start_server(handler(kind, upstream), *listen, limit=HEAD_LIMIT)
            except OSError as e:
                print(f"forward.py: cannot listen on {listen[0]}:{listen[1]} ({kind} -> {upstream[0]}:{upstream[1]}): {e}",
                      file=sys.stderr)
                return 1
            servers.append(srv)
            log(f"listening {kind} {listen[0]}:{listen[1]} -> {upstream[0]}:{upstream[1]}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for srv in servers:
        srv.close()
    for task in list(CONNECTIONS):
        task.cancel()
    await asyncio.gather(*CONNECTIONS, return_exceptions=True)
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
