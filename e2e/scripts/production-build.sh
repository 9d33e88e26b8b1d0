#!/usr/bin/env bash
# e2e/scripts/production-build.sh: builds the controller as users build it (`cargo build -p aws-lb-controller`: its
# own features, no dev-dependency), proves from cargo's build plan that lbc-aws was compiled without its `fake`
# feature (the AWS fakes exist for tests only), copies the binary to $CARGO_TARGET_DIR/production/ and prints its
# path on the last line. Control first: the workspace build with its tests does compile the fakes in (dev-dependency
# features unify), and the same check must see them there, or it could not fail.
# Shares e2e/test-all's cargo settings (CARGO_TARGET_DIR, the clippy wrapper), or the workspace crates rebuild.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
TARGET="${CARGO_TARGET_DIR:-target}"

# lbc_aws_features: reads cargo's JSON messages on stdin, prints the features lbc-aws was compiled with (one line,
# comma-separated, "-" for none); fails when lbc-aws is not in the build.
lbc_aws_features() {
  python3 -c 'import json, sys
seen = [m for m in map(json.loads, sys.stdin)
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "lbc_aws" and "lib" in m["target"]["kind"]]
if not seen:
    sys.exit("production-build: lbc-aws is not in the build plan: expected the controller to depend on it")
print(",".join(sorted({f for m in seen for f in m["features"]})) or "-")'
}

control="$(cargo build -q --workspace --all-targets --message-format=json | lbc_aws_features)"
[[ ",$control," == *,fake,* ]] || {
  echo "production-build: the control failed: the workspace build with tests compiled lbc-aws with features '$control'," \
    "expected 'fake' among them (controller/Cargo.toml's dev-dependency): the check below would prove nothing" >&2
  exit 1
}

plan="$(cargo build -q -p aws-lb-controller --bin aws-lb-controller --message-format=json)"
features="$(lbc_aws_features <<<"$plan")"
if [[ ",$features," == *,fake,* ]]; then
  echo "production-build: lbc-aws was compiled with its test fakes (features '$features') into the controller users" \
    "build: some [dependencies] entry turns on lbc-aws/fake; it belongs in [dev-dependencies] only" >&2
  exit 1
fi
exe="$(python3 -c 'import json, sys
exe = [m["executable"] for m in map(json.loads, sys.stdin)
       if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "aws-lb-controller"]
print(exe[-1] if exe else "")' <<<"$plan")"
[ -x "$exe" ] || { echo "production-build: cargo built no aws-lb-controller executable" >&2; exit 1; }
mkdir -p "$TARGET/production"
cp "$exe" "$TARGET/production/aws-lb-controller.tmp"
mv "$TARGET/production/aws-lb-controller.tmp" "$TARGET/production/aws-lb-controller"
echo "production-build: lbc-aws features '$features' (no fake); the test build's: '$control'" >&2
echo "$(cd "$TARGET/production" && pwd)/aws-lb-controller"
