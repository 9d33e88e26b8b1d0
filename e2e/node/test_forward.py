"""Tests of e2e/node/forward.py, the real node's forwarders: run by e2e/test-all's pytest step.

An upstream HTTP/1.1 server on 127.0.0.1 records every request it gets; the forwarder runs as a subprocess, as
e2e/up starts it, and the tests talk to it over raw sockets so that keep-alive, chunked bodies and a client's own
X-Forwarded-For are exactly what was sent.
"""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

FORWARD = Path(__file__).with_name("forward.py")


class Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict] = []

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def _answer(self) -> None:
        body = self._body()
        Recorder.seen.append({"method": self.command, "path": self.path, "body": body,
                              "xff": self.headers.get_all("X-Forwarded-For") or []})
        out = f"{self.command} {self.path} {len(body)}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = _answer

    def log_message(self, *_):
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"forward.py exited with {proc.returncode}: {proc.stdout.read()}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"forward.py does not listen on 127.0.0.1:{port} after 10 s")


@pytest.fixture(scope="module")
def upstreams():
    http_srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=http_srv.serve_forever, daemon=True).start()
    echo = socket.create_server(("127.0.0.1", 0))

    def serve_echo():
        while True:
            try:
                conn, _ = echo.accept()
            except OSError:
                return

            def one(c=conn):
                with c:
                    while data := c.recv(65536):
                        c.sendall(data.upper())
                    c.sendall(b"BYE")  # after the client's half-close: the reverse direction still works

            threading.Thread(target=one, daemon=True).start()

    threading.Thread(target=serve_echo, daemon=True).start()
    yield http_srv.server_address[1], echo.getsockname()[1]
    http_srv.shutdown()
    echo.close()


@pytest.fixture(scope="module")
def forwarder(upstreams):
    http_up, echo_up = upstreams
    http_port, tcp_port = free_port(), free_port()
    proc = subprocess.Popen([sys.executable, str(FORWARD), "--http", f"127.0.0.1:{http_port}=127.0.0.1:{http_up}",
                             "--tcp", f"127.0.0.1:{tcp_port}=127.0.0.1:{echo_up}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_listening(http_port, proc)
    wait_listening(tcp_port, proc)
    yield http_port, tcp_port, proc
    proc.terminate()
    proc.wait(timeout=10)


def read_response(f) -> bytes:
    status = f.readline()
    length = 0
    while (line := f.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    assert status.startswith(b"HTTP/1.1 200"), status
    return f.read(length)


def test_http_sets_x_forwarded_for_on_every_request_of_a_connection(forwarder):
    http_port, _, _ = forwarder
    Recorder.seen.clear()
    with socket.create_connection(("127.0.0.1", http_port)) as s, s.makefile("rb") as f:
        # 1: a client-made X-Forwarded-For (twice) is replaced, not appended to
        s.sendall(b"GET /one HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 6.6.6.6\r\nx-forwarded-for: 7.7.7.7\r\n\r\n")
        assert read_response(f) == b"GET /one 0"
        # 2: a Content-Length body, sent in two writes
        s.sendall(b"POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello")
        time.sleep(0.05)
        s.sendall(b" world")
        assert read_response(f) == b"POST /two 11"
        # 3: a chunked body with a chunk extension and a trailer, then 4 right behind it in the same write
        s.sendall(b"POST /three HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nX-Trailer: t\r\n\r\n"
                  b"GET /four HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(f) == b"POST /three 7"
        assert read_response(f) == b"GET /four 0"
    assert [(r["method"], r["path"], r["body"], r["xff"]) for r in Recorder.seen] == [
        ("GET", "/one", b"", ["127.0.0.1"]),
        ("POST", "/two", b"hello world", ["127.0.0.1"]),
        ("POST", "/three", b"abcdefg", ["127.0.0.1"]),
        ("GET", "/four", b"", ["127.0.0.1"]),
    ]


def test_http_closes_a_connection_that_is_not_http(forwarder):
    http_port, _, proc = forwarder
    with socket.create_connection(("127.0.0.1", http_port), timeout=5) as s:
        s.sendall(b"\x16\x03\x01 not a request\r\n\r\n")
        assert s.recv(100) == b""  # closed, nothing relayed back


def test_tcp_relays_bytes_both_ways_and_half_close(forwarder):
    _, tcp_port, _ = forwarder
    with socket.create_connection(("127.0.0.1", tcp_port), timeout=5) as s:
        s.sendall(b"abc")
        assert s.recv(10) == b"ABC"
        s.sendall(b"x" * 200_000)
        got = b""
        while len(got) < 200_000:
            got += s.recv(65536)
        assert got == b"X" * 200_000
        s.shutdown(socket.SHUT_WR)
        rest = b""
        while data := s.recv(100):
            rest += data
        assert rest == b"BYE"


def test_log_names_each_client_and_upstream(forwarder, upstreams):
    http_port, _, proc = forwarder
    proc.terminate()
    out, _ = proc.communicate(timeout=10)
    assert f"listening http 127.0.0.1:{http_port} -> 127.0.0.1:{upstreams[0]}" in out
    assert f"accept http 127.0.0.1:" in out and f"-> 127.0.0.1:{upstreams[0]}" in out
    assert "not an HTTP/1.x request line" in out
    assert ": 4 requests," in out
    assert out.rstrip().endswith("stopped")


def test_bad_forwarder_spec_is_refused_with_the_expected_form():
    r = subprocess.run([sys.executable, str(FORWARD), "--tcp", "10.244.0.1:16443"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "forwarder '10.244.0.1:16443': expected LISTEN_IP:PORT=UPSTREAM_IP:PORT" in r.stderr


def test_unusable_listen_address_fails_with_the_address():
    r = subprocess.run([sys.executable, str(FORWARD), "--tcp", "203.0.113.123:1=127.0.0.1:2"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "cannot listen on 203.0.113.123:1 (tcp -> 127.0.0.1:2)" in r.stderr
