#!/usr/bin/env bash
# The checks that need a real GPU, as one short script for a GPU machine (issue 27):
#   1. what the machine has (nvidia-smi, numba's view of CUDA, zmtf's devices);
#   2. the GPU test files on the real card (NUMBA_ENABLE_CUDASIM=0; tests/conftest.py would
#      otherwise turn the simulator on): tests/runtime/test_gpu.py, test_gpu_memory.py,
#      test_bfc.py, tests/kernels/test_cuda_kernels.py;
#   3. bench/gpu.py: add+sum GB/s, matmul TFLOP/s (with CuPy baselines when installed) and
#      the GPU allocator's fragmentation after 1,000 MLP training steps; then the
#      allocator alone with allow_growth.
# Usage: PYTHON=/path/to/venv/bin/python bash bench/gpu_check.sh [OUTDIR]
# Writes one log per part to OUTDIR (default: $OUT, else ./gpu_check_out) and prints a
# summary; each part has its own time limit so one hang cannot eat the others' time.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUTDIR=${1:-${OUT:-gpu_check_out}}
mkdir -p "$OUTDIR"
export NUMBA_ENABLE_CUDASIM=0 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset ZMTF_CUDASIM_GPUS

part() {   # part NAME SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$OUTDIR/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - start)) s (log: $OUTDIR/$name.log)"
  tail -n 8 "$OUTDIR/$name.log"
}

part machine 60 bash -c "nvidia-smi; $PY -c 'import numba, numba.cuda as c; print(numba.__version__, c.implementation if hasattr(c, \"implementation\") else \"\"); c.detect()'; $PY -m zmtf.devices"
part tests 240 "$PY" -m pytest -q -x -p no:randomly -p no:cacheprovider tests/runtime/test_gpu.py \
  tests/runtime/test_gpu_memory.py tests/runtime/test_bfc.py tests/kernels/test_cuda_kernels.py
part bench 180 "$PY" bench/gpu.py --sizes 1048576,16777216,268435456 --reps 10
part memory_growth 60 "$PY" bench/gpu.py --memory-only --allow-growth --mlp-steps 1000
