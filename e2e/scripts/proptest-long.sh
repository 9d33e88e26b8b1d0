#!/usr/bin/env bash
# The long property-test run (docs/testing.md): every property of model/, aws/ and webhook/ with
# the same number of cases, at least LBC_PROPTEST_TOTAL (default 1,000,000) in all. Our crates and
# proptest are built optimised; their dependencies stay as in the debug build (no SDK rebuild).
# Prints the number of properties, cases per property, the total and the time taken.
set -euo pipefail
cd "$(dirname "$0")/../.."
total=${LBC_PROPTEST_TOTAL:-1000000}
opt=()
for p in lbc-model lbc-aws lbc-webhook proptest; do
  opt+=(--config "profile.dev.package.$p.opt-level=3")
done
suites=("-p lbc-model --test props" "-p lbc-aws --lib props" "-p lbc-webhook --lib review_props")

count() { # suite, extra libtest args: how many tests it would run
  # shellcheck disable=SC2086
  cargo test -q "${opt[@]}" $1 -- --list "${@:2}" 2>/dev/null | grep -c ': test$' || true
}

props=0
for s in "${suites[@]}"; do
  n=$(( $(count "$s") - $(count "$s" --ignored) ))
  echo "$s: $n properties"
  props=$((props + n))
done
cases=$(( (total + props - 1) / props ))
echo "running $props properties x $cases cases = $((props * cases)) cases"
start=$(date +%s)
for s in "${suites[@]}"; do
  # shellcheck disable=SC2086
  PROPTEST_CASES=$cases cargo test -q "${opt[@]}" $s
done
end=$(date +%s)
echo "property tests: $props properties x $cases cases = $((props * cases)) cases in $((end - start)) s"
