#!/usr/bin/env bash
# Creates or updates the Python venv for the AWS emulator (e2e/emulator), OpenBao (e2e/bao) and the benchmarks'
# plots (bench/) and prints its path on stdout. Idempotent: reinstalls only when one of their requirements.txt (or
# the python3 version) changed; the hash of all of them is kept in the venv. Everything but the path goes to stderr.
#
#   LBC_CACHE   cache root (default ~/.cache/aws-lb-controller); the venv is $LBC_CACHE/venv
#   PYTHON      interpreter to build the venv from (default python3)
#
# Usage:  VENV="$(e2e/scripts/venv.sh)" && "$VENV/bin/python" e2e/emulator/awsemu.py --port 4566
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
REQS=("$HERE/emulator/requirements.txt" "$HERE/bao/requirements.txt" "$HERE/../bench/requirements.txt")
LBC_CACHE="${LBC_CACHE:-$HOME/.cache/aws-lb-controller}"
VENV="$LBC_CACHE/venv"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.requirements.sha256"
log() { printf '[venv] %s\n' "$*" >&2; }

mkdir -p "$LBC_CACHE"
exec 9>"$LBC_CACHE/.venv.lock"   # serialise concurrent callers
flock 9

want="$( { cat "${REQS[@]}"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ] \
   && "$VENV/bin/python" -c 'import moto, boto3, pytest, matplotlib' 2>/dev/null && [ -x "$VENV/bin/bao" ]; then
  echo "$VENV"; exit 0
fi
if ! [ -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' 2>/dev/null \
   || [ "$("$VENV/bin/python" -c 'import sys; print(sys.version)')" != "$("$PYTHON" -c 'import sys; print(sys.version)')" ]; then
  log "creating $VENV"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
fi
log "installing ${REQS[*]#"$HERE/"} into $VENV"
rm -f "$STAMP"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "${REQS[@]/#/--requirement=}" >&2
echo "$want" > "$STAMP"
echo "$VENV"
