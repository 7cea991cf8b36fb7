#!/usr/bin/env bash
# Creates .venv-bench, the venv of the PyTorch bench's peers
# (crates/checkpointing-py/bench/bench_torch.py): rockmate 2.0.0 with its
# graph builder rkgb 2.0.0 and the ILP front end pulp 2.7.0. Bench peers
# only: the tests and CI do not use this venv.
#
# It does not download torch (a CUDA wheel of several GB): a .pth file
# makes .venv-test's site-packages (torch, psutil, and the adjoint_checkpoints
# package built there) visible to this venv, so set up .venv-test first.
#
# Two packaging faults of the PyPI releases are mended here:
# - rkgb 2.0.0's sdist/wheel holds only rkgb/__init__.py and rkgb/rkgb.py
#   (its subpackages core/, lowlevel/, utils/ have no __init__.py, so
#   setuptools' `packages=find:` left them out) and `import rkgb` fails;
#   they are copied from the rockmate repository at the commit of the 2.0.0
#   release (its rkgb/src/rkgb/rkgb.py and rockmate sources match the PyPI
#   files), from $RKGB_SRC (a checkout's rkgb/src/rkgb) if set, else from
#   GitHub's archive of that commit;
# - rockmate 2.0.0 imports yaml without requiring it: pyyaml is installed.
#
# The packages come from scripts/requirements-bench.lock (exact versions and
# hashes, resolved against .venv-test's lock by scripts/lock-requirements.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROCKMATE_COMMIT=aabc29b45b7c430d7d3227066874bd8797473018
test -d .venv-test || { echo "bench-venv.sh: .venv-test is missing (it provides torch)" >&2; exit 1; }
python3 -m venv .venv-bench
site=$(.venv-bench/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
test_site=$(.venv-test/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# addsitedir, not a bare path, so that .venv-test's own .pth files
# (adjoint_checkpoints.pth) are read too; it appends: this venv's packages win.
echo "import site; site.addsitedir('$test_site')" > "$site/zz-venv-test.pth"
.venv-bench/bin/pip install -q --disable-pip-version-check --require-hashes --no-deps \
    -r scripts/requirements-bench.lock
if [ -z "${RKGB_SRC:-}" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    curl -fsSL "https://github.com/topal-team/rockmate/archive/$ROCKMATE_COMMIT.tar.gz" | tar -xz -C "$tmp"
    RKGB_SRC="$tmp/rockmate-$ROCKMATE_COMMIT/rkgb/src/rkgb"
fi
for sub in core lowlevel utils; do
    rm -rf "$site/rkgb/$sub"
    cp -r "$RKGB_SRC/$sub" "$site/rkgb/$sub"
done
.venv-bench/bin/pip check
.venv-bench/bin/python -c 'import torch, rockmate; print("torch", torch.__version__, "and rockmate import")'
