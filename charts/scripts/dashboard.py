#!/usr/bin/env python3
"""Generates the Grafana dashboard charts/aws-lb-controller/dashboards/aws-lb-controller.json.

    python3 charts/scripts/dashboard.py --write    # regenerate (the chart test checks for drift)

Queries use only metrics the controller exports (checked against a live /metrics by
charts/tests/test_chart.py, which lists the few not exported yet in PENDING_METRICS).
"""
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "aws-lb-controller/dashboards/aws-lb-controller.json"

DS = {"type": "prometheus", "uid": "${datasource}"}
J = 'job=~"$job"'
B = f'{J},namespace=~"$namespace",name=~"$binding"'


def q(metric_sel, quantile):
    return f"histogram_quantile({quantile}, sum by (le) (rate({metric_sel}[$__rate_interval])))"


class Board:
    def __init__(self):
        self.panels, self.y, self.x, self.row_h = [], 0, 0, 0

    def row(self, title):
        self._newline()
        self.panels.append({"type": "row", "title": title, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def _newline(self):
        self.y += self.row_h
        self.x, self.row_h = 0, 0

    def panel(self, kind, title, targets, unit="short", w=8, h=8, desc=None, **options):
        if self.x + w > 24:
            self._newline()
        p = {"type": kind, "title": title, "datasource": DS,
             "gridPos": {"h": h, "w": w, "x": self.x, "y": self.y},
             "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
             "targets": [{"datasource": DS, "expr": e, "legendFormat": lg, "refId": chr(65 + i)}
                         for i, (e, lg) in enumerate(targets)]}
        if desc:
            p["description"] = desc
        if options:
            p["options"] = options
        self.panels.append(p)
        self.x += w
        self.row_h = max(self.row_h, h)

    def stat(self, title, expr, unit="short", desc=None):
        self.panel("stat", title, [(expr, "")], unit=unit, w=4, h=4, desc=desc)

    def ts(self, title, targets, unit="short", w=8, desc=None):
        self.panel("timeseries", title, targets, unit=unit, w=w, desc=desc)

    def latency(self, title, metric, w=8, desc=None):
        sel = f"{metric}_bucket{{{J}}}"
        self.ts(title, [(q(sel, 0.5), "p50"), (q(sel, 0.9), "p90"), (q(sel, 0.99), "p99")], "s", w, desc)


def build():
    b = Board()
    b.row("Overview")
    b.stat("Leader replicas", f"sum(awslbc_leader{{{J}}})", desc="Must be 1. 0: nothing is registered.")
    b.stat("Bindings", f"count(count by (namespace, name) (awslbc_targets{{{J}}}))")
    b.stat("Healthy targets", f'sum(awslbc_targets{{{J},state="healthy"}})')
    b.stat("Targets not healthy", f'sum(awslbc_targets{{{J},state!="healthy"}})')
    b.stat("Pending reconciles", f"sum(awslbc_pending_reconciles{{{J}}})")
    b.stat("AWS credentials expire in", f"min(aws_credentials_expiry_timestamp_seconds{{{J}}} > 0) - time()", "s",
           desc="Soonest expiry of the keys being handed out (vault source, or file with an expiration); "
                "empty for keys without expiry. Refreshed at 2/3 of the lease, so it should never go below ~5 min.")

    b.row("Reconcile")
    b.latency("Reconcile duration", "awslbc_reconcile_duration_seconds")
    b.ts("Reconcile errors by category",
         [(f"sum by (category) (rate(awslbc_reconcile_errors_total{{{J}}}[$__rate_interval]))", "{{category}}")], "ops")
    b.ts("Reconcile duration p99 by controller", [
        (f"histogram_quantile(0.99, sum by (le, controller) (rate(awslbc_reconcile_duration_seconds_bucket{{{J}}}"
         f"[$__rate_interval])))", "{{controller}}")], "s",
         desc="targetgroupbinding, service (NLB stacks), ingress (ALB groups), backend rules")
    b.ts("Reconcile errors by controller", [
        (f"sum by (controller) (rate(awslbc_reconcile_errors_total{{{J}}}[$__rate_interval]))", "{{controller}}")],
         "ops")
    b.ts("Reconciles and checkpoint skips", [
        (f"sum(rate(awslbc_reconcile_duration_seconds_count{{{J}}}[$__rate_interval]))", "reconciles"),
        (f"sum(rate(awslbc_reconcile_skipped_checkpoint_total{{{J}}}[$__rate_interval]))", "skipped (in sync)"),
        (f"sum(rate(awslbc_pod_condition_patches_total{{{J}}}[$__rate_interval]))", "gate patches")], "ops")

    b.row("Latency: endpoint to target group")
    b.latency("Endpoint change to RegisterTargets", "awslbc_endpoint_to_register_seconds")
    b.latency("Terminating endpoint to DeregisterTargets", "awslbc_terminating_to_deregister_seconds")
    b.latency("Registered to healthy", "awslbc_registered_to_healthy_seconds")
    b.latency("Readiness gate True after registration", "awslbc_readiness_gate_ready_seconds", w=12)
    b.ts("Pending reconciles", [(f"sum(awslbc_pending_reconciles{{{J}}})", "pending")], w=12)

    b.row("Targets per target group")
    b.ts("Targets by state", [(f"sum by (namespace, name, state) (awslbc_targets{{{B}}})",
                               "{{namespace}}/{{name}} {{state}}")], w=12)
    b.panel("table", "Targets now", [(f"sum by (namespace, name, state) (awslbc_targets{{{B}}})", "")], w=12,
            showHeader=True)
    b.ts("Pod IPs outside the VPC (not registered)",
         [(f"max by (namespace, name) (awslbc_targets_outside_vpc{{{B}}})", "{{namespace}}/{{name}}")], w=12)
    b.ts("Deregister-all plans refused",
         [(f"sum by (namespace, name) (increase(awslbc_deregister_all_refused_total{{{B}}}[$__rate_interval]))",
           "{{namespace}}/{{name}}")], w=12)

    b.row("AWS API")
    b.ts("Calls by operation and outcome",
         [(f"sum by (operation, outcome) (rate(aws_api_calls_total{{{J}}}[$__rate_interval]))",
           "{{operation}} {{outcome}}")], "ops")
    b.ts("Errors by code", [(f'sum by (operation, error_code) (rate(aws_api_calls_total{{{J},outcome!="ok"}}'
                             f"[$__rate_interval]))", "{{operation}} {{error_code}}")], "ops")
    b.ts("Throttled by AWS, and retries", [
        (f"sum by (operation) (rate(aws_api_call_throttled_total{{{J}}}[$__rate_interval]))", "throttled {{operation}}"),
        (f"sum by (operation) (rate(aws_api_call_retries_sum{{{J}}}[$__rate_interval]))", "retry {{operation}}")],
         "ops")
    b.ts("Call duration p99", [(f"histogram_quantile(0.99, sum by (le, operation) (rate("
                                f"aws_api_call_duration_seconds_bucket{{{J}}}[$__rate_interval])))", "{{operation}}")],
         "s", w=12)
    b.ts("Client-side rate-limit wait p99", [(f"histogram_quantile(0.99, sum by (le, operation) (rate("
                                              f"aws_api_client_throttle_wait_seconds_bucket{{{J}}}"
                                              f"[$__rate_interval])))", "{{operation}}")], "s", w=12)

    b.row("AWS credentials")
    b.ts("Time until the keys expire", [(f"min by (pod, source) (aws_credentials_expiry_timestamp_seconds{{{J}}} > 0)"
                                         f" - time()", "{{pod}} {{source}}")], "s",
         desc="A saw-tooth: it climbs at each refresh. A line falling towards 0 means refreshes fail.")
    b.ts("Credential refreshes by outcome", [
        (f"sum by (source, outcome) (increase(aws_credentials_refreshes_total{{{J}}}[$__rate_interval]))",
         "{{source}} {{outcome}}")])
    b.ts("Credential refresh failures by reason", [
        (f"sum by (source, reason) (increase(aws_credentials_refresh_failures_total{{{J}}}[$__rate_interval]))",
         "{{source}} {{reason}}")],
         desc="sealed, permission_denied (403: role binding or policy), audience, unreachable, file_invalid, ...")

    b.row("Admission webhooks")
    b.ts("Requests by webhook and outcome", [
        (f"sum by (webhook_name, outcome) (rate(awslbc_webhook_requests_total{{{J}}}[$__rate_interval]))",
         "{{webhook_name}} {{outcome}}")], "ops")
    b.ts("Answer time p99 by webhook", [
        (f"histogram_quantile(0.99, sum by (le, webhook_name) (rate(awslbc_webhook_request_duration_seconds_bucket"
         f"{{{J}}}[$__rate_interval])))", "{{webhook_name}}")], "s",
         desc="The API server waits for this on every matching create/update; keep it far below the webhook timeout.")
    b.ts("Refused or failed, by reason", [
        (f"sum by (webhook_name, error_category) (rate(awslbc_webhook_mutation_failure_total{{{J}}}"
         f"[$__rate_interval]))", "mutate {{webhook_name}} {{error_category}}"),
        (f"sum by (webhook_name, error_category) (rate(awslbc_webhook_validation_failure_total{{{J}}}"
         f"[$__rate_interval]))", "validate {{webhook_name}} {{error_category}}")], "ops")

    b.row("Leader and caches")
    b.ts("Leader by pod", [(f"max by (pod) (awslbc_leader{{{J}}})", "{{pod}}")], w=12)
    b.ts("Watch cache objects", [(f"sum by (resource) (awslbc_cache_objects{{{J}}})", "{{resource}}")], w=12)

    for i, p in enumerate(b.panels, 1):
        p["id"] = i

    def var(name, query, label):
        return {"name": name, "label": label, "type": "query", "datasource": DS, "definition": query,
                "query": {"query": query, "refId": "v"}, "refresh": 2, "includeAll": True, "multi": True,
                "current": {"text": "All", "value": "$__all"}, "sort": 1}

    return {
        "title": "AWS LB Controller", "uid": "aws-lb-controller", "tags": ["aws", "load-balancer"],
        "schemaVersion": 39, "version": 1, "editable": True, "timezone": "browser", "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"},
            var("job", "label_values(awslbc_leader, job)", "Job"),
            var("namespace", f"label_values(awslbc_targets{{{J}}}, namespace)", "Namespace"),
            var("binding", f'label_values(awslbc_targets{{{J},namespace=~"$namespace"}}, name)', "Binding"),
        ]},
        "panels": b.panels,
    }


def render():
    return json.dumps(build(), indent=1) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        OUT.write_text(render())
        print(f"wrote {OUT}")
    else:
        sys.stdout.write(render())
