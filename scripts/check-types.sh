#!/usr/bin/env bash
# The Python package's types, against the package built into .venv-test
# (scripts/test.sh builds it first): mypy's stubtest compares the native
# module's stubs (adjoint_checkpoints/_native.pyi) with the module itself,
# every class, function, signature and constant; then a user's snippet
# (crates/checkpointing-py/tests/typed/user_snippet.py: schedules, plan,
# stores, codecs, the drop-in, JAX and PyTorch loops) must pass
# `mypy --strict`, so the package's annotations and stubs leave a user's
# strictly typed code without errors.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv-test/bin/python}
cache=target/mypy-cache
echo "== stubtest adjoint_checkpoints._native"
"$python" -m mypy.stubtest adjoint_checkpoints._native
echo "== mypy --strict on a user's snippet"
"$python" -m mypy --strict --cache-dir "$cache" crates/checkpointing-py/tests/typed/user_snippet.py
