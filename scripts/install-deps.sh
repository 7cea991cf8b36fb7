#!/usr/bin/env bash
# Installs what the full test suite needs beyond a Rust toolchain, if it is
# missing: the HDF5 C library (Debian's libhdf5-dev, for the `hdf5` features);
# MPICH and libclang (checkpointing-mpi: rsmpi generates its bindings with
# bindgen); and a Python venv `.venv-test` with h5py and NumPy (a test reads
# an HDF5 snapshot back from Python), and maturin, pytest, JAX, equinox and
# the reference checkpoint-schedules 1.0.4 (the Python package's tests), as
# locked in scripts/requirements-test.lock (exact versions and hashes;
# scripts/lock-requirements.sh refreshes it from requirements-test.in); gcc, gfortran, pkg-config and
# valgrind (checkpointing-capi's C and Fortran examples and tests, run by
# crates/checkpointing-capi/run-c-tests.sh), xz (its revolve() fixtures),
# cmake and libzstd-dev (zfp and SZ3, built from source).
# Idempotent; uses apt-get (via sudo when not root) and pip.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

packages=()
pkg-config --exists hdf5 2>/dev/null || packages+=(libhdf5-dev pkg-config)
{ command -v mpicc && command -v mpiexec; } >/dev/null || packages+=(libmpich-dev mpich)
# libclang itself, not libclang-cpp (which bindgen cannot use).
{ compgen -G "/usr/lib/llvm-*/lib/libclang.so*" || compgen -G "/usr/lib/*/libclang-[0-9]*.so*"; } \
    >/dev/null || packages+=(libclang-dev)
command -v gcc >/dev/null || packages+=(gcc libc6-dev)
command -v gfortran >/dev/null || packages+=(gfortran)
command -v pkg-config >/dev/null || packages+=(pkg-config)
command -v valgrind >/dev/null || packages+=(valgrind)
command -v xz >/dev/null || packages+=(xz-utils)
# cmake and Zstandard's headers: zfp-sys and sz3-sys build zfp and SZ3 from
# source (checkpointing-store's `zfp` and `sz3` features); without a system
# libzstd, SZ3's cmake would try to download one.
command -v cmake >/dev/null || packages+=(cmake)
pkg-config --exists libzstd 2>/dev/null || packages+=(libzstd-dev)
command -v python3 >/dev/null || packages+=(python3)
if command -v python3 >/dev/null && ! python3 -c "import venv, ensurepip" 2>/dev/null; then
    packages+=(python3-venv)
fi
if [ ${#packages[@]} -gt 0 ]; then
    echo "== apt-get install ${packages[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${packages[@]}" >/dev/null
fi

requirements=scripts/requirements-test.lock
stamp=.venv-test/requirements.sha256
if ! { [ -x .venv-test/bin/python ] && sha256sum --check --status "$stamp" 2>/dev/null; }; then
    echo "== Python venv .venv-test: $requirements"
    rm -rf .venv-test
    python3 -m venv .venv-test
    .venv-test/bin/pip install --quiet --disable-pip-version-check --require-hashes -r "$requirements"
    sha256sum "$requirements" > "$stamp"
fi
