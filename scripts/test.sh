#!/usr/bin/env bash
# Every test of the workspace, with every feature (HDF5 included): installs
# what is missing (scripts/install-deps.sh), then runs cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export CHECKPOINTING_PYTHON="$PWD/.venv-test/bin/python"
cargo test --workspace --all-features "$@"
