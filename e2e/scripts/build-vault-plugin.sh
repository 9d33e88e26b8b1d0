#!/usr/bin/env bash
# Builds the AWS secrets-engine plugin the e2e OpenBao server mounts at aws/ (e2e/go/vault-aws-plugin: our wrapper
# around Vault v1.14's builtin/logical/aws, MPL-2.0) and prints the binary's path on stdout. Cached like
# build-bins.sh's binaries: $LBC_CACHE/bin/vault-aws-plugin-<hash of the wrapper's go.mod, go.sum, main.go>/, so a
# second run costs nothing and any change to the wrapper builds a new binary beside the old one.
#
#   LBC_CACHE   cache root (default ~/.cache/aws-lb-controller)
#
# First build: ~3 min on 2 cores with empty Go caches, module download included (docs/credentials.md, "Testing").
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$HERE/go/vault-aws-plugin"
LBC_CACHE="${LBC_CACHE:-$HOME/.cache/aws-lb-controller}"
key="$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-16)"
OUT="$LBC_CACHE/bin/vault-aws-plugin-$key"
log() { printf '[build-vault-plugin] %s\n' "$*" >&2; }

mkdir -p "$LBC_CACHE/bin"
exec 9>"$LBC_CACHE/bin/.vault-aws-plugin.lock"   # parallel tests may call bao.sh, hence this, at once
flock 9
if [ -x "$OUT/vault-aws-plugin" ]; then
  log "cached in $OUT"
else
  log "building Vault's AWS secrets engine as a plugin (first time: ~3 min on 2 cores)"
  rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
  # -mod=mod with the committed go.sum: modules are fetched and checked, go.mod is never rewritten by a build.
  (cd "$SRC" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod \
    go build -trimpath -ldflags "-s -w" -o "$OUT.tmp/vault-aws-plugin" .)
  mv "$OUT.tmp" "$OUT"
fi
echo "$OUT/vault-aws-plugin"
