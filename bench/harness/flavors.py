"""How each controller is started and observed: ours, ALBC at its defaults, and ALBC tuned for large clusters.

Both get the same environment: static test keys, no instance metadata, every AWS endpoint on the run's private
emulator, leader election on (their default) with a lease per trial, a self-signed webhook certificate and a free
webhook port on 127.0.0.1, and metrics/health on free 127.0.0.1 ports.
"""
from __future__ import annotations

import math
import os
import subprocess
from dataclasses import dataclass, field

from harness.emulator import free_port

CLUSTER = "lbc-bench"
REGION = "us-east-1"
# ALBC's webhook has no bind-host flag (it listens on every interface); nothing is configured to call it.
ALBC_SERVICES = ["EC2", "Elastic Load Balancing v2", "ACM", "WAFV2", "WAF Regional", "Shield",
                 "Resource Groups Tagging API", "STS"]
ALBC_FIXED = ["--enable-waf=false", "--enable-wafv2=false", "--enable-shield=false",
              "--feature-gates=ALBGatewayAPI=false,NLBGatewayAPI=false,GatewayListenerSet=false,"
              "GlobalAcceleratorController=false"]


def albc_tuned_args(groups: int) -> list[str]:
    """ALBC as its scaling guide suggests for many bindings (+3 TGB workers per 100 bindings; we give one per
    binding, which is more), with the error backoff bounded at 10 s (its users' fix for gates stuck behind the
    16m40s default) and the health re-poll shortened to 5 s (default 15 s)."""
    workers = max(3 + 3 * math.ceil(groups / 100), groups)
    return [f"--targetgroupbinding-max-concurrent-reconciles={workers}",
            "--targetgroupbinding-max-exponential-backoff-delay=10s",
            "--targetgroupbinding-requeue-duration=5s"]


def self_signed_cert(out_dir: str) -> str:
    d = os.path.join(out_dir, "webhook-cert")
    if not os.path.exists(os.path.join(d, "tls.crt")):
        os.makedirs(d, exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-keyout", os.path.join(d, "tls.key"),
                        "-out", os.path.join(d, "tls.crt")], check=True, capture_output=True)
    return d


@dataclass
class Flavor:
    name: str            # column name: ours, albc, albc-tuned
    kind: str            # "ours" or "albc"
    binary: str
    extra: list[str] = field(default_factory=list)

    def args(self, *, vpc: str, emu_url: str, lease_ns: str, lease_id: str, watch_ns: str, cert_dir: str,
             metrics_port: int, health_port: int) -> list[str]:
        common = [f"--cluster-name={CLUSTER}", f"--aws-region={REGION}", f"--aws-vpc-id={vpc}",
                  f"--leader-election-namespace={lease_ns}", f"--leader-election-id={lease_id}",
                  f"--metrics-bind-addr=127.0.0.1:{metrics_port}",
                  f"--health-probe-bind-addr=127.0.0.1:{health_port}",
                  f"--webhook-cert-dir={cert_dir}", f"--webhook-bind-port={free_port()}"]
        if watch_ns:
            common.append(f"--watch-namespace={watch_ns}")
        if self.kind == "ours":
            return [*common, "--webhook-bind-host=127.0.0.1",
                    f"--aws-api-endpoints=Elastic Load Balancing v2={emu_url},EC2={emu_url},STS={emu_url}",
                    *self.extra]
        kube = os.environ.get("KUBECONFIG", "")
        endpoints = ",".join(f"{s}={emu_url}" for s in ALBC_SERVICES)
        return [*common, f"--kubeconfig={kube}", f"--aws-api-endpoints={endpoints}", *ALBC_FIXED, *self.extra]

    def is_leader(self, metrics: dict[str, float]) -> bool:
        if self.kind == "ours":
            return metrics.get("awslbc_leader") == 1
        # client-go's leader-election gauge, exported by controller-runtime
        return any(k.startswith("leader_election_master_status") and v == 1 for k, v in metrics.items())
