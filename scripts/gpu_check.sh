#!/usr/bin/env bash
# GPU check of mvpo_train (generate + score modes on CUDA, HF and vLLM backends, vLLM + LoRA).
#
#   bash scripts/gpu_check.sh            # from the repository root, on a CUDA machine
#
# Uses the machine's python3 when it already has torch with CUDA (the lent H200 image does);
# needs gymnasium there: installed from ./.whl/*.whl when present (no network on that machine:
# `pip download gymnasium farama-notifications -d .whl` beforehand and carry .whl; add
# `peft accelerate` for the LoRA step), else from PyPI. vLLM is used when importable; with
# network and MVPO_INSTALL_VLLM=1 the script makes .venv-gpu and installs vLLM + the project
# (with peft) there (vLLM pins its own CUDA torch). The vLLM + LoRA step needs vLLM and peft.
# Outputs: $OUT (default ./gpu_check_out): gpu_check.json, gpu_check.log, runs' metrics.
# Budget: ~2-4 minutes without installs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_check_out}"
export OUT
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu_check.log") 2>&1
echo "== $(date -u +%FT%TZ) gpu_check on $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"

PY=python3
if [ "${MVPO_INSTALL_VLLM:-0}" = "1" ] && ! $PY -c "import vllm" 2>/dev/null; then
  [ -x .venv-gpu/bin/python ] || python3 -m venv .venv-gpu
  PY="$PWD/.venv-gpu/bin/python"
  t0=$(date +%s)
  $PY -m pip install -q --upgrade pip && $PY -m pip install -q vllm && $PY -m pip install -q -e '.[lora]' \
    || echo "!! install failed: continuing with what is importable"
  echo "install took $(( $(date +%s) - t0 )) s"
fi
if ! $PY -c "import gymnasium" 2>/dev/null || ! $PY -c "import peft" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/mvpo-site .whl/*.whl
    export PYTHONPATH="/tmp/mvpo-site${PYTHONPATH:+:$PYTHONPATH}"
  else
    $PY -m pip install -q gymnasium || { echo "!! gymnasium missing and not installable"; exit 3; }
    $PY -m pip install -q --retries 1 --timeout 10 peft || echo "!! peft not installable: the LoRA step is skipped"
  fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false VLLM_ENABLE_V1_MULTIPROCESSING=0 PYTHONUNBUFFERED=1
if [ ! -f data/models/tiny-qwen2/config.json ]; then
  $PY -c "from mvpo_train.cli import build_model_main; build_model_main([])" || exit 4
fi
timeout 540 $PY scripts/gpu_check.py
status=$?
echo "== gpu_check exit status $status; report: $OUT/gpu_check.json"
exit $status
