# Sourced by e2e/test-all and e2e/demo before they build: clippy-driver compiles the workspace crates (the
# workspace's rustc wrapper, as `cargo clippy` sets it for `cargo check`), so every build of ours is also the lint
# pass: the workspace lints ([workspace.lints]) and clippy's, as errors, as `cargo clippy --workspace --all-targets
# -- -D warnings` reports them. Dependencies are compiled by rustc alone, once: a separate `cargo clippy` compiles
# each of them a second time (metadata only; 308 s of a cold CI run). Every cargo command sharing a target
# directory needs the same two variables, or it rebuilds the workspace crates.
CLIPPY_DRIVER="$(rustc --print sysroot)/bin/clippy-driver"
if [ ! -x "$CLIPPY_DRIVER" ]; then
  echo "clippy-driver not found at $CLIPPY_DRIVER (rustup component add clippy)" >&2
  return 1
fi
export RUSTC_WORKSPACE_WRAPPER="$CLIPPY_DRIVER"
# clippy-driver's arguments, as cargo-clippy passes them (separated by __CLIPPY_HACKERY__).
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
