#!/usr/bin/env bash
# Builds a pinned helm v3 from the Go module proxy into a cache outside the repo and prints its path.
# A second run costs nothing (the binary is rebuilt only when missing or reporting another version).
#
#   HELM_VERSION  helm release (default below: the latest v3.x the proxy served when pinned)
#   LBC_CACHE     cache root (default ~/.cache/aws-lb-controller)
#
# Usage: HELM="$(charts/scripts/helm.sh)" && "$HELM" version
set -euo pipefail
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
LBC_CACHE="${LBC_CACHE:-$HOME/.cache/aws-lb-controller}"
OUT="$LBC_CACHE/bin/helm-$HELM_VERSION"
HELM="$OUT/helm"
log() { printf '[helm.sh] %s\n' "$*" >&2; }

if [ -x "$HELM" ] && "$HELM" version --template '{{.Version}}' 2>/dev/null | grep -qx -- "$HELM_VERSION"; then
  echo "$HELM"; exit 0
fi

export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false"
mod="helm.sh/helm/v3"
gomod="$(go mod download -json "$mod@$HELM_VERSION" | python3 -c 'import json,sys;print(json.load(sys.stdin)["GoMod"])')"
# Same ldflags as helm's Makefile: the default .Capabilities.KubeVersion follows the client-go it
# was built with (v0.X.Y -> 1.X). Tests still pass --kube-version to match the apiserver they target.
kminor="$(sed -nE 's#^[[:space:]]*k8s\.io/client-go v0\.([0-9]+)\..*#\1#p' "$gomod" | head -1)"
[ -n "$kminor" ] || { log "cannot read the client-go version from $gomod"; exit 1; }
ld="-s -w -X $mod/internal/version.version=$HELM_VERSION -X $mod/internal/version.gitTreeState=clean"
for p in pkg/chartutil pkg/lint/rules; do
  ld="$ld -X $mod/$p.k8sVersionMajor=1 -X $mod/$p.k8sVersionMinor=$kminor"
done
log "building helm $HELM_VERSION (kube 1.$kminor defaults) into $OUT (first time: a few minutes)"
mkdir -p "$OUT"
GOBIN="$OUT" go install -trimpath -ldflags "$ld" "$mod/cmd/helm@$HELM_VERSION"
"$HELM" version --template '{{.Version}}' | grep -qx -- "$HELM_VERSION" || { log "built helm does not report $HELM_VERSION"; exit 1; }
echo "$HELM"
