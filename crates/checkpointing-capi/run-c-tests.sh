#!/usr/bin/env bash
# Builds libcheckpointing_capi with cargo, compiles the C and Fortran
# examples and tests against it with gcc and gfortran (through the generated
# pkg-config file), runs them, and runs the C programs under valgrind
# (--error-exitcode=1, full leak check) when valgrind is installed, then
# compares revolve() with the published Algorithm 799, call for call, over
# the fixtures of tests/fixtures/revolve (xz-compressed).
# Respects CARGO_TARGET_DIR (default: target/ at the workspace root). Called
# by scripts/test.sh; needs gcc, gfortran, pkg-config, valgrind and xz
# (scripts/install-deps.sh installs them).
set -euo pipefail
crate="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$crate/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

echo "== checkpointing-capi: cargo build (cdylib + staticlib)"
(cd "$root" && cargo build --quiet -p checkpointing-capi)
libdir="$target/debug"
out="$target/capi-c-tests"
mkdir -p "$out/pkgconfig"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)"
sed -e "s|@PREFIX@|$crate|" -e "s|@LIBDIR@|$libdir|" -e "s|@VERSION@|$version|" \
    "$crate/checkpointing.pc.in" > "$out/pkgconfig/checkpointing.pc"
export PKG_CONFIG_PATH="$out/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
cflags="$(pkg-config --cflags checkpointing)"
libs="$(pkg-config --libs checkpointing)"
static_libs="$libdir/libcheckpointing_capi.a $(pkg-config --libs-only-l --static checkpointing | sed 's/-lcheckpointing_capi//')"
warn=(-std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -O2 -g)

echo "== compile (gcc, gfortran)"
# heat: the static library; the others: the shared one.
gcc "${warn[@]}" $cflags "$crate/examples/heat.c" -o "$out/heat" $static_libs -lm
gcc "${warn[@]}" $cflags "$crate/examples/readme.c" -o "$out/readme" $libs -lm
gcc "${warn[@]}" $cflags "$crate/tests/revolve_classic.c" -o "$out/revolve_classic" $libs -lm
gcc "${warn[@]}" $cflags "$crate/tests/bad_input.c" -o "$out/bad_input" $libs
# Written for the classic revolve.h of Algorithm 799 (maxrange and adjust
# included), unchanged.
gcc "${warn[@]}" $cflags "$crate/tests/revolve_fixtures.c" -o "$out/revolve_fixtures" $libs
gfortran -std=f2008 -Wall -Werror -O2 -g -J "$out" -c "$crate/fortran/checkpointing.f90" \
    -o "$out/checkpointing_f.o"
gfortran -std=f2008 -Wall -Werror -O2 -g -I "$out" -J "$out" "$crate/examples/heat.f90" \
    "$out/checkpointing_f.o" -o "$out/heat_f" $static_libs
gfortran -std=f2008 -Wall -Werror -O2 -g -I "$out" -J "$out" "$crate/examples/readme.f90" \
    "$out/checkpointing_f.o" -o "$out/readme_f" $libs
gfortran -std=f2008 -Wall -Werror -O2 -g -I "$out" -J "$out" "$crate/tests/revolve_grid.f90" \
    "$out/checkpointing_f.o" -o "$out/revolve_grid_f" $libs

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
passed=0
failed=0
run() {
    local name="$1"
    shift
    echo "== $name"
    if "$@"; then passed=$((passed + 1)); else echo "FAILED: $name"; failed=$((failed + 1)); fi
}
for program in heat readme revolve_classic bad_input heat_f readme_f; do
    run "$program" "$out/$program"
done
if command -v valgrind >/dev/null; then
    # The programs' output was shown above; valgrind's reports go to stderr.
    valgrind_quiet() {
        valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
            "$@" >/dev/null
    }
    for program in heat readme revolve_classic bad_input; do
        run "valgrind $program" valgrind_quiet "$out/$program"
    done
else
    echo "valgrind not installed: skipped (scripts/install-deps.sh installs it)"
fi
# revolve() against the published Algorithm 799: the fixtures hold what the
# driver printed linked with the published revolve.c
# (scripts/revolve-fixtures.sh); linked with ours it must print the same,
# byte for byte, under valgrind where installed.
same_as_fixture() {
    local set="$1" fixture="$crate/tests/fixtures/revolve/$1.txt.xz"
    local under=()
    if command -v valgrind >/dev/null; then
        under=(valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite)
    fi
    "${under[@]}" "$out/revolve_fixtures" "$set" > "$out/revolve_$set.txt" || return 1
    if ! xz -dc "$fixture" | sed '/^# /d' | cmp - "$out/revolve_$set.txt"; then
        xz -dc "$fixture" | sed '/^# /d' | diff - "$out/revolve_$set.txt" | head -20
        return 1
    fi
}
for set in grid large online aux; do
    run "revolve() = Algorithm 799: $set" same_as_fixture "$set"
done
# The same from Fortran, through the module (the grid set).
fortran_same_as_fixture() {
    "$out/revolve_grid_f" > "$out/revolve_grid_f.txt" || return 1
    xz -dc "$crate/tests/fixtures/revolve/grid.txt.xz" | sed '/^# /d' | cmp - "$out/revolve_grid_f.txt"
}
run "Fortran revolve() = Algorithm 799: grid" fortran_same_as_fixture
echo "checkpointing-capi C/Fortran: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
