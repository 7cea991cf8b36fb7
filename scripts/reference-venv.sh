#!/usr/bin/env bash
# Creates .venv-reference, the benchmarks' venv of peers: the reference
# package checkpoint_schedules 1.0.4 (also used to regenerate fixtures),
# NumPy, and the lossy compressors the `lossy` bench compares with: zfpy
# (the zfp project's own Python bindings) and pysz (SZ3's). pyrevolve's
# pyzfp is not among them: its build downloads zfp from GitHub, which a
# machine without that network access cannot do; zfpy wraps the same
# library. Tests do not need this venv. Installed from
# scripts/requirements-reference.lock (scripts/lock-requirements.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-reference
.venv-reference/bin/pip install -q --disable-pip-version-check --require-hashes -r scripts/requirements-reference.lock
