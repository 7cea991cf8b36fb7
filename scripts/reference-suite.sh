#!/usr/bin/env bash
# The test suite of checkpoint_schedules 1.0.4 (tests/ of its sdist), run
# unchanged against the reference package itself (the control) and against
# the adjoint_checkpoints drop-in (a conftest.py calling
# adjoint_checkpoints.install_as_checkpoint_schedules(), as a user would). Both
# runs must give exactly the expected counts.
#
# The sdist is downloaded from the package index at test time into a
# temporary directory, never vendored (its licence is LGPL-3.0). A failed
# download fails this script.
#
# Needs a Python with pytest, the reference (checkpoint-schedules==1.0.4)
# and the adjoint_checkpoints package installed: .venv-test after
# scripts/install-deps.sh and `maturin develop` (scripts/test.sh does both),
# or $CHECKPOINTING_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${CHECKPOINTING_PYTHON:-$PWD/.venv-test/bin/python}"
version=1.0.4
expected="82 passed, 9 skipped"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== checkpoint_schedules $version test suite (sdist from the package index)"
if ! "$python" -m pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
    --dest "$work/sdist" "checkpoint-schedules==$version"; then
    echo "error: could not download the checkpoint-schedules $version sdist" >&2
    exit 1
fi
tar -xzf "$work/sdist/checkpoint_schedules-$version.tar.gz" -C "$work"
suite="$work/checkpoint_schedules-$version/tests"
for file in test_validity.py test_mixed.py test_multistage.py; do
    if [[ ! -f "$suite/$file" ]]; then
        echo "error: $file missing from the sdist's tests/" >&2
        exit 1
    fi
done

# Two copies of tests/, outside the sdist's root so that `import
# checkpoint_schedules` never finds its sources: each conftest.py checks
# which package the suite gets.
mkdir "$work/reference" "$work/ours"
cp "$suite"/test_*.py "$work/reference/"
cp "$suite"/test_*.py "$work/ours/"
cat >"$work/reference/conftest.py" <<'EOF'
import checkpoint_schedules

assert "adjoint_checkpoints" not in checkpoint_schedules.__name__, checkpoint_schedules
EOF
cat >"$work/ours/conftest.py" <<'EOF'
import sys

import adjoint_checkpoints

adjoint_checkpoints.install_as_checkpoint_schedules()
assert sys.modules["checkpoint_schedules"] is adjoint_checkpoints.checkpoint_schedules
EOF

# Runs the suite in $1; prints pytest's output and checks its counts.
run() {
    local dir="$1" label="$2" log counts
    log="$work/$label.log"
    local status=0
    (cd "$dir" && "$python" -m pytest -q -p no:cacheprovider -W "ignore:Numba not available" .) \
        >"$log" 2>&1 || status=$?
    tail -n 3 "$log"
    # "82 passed, 9 skipped, 2 warnings in 3.1s" -> "82 passed, 9 skipped"
    counts="$(tail -n 1 "$log" | grep -oE '[0-9]+ (passed|skipped|failed|errors?|xfailed|xpassed|deselected)' \
        | paste -sd, - | sed 's/,/, /g')"
    if [[ "$status" -ne 0 || "$counts" != "$expected" ]]; then
        cat "$log" >&2
        echo "error: the reference suite on $label gave \"$counts\" (exit $status), expected \"$expected\"" >&2
        exit 1
    fi
    echo "   $label: $counts (as expected)"
}

run "$work/reference" "checkpoint_schedules $version (control)"
run "$work/ours" "adjoint_checkpoints (drop-in)"
