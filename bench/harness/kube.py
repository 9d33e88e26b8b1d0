"""A small Kubernetes client: one persistent TLS connection per thread, bounded retries, and a watch loop."""
from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable


class KubeError(Exception):
    def __init__(self, status: int, body: bytes, method: str, path: str):
        self.status = status
        super().__init__(f"{method} {path} -> {status}: {body[:300]!r}")


class Kube:
    def __init__(self, env: dict[str, str]):
        u = urllib.parse.urlparse(env["LBC_KUBE_SERVER"])
        self.host, self.port = u.hostname, u.port or 443
        self.token = env["LBC_ADMIN_TOKEN"]
        self.ctx = ssl.create_default_context(cafile=env["LBC_KUBE_CA_FILE"])
        self.local = threading.local()

    def connect(self, timeout: float = 60) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def headers(self, ctype: str | None = None) -> dict[str, str]:
        h = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if ctype:
            h["Content-Type"] = ctype
        return h

    def req(self, method: str, path: str, body: Any = None, ctype: str = "application/json",
            ok404: bool = False) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(5):
            c = getattr(self.local, "c", None)
            if c is None:
                c = self.local.c = self.connect()
            try:
                c.request(method, path, body=data, headers=self.headers(ctype if data is not None else None))
                r = c.getresponse()
                raw = r.read()
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.c = None
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
                continue
            if r.status == 404 and ok404:
                return None
            if r.status == 429 or r.status >= 500:
                time.sleep(0.2 * (attempt + 1))
                continue
            if r.status >= 400:
                raise KubeError(r.status, raw, method, path)
            return json.loads(raw) if raw else None
        raise KubeError(599, b"retries exhausted", method, path)

    def merge_patch(self, path: str, body: Any, ok404: bool = False) -> Any:
        return self.req("PATCH", path, body, ctype="application/merge-patch+json", ok404=ok404)


def watch_loop(kube: Kube, base: str, relist: Callable[[], str],
               on_event: Callable[[str, dict, float], None], rv: str | None = None) -> None:
    """Follows `base` forever from `rv` (relisting on expiry), calling on_event(type, object, time)."""
    if rv is None:
        rv = relist()
    while True:
        conn = kube.connect(timeout=330)
        try:
            conn.request("GET", f"{base}?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion={rv}",
                         headers=kube.headers())
            r = conn.getresponse()
            if r.status != 200:
                r.read()
                rv = relist()
                continue
            while True:
                line = r.readline()
                if not line:
                    break
                t = time.time()
                ev = json.loads(line)
                typ, obj = ev.get("type"), ev.get("object") or {}
                if typ == "ERROR":
                    rv = relist()
                    break
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if typ != "BOOKMARK":
                    on_event(typ, obj, t)
        except (OSError, http.client.HTTPException, ValueError):
            time.sleep(0.5)
        finally:
            conn.close()
