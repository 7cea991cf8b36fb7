#!/usr/bin/env bash
# The PyTorch bridge on a CUDA device: its tests (the CUDA ones run only
# there) and the bench's GPU rows (`memory=` on the device, `host_memory=`
# spilling to pinned host memory, read back prefetched and, for comparison,
# with ADJOINT_CHECKPOINTS_PREFETCH=0: the "host level" and "prefetch:"
# lines of each problem). Run from the repository root on a
# machine with a GPU and the package importable (`maturin develop`, or
# PYTHONPATH=crates/checkpointing-py/python with its extension built).
# Writes its logs to ${OUT:-.}/gpu-tests.log and gpu-bench.log. TESTS (a
# pytest -k expression) narrows the tests, PROBLEMS and ROUNDS the bench.
set -euo pipefail
python=${PYTHON:-python3}
out=${OUT:-.}
export PYTHONUNBUFFERED=1
nvidia-smi -L
"$python" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.__version__, torch.cuda.get_device_name())"
"$python" -m pytest -q -p no:cacheprovider -rs crates/checkpointing-py/tests/test_torch_memory.py \
  crates/checkpointing-py/tests/test_torch.py -k "${TESTS:-cuda or gpu or memory or host or prefetch}" 2>&1 | tee "$out/gpu-tests.log"
for problem in ${PROBLEMS:-gru transformer heat}; do
  "$python" crates/checkpointing-py/bench/bench_torch.py --device cuda --problem "$problem" --rounds "${ROUNDS:-3}" \
    2>&1 | tee -a "$out/gpu-bench.log"
done
