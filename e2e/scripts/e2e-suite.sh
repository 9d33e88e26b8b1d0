#!/usr/bin/env bash
# e2e/scripts/e2e-suite.sh [--except M1,M2] [MODULE...]: runs the end-to-end suite (e2e/tests/e2e, one test binary)
# one module at a time, every module even after a failure. Tests of a module may run side by side
# (--test-threads=2); tests of different modules never do against the same environment (they share it, and some
# watch every namespace or inject faults for every caller). Without MODULE every module runs but those named by
# --except. Needs a running environment (e2e/up) and its variables: `$LBC_E2E_ENV` (default e2e/.run/env).
# Exit status 0 only if every test of every module passed.
#
# The test binary is run directly (not through `cargo test`, which holds the target directory's lock for as long
# as the tests run): so two suites can run at once against two environments (e2e/test-all's lanes).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"

except=""
if [ "${1:-}" = "--except" ]; then
  [ "$#" -ge 2 ] || { echo "e2e-suite: --except needs a comma-separated list of modules" >&2; exit 2; }
  except="$2"; shift 2
fi

# Build (or find) the test binary: the last artifact of the e2e test target.
# `--workspace --test e2e`: the workspace's dependency features, as e2e/test-all's build (no rebuild).
exe="$(cargo test -q --workspace --test e2e --no-run --message-format=json \
  | python3 -c 'import json,sys
exe = [m["executable"] for m in map(json.loads, sys.stdin)
       if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "e2e"]
print(exe[-1] if exe else "")')" || { echo "e2e-suite: building the e2e test binary failed" >&2; exit 1; }
[ -x "$exe" ] || { echo "e2e-suite: no e2e test binary found (cargo test --workspace --test e2e --no-run)" >&2; exit 1; }
# What `cargo test` gives a test process: the package directory as working directory and CARGO_MANIFEST_DIR.
run_tests() { (cd "$ROOT/e2e" && CARGO_MANIFEST_DIR="$ROOT/e2e" "$exe" "$@"); }

# Every test, ignored or not, as "module::...: test" lines.
list="$(run_tests --list --include-ignored)" || { echo "$list"; exit 1; }
mapfile -t tests < <(sed -n 's/: test$//p' <<<"$list")
[ "${#tests[@]}" -gt 0 ] || { echo "e2e-suite: no tests listed: $list"; exit 1; }
mapfile -t modules < <(printf '%s\n' "${tests[@]}" | cut -d: -f1 | sort -u)
is_module() { printf '%s\n' "${modules[@]}" | grep -qx "$1"; }
if [ "$#" -gt 0 ]; then
  for m in "$@"; do is_module "$m" || { echo "e2e-suite: no module $m (modules: ${modules[*]})"; exit 2; }; done
  modules=("$@")
fi
skipped=()
if [ -n "$except" ]; then
  IFS=, read -r -a skipped <<<"$except"
  for m in "${skipped[@]}"; do is_module "$m" || { echo "e2e-suite: --except names no module $m (modules: ${modules[*]})"; exit 2; }; done
  mapfile -t modules < <(printf '%s\n' "${modules[@]}" | grep -vxF -f <(printf '%s\n' "${skipped[@]}"))
fi

failed=()
ran=0
for m in "${modules[@]}"; do
  mapfile -t names < <(printf '%s\n' "${tests[@]}" | grep "^$m::")
  ran=$((ran + ${#names[@]}))
  start=$(date +%s)
  printf '\n--- e2e module %s (%d tests)\n' "$m" "${#names[@]}"
  run_tests --include-ignored --test-threads=2 --exact "${names[@]}" || failed+=("$m")
  printf -- '--- e2e module %s: %ss\n' "$m" "$(( $(date +%s) - start ))"
done
if [ "$#" -eq 0 ] && [ -z "$except" ] && [ "$ran" -ne "${#tests[@]}" ]; then
  echo "e2e-suite: ran $ran of ${#tests[@]} tests: a test outside every module?"; exit 1
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "e2e-suite: failed modules: ${failed[*]} (rerun one: e2e/scripts/e2e-suite.sh ${failed[0]})"
  exit 1
fi
echo "e2e-suite: $ran tests in ${#modules[@]} modules passed"
