#!/usr/bin/env bash
# Regenerates the revolve() fixtures of checkpointing-capi from the published
# code of Griewank and Walther's Algorithm 799 (ACM TOMS 26(1), 2000):
#
#     bash scripts/revolve-fixtures.sh DIR
#
# DIR holds the reference's C source and header: `src.c` and `revolve.h`, as
# in the `c/` folder of the first commits of the pyrevolve repository
# (devitocodes/pyrevolve, commit 91e23b3, "a very thin wrapper around the
# Revolve reference implementation"). The reference is compiled in a
# temporary directory, never copied into this repository; only what it
# prints is: the driver crates/checkpointing-capi/tests/revolve_fixtures.c
# (ours, written against the classic header) is linked with it, run for each
# scenario set, and its output written, xz-compressed and behind a header
# saying what produced it, to
# crates/checkpointing-capi/tests/fixtures/revolve/SET.txt.xz.
# crates/checkpointing-capi/run-c-tests.sh links the same driver with ours
# and compares byte for byte.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ref="${1:?usage: scripts/revolve-fixtures.sh DIR (with the reference src.c and revolve.h)}"
ref="$(cd "$ref" && pwd)"
for f in src.c revolve.h; do
    [ -f "$ref/$f" ] || { echo "missing $ref/$f" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$ref/src.c" "$ref/revolve.h" "$work/"
cc=(gcc -std=c11 -D_DEFAULT_SOURCE -O2)
# The reference as published (it predates -Wall -Werror).
"${cc[@]}" -w -c "$work/src.c" -o "$work/reference.o"
# Our driver, as strict as our own tests compile it.
"${cc[@]}" -Wall -Wextra -Werror -I "$work" \
    "$root/crates/checkpointing-capi/tests/revolve_fixtures.c" "$work/reference.o" \
    -o "$work/driver"
out="$root/crates/checkpointing-capi/tests/fixtures/revolve"
mkdir -p "$out"
src_sha="$(sha256sum "$ref/src.c" | cut -d' ' -f1)"
h_sha="$(sha256sum "$ref/revolve.h" | cut -d' ' -f1)"
for set in grid large online aux; do
    echo "== $set"
    {
        echo "# Output of crates/checkpointing-capi/tests/revolve_fixtures.c ($set) linked with"
        echo "# the published revolve.c of ACM TOMS Algorithm 799 (src.c sha256 $src_sha,"
        echo "# revolve.h sha256 $h_sha; pyrevolve commit 91e23b3, c/), compiled"
        echo "# with $(gcc --version | head -1). Regenerate: bash scripts/revolve-fixtures.sh DIR."
        timeout 600 "$work/driver" "$set"
    } | xz -9 > "$out/$set.txt.xz"
    ls -l "$out/$set.txt.xz"
done
