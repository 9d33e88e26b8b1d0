#!/usr/bin/env bash
# Runs the real ALBC (built by ../shared/peers/build-albc.sh) against the local environment (after e2e/up), lets it
# reconcile an annotated IP-mode NLB Service (which makes it create a TargetGroupBinding and register the pods), scrapes
# its /metrics and writes the families it exports as "name type label,label,..." lines (sorted) to OUT (default
# e2e/albc-metrics-families.txt). e2e/tests/e2e/albc_metrics.rs compares that list with what our controller exports.
#
#   e2e/scripts/albc-metrics.sh [OUT]        env: ALBC_BIN (default: the cached build), ALBC_METRICS_WAIT (seconds
#                                            to keep ALBC running after the NLB is ready; default 200, enough for its
#                                            30 s cache-size and 3 min top-talker collectors)
# Cleans up after itself (namespace lbc-albc-metrics, the NLB and its resources through ALBC, the process).
set -euo pipefail
E2E="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -f "$E2E/.run/env" ] || { echo "run e2e/up first" >&2; exit 1; }
# shellcheck disable=SC1091
source "$E2E/.run/env"
OUT="${1:-$E2E/albc-metrics-families.txt}"
ALBC_BIN="${ALBC_BIN:-$HOME/.cache/aws-lb-controller/albc-225f4456/controller}"
WAIT="${ALBC_METRICS_WAIT:-200}"
K="$LBC_BIN_DIR/kubectl"
PY="$LBC_VENV/bin/python"
NS=lbc-albc-metrics
RUN="$E2E/.run/albc-metrics"
[ -x "$ALBC_BIN" ] || { echo "ALBC binary $ALBC_BIN missing: build it with ../shared/peers/build-albc.sh" >&2; exit 1; }
mkdir -p "$RUN"

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
METRICS_PORT="$(free_port)"; HEALTH_PORT="$(free_port)"; WEBHOOK_PORT="$(free_port)"
if [ ! -f "$RUN/tls.crt" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -keyout "$RUN/tls.key" -out "$RUN/tls.crt" >/dev/null 2>&1
fi
EP="$LBC_AWS_ENDPOINT"
ENDPOINTS="EC2=$EP,Elastic Load Balancing v2=$EP,ACM=$EP,WAFV2=$EP,WAF Regional=$EP,Shield=$EP"
ENDPOINTS="$ENDPOINTS,Resource Groups Tagging API=$EP,STS=$EP"
ALBC_PID=""
cleanup() {
  "$K" delete service -n "$NS" web --wait=true --timeout=60s >/dev/null 2>&1 || true
  [ -n "$ALBC_PID" ] && kill "$ALBC_PID" 2>/dev/null && wait "$ALBC_PID" 2>/dev/null || true
  "$E2E/pods" delete "$NS" web >/dev/null 2>&1 || true
  "$K" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$K" create namespace "$NS" >/dev/null 2>&1 || true
"$E2E/pods" create "$NS" web --replicas 3 --port 8080 --port-name http >/dev/null
"$ALBC_BIN" --kubeconfig="$KUBECONFIG" --cluster-name="$LBC_CLUSTER_NAME" --aws-region="$AWS_REGION" \
  --aws-vpc-id="$LBC_VPC_ID" --aws-api-endpoints="$ENDPOINTS" --enable-leader-election=true \
  --leader-election-namespace=kube-system --leader-election-id=albc-metrics \
  --metrics-bind-addr="127.0.0.1:$METRICS_PORT" --health-probe-bind-addr="127.0.0.1:$HEALTH_PORT" \
  --webhook-cert-dir="$RUN" --webhook-bind-port="$WEBHOOK_PORT" \
  --enable-waf=false --enable-wafv2=false --enable-shield=false \
  --feature-gates=ALBGatewayAPI=false,NLBGatewayAPI=false,GatewayListenerSet=false,GlobalAcceleratorController=false \
  >"$RUN/albc.log" 2>&1 &
ALBC_PID=$!

ANN=service.beta.kubernetes.io
"$E2E/pods" service "$NS" web --port 80 --target-port 8080 --type LoadBalancer \
  --annotations "$ANN/aws-load-balancer-type=external,$ANN/aws-load-balancer-nlb-target-type=ip,$ANN/aws-load-balancer-scheme=internal" >/dev/null
deadline=$(( $(date +%s) + 120 ))
until [ -n "$("$K" get service -n "$NS" web -o jsonpath='{.status.loadBalancer.ingress[0].hostname}' 2>/dev/null)" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { tail -30 "$RUN/albc.log" >&2; echo "ALBC gave the NLB Service no hostname in 120 s" >&2; exit 1; }
  kill -0 "$ALBC_PID" 2>/dev/null || { tail -30 "$RUN/albc.log" >&2; echo "ALBC exited" >&2; exit 1; }
  sleep 1
done
echo "[albc-metrics] NLB ready; $("$K" get targetgroupbindings -n "$NS" --no-headers | wc -l) TargetGroupBinding(s); waiting ${WAIT}s for ALBC's periodic collectors" >&2
sleep "$WAIT"
curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" >"$RUN/albc.metrics"
"$PY" - "$RUN/albc.metrics" "$OUT" <<'PY'
import re, sys
types, labels = {}, {}
for line in open(sys.argv[1]):
    if line.startswith("# TYPE "):
        _, _, name, typ = line.split()
        types[name] = typ
        labels.setdefault(name, set())
    elif line.strip() and not line.startswith("#"):
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s", line)
        name = m.group(1)
        fam = next((f for f in (name, re.sub(r"_(bucket|sum|count)$", "", name)) if f in types), name)
        for k in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""):
            if not (k == "le" and types.get(fam) == "histogram") and not (k == "quantile" and types.get(fam) == "summary"):
                labels[fam].add(k)
with open(sys.argv[2], "w") as out:
    out.write("# Metric families the real ALBC (225f4456) exported after reconciling an IP-mode NLB Service and its\n")
    out.write("# TargetGroupBinding in the local environment: name type labels. Made by e2e/scripts/albc-metrics.sh.\n")
    for f in sorted(types):
        out.write(f"{f} {types[f]} {','.join(sorted(labels[f])) or '-'}\n")
print(f"[albc-metrics] {len(types)} families -> {sys.argv[2]}", file=sys.stderr)
PY
