#!/usr/bin/env bash
# Every test of the workspace, with every feature (HDF5 included), then the
# Python package's: installs what is missing (scripts/install-deps.sh), runs
# cargo test, the C and Fortran programs of checkpointing-capi (gcc,
# gfortran, valgrind: crates/checkpointing-capi/run-c-tests.sh), builds the
# package into .venv-test with maturin (with the HDF5 store beside the
# default zfp; SZ3, tested in Rust above, is left out of this release build
# to keep CI's time) and runs pytest (the package's tests
# and the Python examples of the guide and the README),
# then the test suite of checkpoint_schedules 1.0.4 on the drop-in
# (scripts/reference-suite.sh; downloads its sdist, so needs the network),
# then pyrevolve 2.2.8's suite and Devito 4.8.23's checkpointing tests on
# adjoint_checkpoints.pyrevolve (scripts/pyrevolve-suite.sh ci; downloads sdists).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export CHECKPOINTING_PYTHON="$PWD/.venv-test/bin/python"
cargo test --workspace --all-features "$@"
bash crates/checkpointing-capi/run-c-tests.sh
echo "== Python package (maturin develop --release, pytest)"
VIRTUAL_ENV="$PWD/.venv-test" PATH="$PWD/.venv-test/bin:$PATH" \
    maturin develop --release --quiet --features zfp,hdf5 -m crates/checkpointing-py/Cargo.toml
# The native module's stubs against the module (stubtest), and a user's
# snippet under mypy --strict.
bash scripts/check-types.sh
# The guide's and the README's Python examples are doctests: --doctest-glob
# collects the `>>>` examples of every Markdown file under docs/src, and
# README.md's. --durations: the slowest tests are listed, to keep CI's time
# in view. On x86-64, XLA's CPU code is generated for AVX2 at most: several
# tests compare two separately compiled programs bit for bit (ours against
# lax.scan, taped against recomputed steps), which holds with AVX2 code but
# not with AVX-512 code, where XLA vectorizes the same step differently in
# different programs (last-bit differences, seen on an AVX-512 EPYC).
if [ "$(uname -m)" = x86_64 ]; then
    export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_cpu_max_isa=AVX2"
fi
(cd crates/checkpointing-py && ../../.venv-test/bin/python -m pytest -q -p no:cacheprovider --durations=15 \
    --doctest-modules --doctest-glob='*.md' python tests ../../docs/src ../../README.md)
# The reference's own test suite, fetched from the package index, on the
# reference (control) and on the drop-in: the counts must match.
bash scripts/reference-suite.sh
bash scripts/pyrevolve-suite.sh ci
