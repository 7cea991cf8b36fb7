#!/usr/bin/env bash
# Builds the Python package as it is published and tries it as a new user
# would, on this machine but without Rust:
#   1. `maturin sdist`, then the wheel built from that sdist (so the sdist
#      is proven to build), with zig as the C compiler and linker against
#      glibc 2.17 (`--zig --compatibility manylinux2014`: ziglang from the
#      test lock), into target/wheels/;
#   2. `auditwheel show`: the wheel is abi3 and manylinux_2_17;
#   3. a fresh venv (target/wheel-venv) installs the wheel and NumPy, binary
#      only (PIP_ONLY_BINARY: nothing may build from source), with no
#      cargo, rustc or cmake on PATH;
#   4. tests/wheel_smoke.py there: schedules, plan, the drop-in, a zfp store,
#      the version;
#   5. the README's Python examples, as doctests, against the wheel's
#      package (JAX, diffrax and PyTorch are borrowed from .venv-test's
#      site-packages, appended to the path so the wheel's package comes
#      first).
# Needs .venv-test (scripts/install-deps.sh). Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
test_python=$root/.venv-test/bin/python
out=$root/target/wheels
rm -rf "$out" target/wheel-venv
mkdir -p "$out"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

echo "== sdist"
.venv-test/bin/maturin sdist -m crates/checkpointing-py/Cargo.toml -o "$out"
sdist=$(ls "$out"/adjoint_checkpoints-"$version".tar.gz)

echo "== wheel from the sdist (zig, glibc 2.17)"
# bindgen (zfp's bindings) parses zfp's headers with the system libclang;
# with zig as the target compiler it needs the compiler's and libc's
# include directories spelled out.
clang_include=$(dirname "$(ls /usr/lib/llvm-*/lib/clang/*/include/stddef.h | head -1)")
PATH="$root/.venv-test/bin:$PATH" \
    BINDGEN_EXTRA_CLANG_ARGS="-isystem $clang_include -isystem /usr/include/$(gcc -dumpmachine) -isystem /usr/include" \
    MATURIN_PEP517_ARGS="--zig --compatibility manylinux2014" \
    CARGO_TARGET_DIR="$root/target" \
    .venv-test/bin/pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
    -w "$out" "$sdist"
wheel=$(ls "$out"/adjoint_checkpoints-"$version"-cp39-abi3-*manylinux_2_17_x86_64*.whl)
echo "built $(basename "$sdist") and $(basename "$wheel")"

echo "== auditwheel show"
.venv-test/bin/auditwheel show "$wheel" | tee target/wheels/auditwheel.txt
grep -q '"manylinux_2_17_x86_64"' target/wheels/auditwheel.txt

echo "== a fresh venv without Rust: install the wheel"
python3 -m venv target/wheel-venv
# NumPy as the test lock pins it, and the wheel, both with their hashes.
requirements=target/wheel-venv/requirements.txt
awk '/^numpy==/ {keep = 1; print; next} keep && /^    / {print; next} {keep = 0}' \
    scripts/requirements-test.lock > "$requirements"
echo "adjoint-checkpoints @ file://$wheel --hash=sha256:$(sha256sum "$wheel" | cut -d' ' -f1)" >> "$requirements"
no_rust_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '\.cargo' -e rustup | paste -sd: -)
no_rust_path="$root/target/wheel-venv/bin:$no_rust_path"
mkdir -p target/wheel-venv/no-tools
for tool in cmake cc gcc; do ln -sf /bin/false "target/wheel-venv/no-tools/$tool"; done
no_rust_path="$root/target/wheel-venv/no-tools:$no_rust_path"
PATH="$no_rust_path" PIP_ONLY_BINARY=":all:" target/wheel-venv/bin/pip install --quiet \
    --disable-pip-version-check --require-hashes -r "$requirements"

echo "== smoke test from the wheel"
(cd /tmp && PATH="$no_rust_path" "$root/target/wheel-venv/bin/python" \
    "$root/crates/checkpointing-py/tests/wheel_smoke.py" "$version" "$root/target/wheel-venv")

echo "== the README's Python examples, from the wheel"
site=$(target/wheel-venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
test_site=$("$test_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "import site; site.addsitedir('$test_site')" > "$site/zz-venv-test.pth"
(cd /tmp && PATH="$no_rust_path" "$root/target/wheel-venv/bin/python" -c \
    "import adjoint_checkpoints, sys; assert sys.argv[1] in adjoint_checkpoints.__file__, adjoint_checkpoints.__file__" \
    "$root/target/wheel-venv/")
PATH="$no_rust_path" target/wheel-venv/bin/python -m pytest -q -p no:cacheprovider --rootdir=/tmp \
    --doctest-glob=README.md README.md
