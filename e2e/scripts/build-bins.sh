#!/usr/bin/env bash
# Builds the real Kubernetes control-plane binaries (kube-apiserver, kube-controller-manager, kubectl),
# etcd and kwok from the Go module proxy, into a cache outside the repo. A second run costs nothing:
# each binary is rebuilt only when it is missing or reports another version.
#
#   KUBE_VERSION   Kubernetes release to build (default: oldest 1.34.x the proxy serves, pinned below)
#   ETCD_VERSION   etcd release (3.6.x)
#   KWOK_VERSION   kwok release
#   GATEWAY_API_VERSION  Gateway API release whose standard-channel CRDs e2e/up installs (from the module's zip)
#   JAEGER_VERSION Jaeger v1 all-in-one (an OTLP receiver with an HTTP query API, for the tracing e2e test);
#                  built only with ONLY=jaeger (e2e/scripts/build-jaeger.sh), into its own cache folder
#   LBC_CACHE      cache root (default ~/.cache/aws-lb-controller)
#
# ONLY="..." picks what to build (default "etcd k8s kwok gatewayapi conformance"; gatewayapi only copies CRDs); ONLY=node builds the real node's kubelet and
# kube-scheduler (same source, same folder as the control plane; LBC_E2E_NODE=1 e2e/up asks for them).
#
# The wrapper modules under e2e/go/* are ours: k8s.io/kubernetes cannot be built with `go install`
# because its go.mod points every staging module at ./staging; the wrapper replaces each one with its
# published v0.X twin. `--regen` rewrites a wrapper's go.mod from the upstream go.mod (on version bumps).
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
KUBE_VERSION="${KUBE_VERSION:-1.34.0}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-0.8.0}"
JAEGER_VERSION="${JAEGER_VERSION:-1.76.0}"
GATEWAY_API_VERSION="${GATEWAY_API_VERSION:-1.6.3}"
LBC_CACHE="${LBC_CACHE:-$HOME/.cache/aws-lb-controller}"
BIN="$LBC_CACHE/bin/k8s-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
REGEN=0; [ "${1:-}" = "--regen" ] && REGEN=1
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
mkdir -p "$BIN"
log() { printf '[build-bins] %s\n' "$*" >&2; }

have_version() { # binary, expected substring of its --version output
  [ -x "$1" ] && "$1" --version 2>/dev/null | grep -- "$2" >/dev/null  # no -q: an early exit would SIGPIPE the binary and fail the pipe (pipefail)
}

build_k8s() {
  local dir="$HERE/go/k8s" sv
  sv="v0.${KUBE_VERSION#1.}"
  if have_version "$BIN/kube-apiserver" "v$KUBE_VERSION" && have_version "$BIN/kube-controller-manager" "v$KUBE_VERSION" \
     && [ -x "$BIN/kubectl" ]; then log "kubernetes v$KUBE_VERSION cached in $BIN"; return; fi
  cd "$dir"
  if [ "$REGEN" = 1 ] || ! grep -q "k8s.io/kubernetes v$KUBE_VERSION\$" go.mod 2>/dev/null; then
    log "generating wrapper go.mod for kubernetes v$KUBE_VERSION"
    rm -f go.mod go.sum
    go mod init aws-lb-controller.local/e2e/k8sbins >/dev/null 2>&1
    local kmod
    kmod="$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | python3 -c 'import json,sys;print(json.load(sys.stdin)["GoMod"])')"
    # every staging module replaced by ./staging upstream -> its published twin at the same minor
    for m in $(sed -nE 's#^[[:space:]]*(replace[[:space:]]+)?(k8s\.io/[A-Za-z0-9._-]+)[[:space:]]+=>[[:space:]]+\./staging/.*#\2#p' "$kmod"); do
      go mod edit -replace="$m=$m@$sv"
    done
    sed -nE 's/^godebug[[:space:]]+([^ ()]+=[^ ()]+)$/\1/p' "$kmod" | while read -r g; do go mod edit -godebug="$g"; done
    cat > tools.go <<'GO'
//go:build tools

// Package tools pins the Kubernetes commands this wrapper module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
    go get "k8s.io/kubernetes@v$KUBE_VERSION"
    go mod tidy
  fi
  log "building kube-apiserver, kube-controller-manager, kubectl v$KUBE_VERSION (first time: 20-40 min on 2 cores)"
  go build -trimpath -ldflags "$(k8s_ldflags)" -o "$BIN/" k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
  "$BIN/kube-apiserver" --version
}

k8s_ldflags() { # the version stamps `make` would set (clients and servers report v$KUBE_VERSION)
  local ld="-s -w" minor p
  minor="$(echo "$KUBE_VERSION" | cut -d. -f2)"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=v$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "$ld"
}

# kubelet and kube-scheduler of the same Kubernetes source, for the real node (LBC_E2E_NODE=1 e2e/up). Separate
# from build_k8s so the default environment never pays for them; they share the wrapper module (whose tools.go
# imports both, so go.mod/go.sum hold their dependencies) and the Go build cache with the control plane, so on top
# of a built control plane only the kubelet's own packages (cadvisor, the kubelet tree) compile.
# CGO_ENABLED=0 as for the others: upstream links the kubelet against libc only for the cgo DNS resolver and
# os/user, neither of which this node uses (it resolves no names; uids are numeric).
build_node() {
  if have_version "$BIN/kubelet" "v$KUBE_VERSION" && have_version "$BIN/kube-scheduler" "v$KUBE_VERSION"; then
    log "kubelet, kube-scheduler v$KUBE_VERSION cached in $BIN"; return
  fi
  cd "$HERE/go/k8s"
  grep -q "k8s.io/kubernetes v$KUBE_VERSION\$" go.mod 2>/dev/null \
    || { log "e2e/go/k8s/go.mod is not at kubernetes v$KUBE_VERSION: building the control plane first"; build_k8s; cd "$HERE/go/k8s"; }
  log "building kubelet, kube-scheduler v$KUBE_VERSION (on top of a built control plane: ~10 min on 2 cores)"
  go build -trimpath -ldflags "$(k8s_ldflags)" -o "$BIN/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler
  "$BIN/kubelet" --version
}

build_etcd() {
  if have_version "$BIN/etcd" "$ETCD_VERSION"; then log "etcd $ETCD_VERSION cached"; return; fi
  cd "$HERE/go/etcd"
  if [ "$REGEN" = 1 ] || ! grep -q "go.etcd.io/etcd/server/v3 v$ETCD_VERSION\$" go.mod 2>/dev/null; then
    rm -f go.mod go.sum
    go mod init aws-lb-controller.local/e2e/etcdbin >/dev/null 2>&1
    cat > tools.go <<'GO'
//go:build tools

// Package tools pins the etcd server this wrapper module builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
GO
    go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
    go mod tidy
  fi
  log "building etcd $ETCD_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
  "$BIN/etcd" --version | head -1
}

build_kwok() {
  if have_version "$BIN/kwok" "$KWOK_VERSION"; then log "kwok $KWOK_VERSION cached"; return; fi
  cd "$HERE/go/kwok"
  if [ "$REGEN" = 1 ] || ! grep -q "sigs.k8s.io/kwok v$KWOK_VERSION\$" go.mod 2>/dev/null; then
    rm -f go.mod go.sum
    go mod init aws-lb-controller.local/e2e/kwokbin >/dev/null 2>&1
    cat > tools.go <<'GO'
//go:build tools

// Package tools pins the kwok controller this wrapper module builds.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
GO
    go get "sigs.k8s.io/kwok@v$KWOK_VERSION"
    go mod tidy
  fi
  log "building kwok $KWOK_VERSION"
  go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=v$KUBE_VERSION" \
    -o "$BIN/kwok" sigs.k8s.io/kwok/cmd/kwok
}

build_jaeger() {
  # cmd/all-in-one is Jaeger v1's single binary: OTLP/HTTP receiver, in-memory store, HTTP query API.
  # (cmd/jaeger is v2, an OpenTelemetry Collector distribution: a much larger build for nothing we use.)
  # Jaeger's go.mod has a replace directive, so `go install ...@v` is refused: a wrapper module pins it.
  local jbin="$LBC_CACHE/bin/jaeger-$JAEGER_VERSION"
  if [ -x "$jbin/jaeger-all-in-one" ] && "$jbin/jaeger-all-in-one" version 2>/dev/null | grep -- "\"v$JAEGER_VERSION\"" >/dev/null; then log "jaeger $JAEGER_VERSION cached in $jbin"; echo "$jbin"; return; fi
  mkdir -p "$jbin"; cd "$HERE/go/jaeger"
  if [ "$REGEN" = 1 ] || ! grep -q "github.com/jaegertracing/jaeger v$JAEGER_VERSION\$" go.mod 2>/dev/null; then
    rm -f go.mod go.sum
    go mod init aws-lb-controller.local/e2e/jaegerbin >/dev/null 2>&1
    local jmod
    jmod="$(go mod download -json "github.com/jaegertracing/jaeger@v$JAEGER_VERSION" | python3 -c 'import json,sys;print(json.load(sys.stdin)["GoMod"])')"
    # copy upstream's replace directives (a wrapper module does not inherit them)
    sed -nE 's#^[[:space:]]*replace[[:space:]]+([^ ]+)[[:space:]]+=>[[:space:]]+([^ ]+)[[:space:]]+([^ ]+)$#\1=\2@\3#p' "$jmod" \
      | while read -r r; do go mod edit -replace="$r"; done
    cat > tools.go <<'GO'
//go:build tools

// Package tools pins the Jaeger all-in-one binary this wrapper module builds.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/all-in-one"
GO
    go get "github.com/jaegertracing/jaeger@v$JAEGER_VERSION"
    go mod tidy
  fi
  log "building jaeger all-in-one $JAEGER_VERSION"
  go build -trimpath -ldflags "-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=v$JAEGER_VERSION" \
    -o "$jbin/jaeger-all-in-one" github.com/jaegertracing/jaeger/cmd/all-in-one
  echo "$jbin"
}

# The Gateway API's standard-channel CRDs (config/crd/standard of the sigs.k8s.io/gateway-api module,
# the same files as its standard-install.yaml), into $LBC_CACHE/bin/gateway-api-<version>/crds; CRDs
# only (the bundle's ValidatingAdmissionPolicy is left out).
build_gatewayapi() {
  local dest="$LBC_CACHE/bin/gateway-api-$GATEWAY_API_VERSION/crds" src
  if [ -s "$dest/gateway.networking.k8s.io_gateways.yaml" ]; then log "gateway-api v$GATEWAY_API_VERSION CRDs cached in $dest"; return; fi
  # Outside any module: `go mod download m@v` then touches no go.mod.
  local scratch; scratch="$(mktemp -d)"
  src="$(cd "$scratch" && GOFLAGS= go mod download -json "sigs.k8s.io/gateway-api@v$GATEWAY_API_VERSION" \
    | python3 -c 'import json,sys;print(json.load(sys.stdin)["Dir"])')"
  rmdir "$scratch"
  mkdir -p "$dest.tmp"
  for f in "$src"/config/crd/standard/gateway.networking.k8s.io_*.yaml; do
    grep -q '^kind: CustomResourceDefinition' "$f" && cp "$f" "$dest.tmp/"
  done
  [ -s "$dest.tmp/gateway.networking.k8s.io_gateways.yaml" ] || { log "no Gateway CRD in $src/config/crd/standard"; exit 1; }
  chmod u+w "$dest.tmp"/*.yaml
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
  log "gateway-api v$GATEWAY_API_VERSION CRDs copied into $dest"
}

# The Gateway API conformance suite (e2e/go/conformance: our runner around sigs.k8s.io/gateway-api/conformance, its
# go test binary) and the suite's echo backend (echo-basic, which the node agent runs for the suite's pods). Rebuilt
# when the wrapper module's files change; its own unit tests run first.
build_conformance() {
  local dir="$HERE/go/conformance" dest="$LBC_CACHE/bin/gateway-api-$GATEWAY_API_VERSION" stamp
  stamp="$(cd "$dir" && cat go.mod go.sum *.go | sha256sum | cut -c1-16)"
  if [ -x "$dest/conformance.test" ] && [ -x "$dest/echo-basic" ] && [ "$(cat "$dest/conformance.stamp" 2>/dev/null)" = "$stamp" ]; then
    log "conformance suite v$GATEWAY_API_VERSION cached in $dest"; return
  fi
  mkdir -p "$dest"
  (cd "$dir" && go vet . && go test -count=1 . >&2 \
    && go test -c -o "$dest/conformance.test.tmp" . \
    && go build -o "$dest/echo-basic.tmp" "sigs.k8s.io/gateway-api/conformance/echo-basic")
  mv "$dest/conformance.test.tmp" "$dest/conformance.test" && mv "$dest/echo-basic.tmp" "$dest/echo-basic"
  echo "$stamp" > "$dest/conformance.stamp"
  log "conformance suite v$GATEWAY_API_VERSION and echo-basic built into $dest"
}

only="${ONLY:-etcd k8s kwok gatewayapi conformance}"
for t in $only; do "build_$t"; done
[ "$only" = jaeger ] || echo "$BIN"
