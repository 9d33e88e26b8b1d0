"""A very small Kubernetes API client for the e2e helpers (stdlib only: urllib + ssl).

Connection settings come from the environment written by e2e/up (LBC_KUBE_SERVER, LBC_ADMIN_TOKEN,
LBC_KUBE_CA_FILE); when they are missing, e2e/.run/env is read.
"""
from __future__ import annotations

import json
import os
import shlex
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

E2E_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A second environment (e2e/up with LBC_E2E_RUN_DIR) names its own run directory in its variables.
RUN_DIR = os.environ.get("LBC_E2E_ROOT") or os.path.join(E2E_DIR, ".run")


class ApiError(Exception):
    def __init__(self, status: int, body: Any, method: str, path: str):
        self.status = status
        self.body = body
        msg = body.get("message") if isinstance(body, dict) else str(body)[:300]
        super().__init__(f"{method} {path} -> {status}: {msg}")

    @property
    def reason(self) -> str:
        return self.body.get("reason", "") if isinstance(self.body, dict) else ""


def load_env() -> dict[str, str]:
    """os.environ, completed with the export lines of e2e/.run/env for keys not already set."""
    env = dict(os.environ)
    path = os.environ.get("LBC_ENV_FILE") or os.environ.get("LBC_E2E_ENV") or os.path.join(RUN_DIR, "env")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("export ") or "=" not in line:
                    continue
                key, _, val = line[len("export "):].partition("=")
                parts = shlex.split(val) if val else [""]
                env.setdefault(key, parts[0] if parts else "")
    return env


class Kube:
    def __init__(self, server: str, token: str, ca_file: str, timeout: float = 30.0):
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.ctx = ssl.create_default_context(cafile=ca_file)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "Kube":
        env = env or load_env()
        missing = [k for k in ("LBC_KUBE_SERVER", "LBC_ADMIN_TOKEN", "LBC_KUBE_CA_FILE") if not env.get(k)]
        if missing:
            raise SystemExit(f"missing {', '.join(missing)}: run e2e/up (and source e2e/.run/env)")
        return cls(env["LBC_KUBE_SERVER"], env["LBC_ADMIN_TOKEN"], env["LBC_KUBE_CA_FILE"])

    def request(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None,
                content_type: str = "application/json") -> Any:
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = raw.decode(errors="replace")
            raise ApiError(e.code, parsed, method, path) from None
        return json.loads(raw) if raw else None

    # -- helpers -------------------------------------------------------------------------------------------------
    def get(self, path: str, **query: str) -> Any:
        return self.request("GET", path, query=query or None)

    def get_or_none(self, path: str) -> Any:
        try:
            return self.get(path)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def create(self, path: str, obj: dict) -> Any:
        return self.request("POST", path, obj)

    def merge_patch(self, path: str, patch: dict) -> Any:
        return self.request("PATCH", path, patch, content_type="application/merge-patch+json")

    def delete(self, path: str, **query: str) -> Any:
        try:
            return self.request("DELETE", path, query=query or None)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def ensure_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        ns = self.get_or_none(f"/api/v1/namespaces/{name}")
        if ns is None:
            try:
                self.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": name, "labels": labels or {}}})
            except ApiError as e:
                if e.status != 409:
                    raise
        elif labels and any(ns["metadata"].get("labels", {}).get(k) != v for k, v in labels.items()):
            self.merge_patch(f"/api/v1/namespaces/{name}", {"metadata": {"labels": labels}})


def wait_for(what: str, fn, timeout: float, interval: float = 0.25, describe=None):
    """Poll fn() until it returns a truthy value; on timeout raise SystemExit with describe()."""
    deadline = time.monotonic() + timeout
    while True:
        out = fn()
        if out:
            return out
        if time.monotonic() > deadline:
            detail = describe() if describe else ""
            raise SystemExit(f"timeout after {timeout:.0f}s waiting for {what}{': ' + detail if detail else ''}")
        time.sleep(interval)
