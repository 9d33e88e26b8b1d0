#!/usr/bin/env bash
# Smoke test of the e2e environment (run after e2e/up). Checks, against the real kube-apiserver,
# kube-controller-manager and the kwok stages:
#   1. three helper pods get VPC IPs from their nodes' pod CIDRs and one ENI each in the emulator;
#   2. the real EndpointSlice controller publishes them as 3 ready endpoints;
#   3. the emulator's call log holds the seeding calls;
#   4. readiness gates: kwok never writes a gate condition; Ready stays False until the gate is set True
#      by hand, flips to True, flips back when the gate goes False; the gate condition is never erased;
#   5. set-ready false/true makes an endpoint not ready / ready again;
#   6. a deleted pod is a terminating endpoint for a few seconds, then goes away; its ENI is removed;
#   7. roll replaces every pod one at a time.
# Cleans up after itself (namespace lbc-smoke).
set -euo pipefail
E2E="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -f "$E2E/.run/env" ] || { echo "run e2e/up first" >&2; exit 1; }
# shellcheck disable=SC1091
source "$E2E/.run/env"
K="$LBC_BIN_DIR/kubectl"
PY="$LBC_VENV/bin/python"
PODS="$E2E/pods"
NS=lbc-smoke
GATE=target-health.elbv2.k8s.aws/smoke-tg

step() { printf '\n[smoke] == %s\n' "$*" >&2; }
fail() { printf '[smoke] FAIL: %s\n' "$*" >&2; exit 1; }
ok() { printf '[smoke] ok: %s\n' "$*" >&2; }

# retry TIMEOUT DESCRIPTION CMD...: poll CMD (quietly) until it succeeds
retry() {
  local timeout="$1" what="$2"; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "[smoke] last output of: $*" >&2; "$@" >&2 || true
      fail "timeout after ${timeout}s: $what"
    fi
    sleep 0.3
  done
}

cleanup() {
  "$PODS" delete "$NS" web --no-wait >/dev/null 2>&1 || true
  "$K" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  # ENIs of the set (pods were deleted without waiting)
  "$PY" - "$NS" <<'PY' >/dev/null 2>&1 || true
import os, sys, boto3
ec2 = boto3.client("ec2", endpoint_url=os.environ["LBC_AWS_ENDPOINT"])
for e in ec2.describe_network_interfaces(Filters=[{"Name": "tag:lbc-e2e/set", "Values": [f"{sys.argv[1]}/web", f"{sys.argv[1]}/gated"]}])["NetworkInterfaces"]:
    ec2.delete_network_interface(NetworkInterfaceId=e["NetworkInterfaceId"])
PY
}
trap cleanup EXIT

# endpoints: "ip ready serving terminating" lines of the Service's EndpointSlices, sorted
endpoints() {
  "$K" get endpointslices -n "$NS" -l kubernetes.io/service-name="$1" -o json | "$PY" -c '
import json, sys
rows = []
for s in json.load(sys.stdin)["items"]:
    for e in s.get("endpoints") or []:
        c = e.get("conditions", {})
        for a in e["addresses"]:
            flags = [c.get(k, False) if k == "terminating" else c.get(k) for k in ("ready", "serving", "terminating")]
            rows.append(" ".join([a] + [str(f).lower() for f in flags]))
print("\n".join(sorted(rows)))'
}
# expect_endpoints SERVICE EXPECTED: exact match of endpoints() output
expect_endpoints() { [ "$(endpoints "$1")" = "$2" ]; }
has_endpoint() { endpoints "$1" | grep -xF -- "$2" >/dev/null; }           # SERVICE "ip ready serving terminating"
no_endpoint() { ! endpoints "$1" | grep -- "^$2 " >/dev/null; }          # SERVICE IP
cond() { "$K" get pod -n "$NS" "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}"; }
expect_cond() { [ "$(cond "$1" "$2")" = "$3" ]; }

cleanup
retry 60 "namespace $NS from an earlier run to go away" bash -c "! '$K' get namespace '$NS'"

step "1. three pods with VPC IPs and ENIs"
"$PODS" create "$NS" web --replicas 3 --port 8080 --port-name http
mapfile -t IPS < <("$PODS" ips "$NS" web | sort)
[ "${#IPS[@]}" = 3 ] || fail "expected 3 pod IPs, got ${IPS[*]:-none}"
"$PY" - "$LBC_VPC_CIDR" "${IPS[@]}" <<'PY' || fail "pod IPs not inside the VPC CIDR"
import ipaddress, sys
vpc = ipaddress.ip_network(sys.argv[1])
assert all(ipaddress.ip_address(ip) in vpc for ip in sys.argv[2:]), sys.argv[2:]
PY
ok "pod IPs ${IPS[*]} are in $LBC_VPC_CIDR"
ENI_IPS="$("$PODS" sync-enis "$NS" web | awk '{print $2}' | sort | xargs)"
[ "$ENI_IPS" = "${IPS[*]}" ] || fail "ENIs ($ENI_IPS) do not match pod IPs (${IPS[*]})"
ok "one ENI per pod IP in the emulator"

step "2. EndpointSlice controller publishes 3 ready endpoints"
"$PODS" service "$NS" web --port 80 --target-port http
WANT="$(printf '%s true true false\n' "${IPS[@]}")"
retry 60 "3 ready endpoints for $NS/web" expect_endpoints web "$WANT"
ok "$(endpoints web | tr '\n' ';')"

step "3. emulator call log has the seeding calls"
"$PY" - <<'PY' || fail "seeding calls missing from the emulator call log"
import json, os, urllib.request
calls = json.load(urllib.request.urlopen(os.environ["LBC_AWS_ENDPOINT"] + "/_awsemu/calls"))["calls"]
ops = [c["operation"] for c in calls if c["outcome"] == "ok"]
need = {"CreateVpc": 1, "CreateSubnet": 6, "CreateSecurityGroup": 1, "CreateNetworkInterface": 3}
missing = {k: (ops.count(k), n) for k, n in need.items() if ops.count(k) < n}
assert not missing, f"have/need: {missing}"
print(f"[smoke] ok: call log: {len(calls)} calls, " + ", ".join(f"{k} x{ops.count(k)}" for k in need))
PY

step "4. readiness gates: kwok leaves them to the controller"
NODE="$(echo "$LBC_NODES" | cut -d, -f1)"
"$K" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: gated-0, namespace: $NS, labels: {app: gated}}
spec:
  nodeName: $NODE
  automountServiceAccountToken: false
  readinessGates: [{conditionType: "$GATE"}]
  containers: [{name: app, image: lbc-e2e/fake-app:1, ports: [{containerPort: 8080}]}]
EOF
retry 30 "gated-0 to get an IP and ContainersReady" expect_cond gated-0 ContainersReady True
sleep 2   # give kwok every chance to (wrongly) write the gate
[ "$(cond gated-0 Ready)" = False ] || fail "Ready should be False while the gate condition is absent"
[ -z "$(cond gated-0 "$GATE")" ] || fail "kwok wrote the readiness gate condition itself"
ok "gate absent -> ContainersReady=True, Ready=False, kwok wrote no gate condition"
now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
"$K" patch pod -n "$NS" gated-0 --subresource=status --type=strategic \
  -p "{\"status\":{\"conditions\":[{\"type\":\"$GATE\",\"status\":\"True\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
retry 30 "Ready=True after the gate went True" expect_cond gated-0 Ready True
sleep 2
[ "$(cond gated-0 "$GATE")" = True ] || fail "the gate condition was erased/changed after kwok's status patch"
ok "gate True -> Ready=True; gate condition still True"
"$K" patch pod -n "$NS" gated-0 --subresource=status --type=strategic \
  -p "{\"status\":{\"conditions\":[{\"type\":\"$GATE\",\"status\":\"False\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
retry 30 "Ready=False after the gate went False" expect_cond gated-0 Ready False
[ "$(cond gated-0 "$GATE")" = False ] || fail "the gate condition was changed by kwok"
ok "gate False -> Ready=False; gate condition untouched"
"$K" delete pod -n "$NS" gated-0 --wait=false >/dev/null

step "5. set-ready false/true"
P0="web-0"; IP0="$("$K" get pod -n "$NS" "$P0" -o jsonpath='{.status.podIP}')"
"$PODS" set-ready "$NS" "$P0" false
retry 30 "endpoint $IP0 not ready" has_endpoint web "$IP0 false false false"
ok "$IP0 not ready"
"$PODS" set-ready "$NS" "$P0" true
retry 30 "endpoint $IP0 ready again" has_endpoint web "$IP0 true true false"
ok "$IP0 ready again"

step "6. scale down: terminating endpoint, then gone; ENI removed"
IP2="$("$K" get pod -n "$NS" web-2 -o jsonpath='{.status.podIP}')"
"$PODS" scale "$NS" web --replicas 2 --no-wait
retry 10 "endpoint $IP2 terminating" has_endpoint web "$IP2 false true true"
ok "$IP2 is a terminating endpoint (ready=false serving=true terminating=true)"
retry 30 "endpoint $IP2 gone" no_endpoint web "$IP2"
[ "$("$PODS" sync-enis "$NS" web | wc -l)" = 2 ] || fail "expected 2 ENIs after scale down"
ok "$IP2 removed, 2 ENIs left"

step "7. roll"
BEFORE="$("$PODS" ips "$NS" web | sort | xargs)"
"$PODS" roll "$NS" web --timeout 60 >/dev/null
AFTER="$("$PODS" ips "$NS" web | sort | xargs)"
[ "$(echo "$AFTER" | wc -w)" = 2 ] || fail "expected 2 pods after roll, got $AFTER"
for ip in $BEFORE; do case " $AFTER " in *" $ip "*) fail "old IP $ip still present after roll";; esac; done
WANT="$(printf '%s true true false\n' $AFTER | sort)"
retry 30 "2 ready endpoints after roll" expect_endpoints web "$WANT"
[ "$("$PODS" sync-enis "$NS" web | awk '{print $2}' | sort | xargs)" = "$AFTER" ] || fail "ENIs do not match after roll"
ok "rolled: $BEFORE -> $AFTER"

printf '\n[smoke] PASS\n' >&2
