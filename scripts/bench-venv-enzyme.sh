#!/usr/bin/env bash
# Creates .venv-enzyme, the venv of the JAX bench's Enzyme-JAX peer
# (crates/checkpointing-py/bench/bench_jax.py --enzyme-only): enzyme-ad
# 0.0.16 (Python 3.11 wheel, Linux x86_64) with the jax and jaxlib of
# .venv-test, pinned to the same versions. Bench peer only: the tests and
# CI do not use this venv.
#
# It does not download jax again: a .pth file makes .venv-test's
# site-packages (jax, jaxlib, numpy, and the adjoint_checkpoints package built
# there) visible to this venv, so set up .venv-test first; enzyme-ad and
# absl-py are then installed from scripts/requirements-enzyme.lock (exact
# versions and hashes, resolved against the test lock's jax and jaxlib by
# scripts/lock-requirements.sh; enzyme-ad's own requirement is only
# jax >= 0.8.0), and the check below fails if .venv-test's jax is not the
# lock's. VENV_TEST names another test venv (a git worktree's checkout can
# use its main checkout's).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV_TEST=${VENV_TEST:-.venv-test}
test -d "$VENV_TEST" || { echo "bench-venv-enzyme.sh: $VENV_TEST is missing (it provides jax)" >&2; exit 1; }
jax_version=$(sed -n 's/^jax==\([^ ]*\) .*/\1/p' scripts/requirements-test.lock)
"$VENV_TEST/bin/python" -m venv .venv-enzyme
.venv-enzyme/bin/python -c 'import sys; assert sys.version_info[:2] == (3, 11), "enzyme-ad 0.0.16 has a py311 wheel only"'
site=$(.venv-enzyme/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
test_site=$("$VENV_TEST/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# addsitedir, not a bare path, so that .venv-test's own .pth files
# (adjoint_checkpoints.pth) are read too; it appends: this venv's packages win.
echo "import site; site.addsitedir('$test_site')" > "$site/zz-venv-test.pth"
.venv-enzyme/bin/pip install -q --disable-pip-version-check --require-hashes --no-deps \
    -r scripts/requirements-enzyme.lock
# (Not `pip check`: it also reports .venv-test's own packages, e.g. torch's
# setuptools pin, which are no concern of this venv.)
.venv-enzyme/bin/python - "$jax_version" <<'EOF'
import sys
import jax, jaxlib, enzyme_ad.jax
assert jax.__version__ == jaxlib.__version__ == sys.argv[1], (jax.__version__, jaxlib.__version__)
print("jax", jax.__version__, "and enzyme_ad.jax import")
EOF
