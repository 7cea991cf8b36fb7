#!/usr/bin/env bash
# Creates .venv-reference with the reference package checkpoint_schedules
# 1.0.4, used to regenerate fixtures and by the benchmarks. Tests do not need it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-reference
.venv-reference/bin/pip install -q --disable-pip-version-check checkpoint-schedules==1.0.4 numpy
