#!/usr/bin/env bash
# e2e/scripts/advisories.sh CARGO_DENY: checks Cargo.lock against the RustSec advisory database, offline, from the
# snapshot next to this checkout (../shared/advisory-db/advisory-db-*.tar.gz, or $LBC_ADVISORY_SNAPSHOT): the
# machines reach no git host. Prints the snapshot's date: advisories published after it are not known to the check.
# Without a snapshot it says so loudly and checks nothing (exit 0): that is a gap of the machine, not of the code.
#
# The snapshot is unpacked once into ~/.cache/aws-lb-controller/advisory-db/<its sha256>/, under the directory name
# cargo-deny 0.20 derives from the default database URL, as a one-commit git repository dated like the snapshot
# (cargo-deny reads the HEAD commit's time). Findings: deny.toml's [advisories] says what fails the run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DENY="${1:?usage: e2e/scripts/advisories.sh CARGO_DENY}"
# cargo-deny 0.20.2's directory for its default database (the name it derives from the URL).
DB_NAME=advisory-db-3157b0e258782691

snap="${LBC_ADVISORY_SNAPSHOT:-}"
if [ -z "$snap" ]; then
  snap="$(ls "$ROOT"/../shared/advisory-db/advisory-db-*.tar.gz 2>/dev/null | tail -n 1 || true)"
fi
if [ -z "$snap" ] || [ ! -f "$snap" ]; then
  echo "ADVISORIES NOT CHECKED: no RustSec snapshot at ../shared/advisory-db/advisory-db-*.tar.gz next to this" \
    "checkout, nor LBC_ADVISORY_SNAPSHOT (this machine cannot fetch the database)"
  exit 0
fi

key="$(sha256sum "$snap" | cut -c1-16)"
base="$HOME/.cache/aws-lb-controller/advisory-db/$key"
db="$base/$DB_NAME"
if [ ! -f "$base/.ready" ]; then
  rm -rf "$base"
  mkdir -p "$db"
  tar -xzf "$snap" -C "$db"
  # The snapshot's date: the newest advisory it holds.
  date="$(grep -rhoE '^date = "[0-9]{4}-[0-9]{2}-[0-9]{2}"' "$db/crates" | cut -d'"' -f2 | sort | tail -n 1)"
  [ -n "$date" ] || { echo "advisories: $snap holds no advisory (crates/*/*.md with a date)" >&2; exit 1; }
  (
    cd "$db"
    git init -q
    git add -A
    GIT_AUTHOR_DATE="${date}T00:00:00Z" GIT_COMMITTER_DATE="${date}T00:00:00Z" \
      git -c user.name=lbc -c user.email=lbc@localhost commit -q -m "RustSec snapshot $(basename "$snap")"
  )
  echo "$date" >"$base/.date"
  touch "$base/.ready"
fi
date="$(cat "$base/.date")"
count="$(find "$db/crates" -name '*.md' | wc -l)"

# deny.toml with db-path pointing at the unpacked snapshot (cargo-deny has no flag for it).
config="$(mktemp)"
trap 'rm -f "$config"' EXIT
sed "s|^db-path = .*|db-path = \"$base\"|" "$ROOT/deny.toml" >"$config"
grep -q "^db-path = \"$base\"" "$config" || { echo "advisories: deny.toml has no [advisories] db-path line to point at $base" >&2; exit 1; }

# Control: the same check against a copy of the snapshot plus one made-up advisory for a crate of Cargo.lock (itoa,
# every version; an ID of the year 2000, before any real one: cargo-deny skips an ID it cannot parse, such as a
# year 0000) must fail naming it, or a pass below would prove nothing (a database not read, a wrong path).
control="$(mktemp -d)"
trap 'rm -f "$config"; rm -rf "$control"' EXIT
cp -r "$db" "$control/$DB_NAME"
mkdir -p "$control/$DB_NAME/crates/itoa"
cat >"$control/$DB_NAME/crates/itoa/RUSTSEC-2000-0001.md" <<'MD'
```toml
[advisory]
id = "RUSTSEC-2000-0001"
package = "itoa"
date = "2000-01-01"

[versions]
patched = []
```

# Control advisory of e2e/scripts/advisories.sh

Not a real advisory: every version of itoa is affected, so the check must fail.
MD
(cd "$control/$DB_NAME" && git add -A && git -c user.name=lbc -c user.email=lbc@localhost commit -q -m control)
sed "s|^db-path = .*|db-path = \"$control\"|" "$ROOT/deny.toml" >"$config.control"
if out="$(cd "$ROOT" && "$DENY" --offline --config "$config.control" --log-level warn check advisories 2>&1)"; then
  echo "advisories: the control passed: a made-up advisory for itoa was not reported, so the check reads no database" >&2
  exit 1
fi
rm -f "$config.control"
grep -q RUSTSEC-2000-0001 <<<"$out" || { echo "advisories: the control failed for another reason:" >&2; echo "$out" >&2; exit 1; }

echo "advisories: checked against the RustSec snapshot of $date ($(basename "$snap"), $count advisories; the control" \
  "advisory was caught); later ones are not known here"
(cd "$ROOT" && "$DENY" --offline --config "$config" --log-level warn check advisories)
