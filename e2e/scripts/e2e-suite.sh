#!/usr/bin/env bash
# e2e/scripts/e2e-suite.sh [MODULE...]: runs the end-to-end suite (e2e/tests/e2e, one test binary) one module at a
# time, every module even after a failure. Tests of a module may run side by side (--test-threads=2); tests of
# different modules never do (they share the environment and some count every call the emulator answered).
# Without arguments every module runs; needs the local environment (e2e/up) and its variables (e2e/.run/env).
# Exit status 0 only if every test of every module passed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# Every test, ignored or not, as "module::...: test" lines.
list="$(cargo test -q -p lbc-e2e --test e2e -- --list --include-ignored)" || { echo "$list"; exit 1; }
mapfile -t tests < <(sed -n 's/: test$//p' <<<"$list")
[ "${#tests[@]}" -gt 0 ] || { echo "e2e-suite: no tests listed: $list"; exit 1; }
mapfile -t modules < <(printf '%s\n' "${tests[@]}" | cut -d: -f1 | sort -u)
if [ "$#" -gt 0 ]; then
  for m in "$@"; do
    printf '%s\n' "${modules[@]}" | grep -qx "$m" || { echo "e2e-suite: no module $m (modules: ${modules[*]})"; exit 2; }
  done
  modules=("$@")
fi

failed=()
ran=0
for m in "${modules[@]}"; do
  mapfile -t names < <(printf '%s\n' "${tests[@]}" | grep "^$m::")
  ran=$((ran + ${#names[@]}))
  printf '\n--- e2e module %s (%d tests)\n' "$m" "${#names[@]}"
  cargo test -p lbc-e2e --test e2e -- --include-ignored --test-threads=2 --exact "${names[@]}" || failed+=("$m")
done
if [ "$#" -eq 0 ] && [ "$ran" -ne "${#tests[@]}" ]; then
  echo "e2e-suite: ran $ran of ${#tests[@]} tests: a test outside every module?"; exit 1
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "e2e-suite: failed modules: ${failed[*]} (rerun one: e2e/scripts/e2e-suite.sh ${failed[0]})"
  exit 1
fi
echo "e2e-suite: $ran tests in ${#modules[@]} modules passed"
