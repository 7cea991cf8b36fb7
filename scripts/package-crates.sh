#!/usr/bin/env bash
# Packages every crate of the workspace meant for crates.io (every member
# without `publish = false`), in dependency order, and verifies each: cargo
# builds it from its .crate file, resolving the workspace's other crates to
# their freshly made .crate files (a local overlay), so that nothing needs to
# be on crates.io yet. What a package holds is `include` in the workspace's
# Cargo.toml (the library and README; the tests stay in the repository, so
# cargo warns that it ignores them).
#
#   scripts/package-crates.sh               # package and verify (a full build of each)
#   scripts/package-crates.sh --no-verify   # package only (seconds)
#
# Other arguments go to `cargo package` (e.g. --allow-dirty). The packages
# land in target/package/. Verifying builds checkpointing-mpi, which needs an
# MPI implementation (mpicc), as the workspace's own build does.
set -euo pipefail
cd "$(dirname "$0")/.."

crates=$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
members = set(meta["workspace_members"])
for package in meta["packages"]:
    # publish = false is an empty list of registries.
    if package["id"] in members and package["publish"] != []:
        print(package["name"])
')
version=$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "checkpointing"))
')
# cargo extracts the overlay's .crate files under $CARGO_HOME/registry once
# per version, and builds them once per version (a registry crate does not
# change): with an unchanged version number, a later run would verify
# against an earlier run's sources or builds. Forget both.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
args=()
for crate in $crates; do
    args+=(-p "$crate")
    rm -rf "$cargo_home"/registry/src/*/"$crate-$version" "$cargo_home"/registry/cache/*/"$crate-$version.crate"
    cargo clean -q -p "$crate"
done
echo "packaging: $crates" | tr '\n' ' '
echo
cargo package "${args[@]}" "$@"
