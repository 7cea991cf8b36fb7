#!/usr/bin/env bash
# Everything that needs an NVIDIA GPU, in one command, from the repository
# root: the CUDA tests of checkpointing-cuda, the GPU bench of the 2-D heat
# problem (benches/gpu.rs), the JAX bench (pinned_host level against
# lax.scan, nested jax.checkpoint and JAX's offload policy; what a compiled
# loop's control flow costs there, gpu_jax_loops.py), and the PyTorch
# bridge's CUDA tests and bench (scripts/gpu-torch.sh).
# Each part's time limit, in seconds: PART_TIMEOUT_<part> (dashes as
# underscores, e.g. PART_TIMEOUT_rust_tests; the bench of
# the jax part is named jax), else PART_TIMEOUT (default 600).
#
#   scripts/gpu-bench.sh
#
# With cargo, it builds what it runs. On a machine with the GPU but no
# Rust toolchain, build the two binaries elsewhere and name them:
#   cargo test -p checkpointing-cuda --no-run        -> GPU_TEST_BIN
#   cargo bench -p checkpointing-benches --bench gpu --no-run -> GPU_BENCH_BIN
# The Python parts need the package importable (maturin develop, or
# PYTHONPATH=crates/checkpointing-py/python with its extension built) and
# JAX with CUDA, PyTorch with CUDA. Logs go to ${OUT:-.}/gpu-*.log.
# PARTS (default "rust-tests rust-bench jax torch") picks what runs, in
# that order; "jax" is "jax-tests jax-bench jax-loops". JAX_BENCH_ARGS go to
# gpu_jax.py (e.g. "--work heavy"); PROBLEMS and ROUNDS to the torch bench.
set -uo pipefail
out=${OUT:-.}
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
status=0
nvidia-smi -L || { echo "gpu-bench: no NVIDIA GPU here" >&2; exit 2; }
# cudarc opens NVRTC by the names libnvrtc.so and libnvrtc.so.{12,11,10,1}:
# a CUDA 13 toolkit has the first in its lib64, often off the loader's path.
for dir in ${CUDA_HOME:-/usr/local/cuda}/lib64 /usr/local/cuda/lib64; do
  if [ -e "$dir/libnvrtc.so" ]; then
    export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    break
  fi
done

part() { # name, command...: runs it, logs it, remembers a failure
  local name=$1
  shift
  local limit_var="PART_TIMEOUT_${name//-/_}"
  local limit=${!limit_var:-${PART_TIMEOUT:-600}}
  echo "== $name (at most $limit s): $*"
  local start=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee "$out/gpu-$name.log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc after $((SECONDS - start)) s"
  [ "$rc" = 0 ] || status=1
}

parts=""
for p in ${PARTS:-rust-tests rust-bench jax torch}; do
  if [ "$p" = jax ]; then parts+=" jax-tests jax-bench jax-loops"; else parts+=" $p"; fi
done
for p in $parts; do
  case $p in
    rust-tests)
      if [ -n "${GPU_TEST_BIN:-}" ]; then
        part rust-tests "$GPU_TEST_BIN" --include-ignored --test-threads=1
      else
        part rust-tests cargo test -p checkpointing-cuda -- --include-ignored --test-threads=1
      fi ;;
    rust-bench)
      if [ -n "${GPU_BENCH_BIN:-}" ]; then
        part rust-bench "$GPU_BENCH_BIN"
      else
        part rust-bench cargo bench -p checkpointing-benches --bench gpu
      fi ;;
    jax-tests)
      # The pinned_host level, and host mode's planned DISK level (its
      # asynchronous copies from the device, on the GPU).
      tests=crates/checkpointing-py/tests
      part jax-tests bash -c "'$python' -m pytest -q -p no:cacheprovider -rs $tests/test_jax_compiled.py -k gpu; \
        first=\$?; '$python' -m pytest -q -p no:cacheprovider -rs $tests/test_jax_host_plan.py && exit \$first" ;;
    jax-bench)
      # shellcheck disable=SC2086 # JAX_BENCH_ARGS is a list of arguments
      part jax "$python" crates/checkpointing-py/bench/gpu_jax.py ${JAX_BENCH_ARGS:-} ;;
    jax-loops)
      part jax-loops "$python" crates/checkpointing-py/bench/gpu_jax_loops.py ;;
    torch)
      part torch env OUT="$out" PYTHON="$python" bash scripts/gpu-torch.sh ;;
    *)
      echo "gpu-bench: unknown part $p (rust-tests rust-bench jax jax-tests jax-bench jax-loops torch)" >&2
      exit 2 ;;
  esac
done
exit $status
