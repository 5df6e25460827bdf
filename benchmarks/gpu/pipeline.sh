#!/usr/bin/env bash
# hotset bench pipeline at the issue's H100 settings (issue #39), from a checkout:
#
#   bash benchmarks/gpu/pipeline.sh
#
# 10,000 photo-like JPEGs of 500x375 (a fifth portrait, about 105 kB each, made by all
# the CPUs first: ~15 s on 16 cores), ResNet-50 (torchvision) under bf16 autocast
# with channels_last, batches of 256, 14 DataLoader workers, the cloud-nas store
# model, a 20% cache, 3 epochs; rows model-only, no-io, torch, and pytorch, quiver
# and scout each on the worker path and on the device path. Writes
# benchmarks/results/pipeline-gpu.json (its params name the GPU) and regenerates
# benchmarks/README.md. Budget: under 8 minutes on one H100 with 16 cores (rows of
# 3 x 10,000 samples take 10-35 s each at 900-2,900 samples/s; worker start-up and
# cuDNN's kernel choice a few seconds more); each row prints when it ends.
#
# Environment overrides, for a smaller run (the test suite runs this script on a
# CPU with tiny values): PYTHON, N, IMAGE_SIZE, BATCH, WORKERS, EPOCHS, MODEL,
# CROP, DEVICE, SYSTEMS, CACHE_FRAC, STORE, NAME, ROOT, DATA (a directory that keeps
# the generated JPEGs between runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
data_args=()
if [[ -n "${DATA:-}" ]]; then data_args=(--data "$DATA"); fi
exec "${PYTHON:-python3}" -m hotset bench pipeline \
  --n "${N:-10000}" --image-size "${IMAGE_SIZE:-500x375}" --portrait 0.2 --quality 94 \
  --classes 1000 --crop "${CROP:-224}" --batch-size "${BATCH:-256}" \
  --workers "${WORKERS:-14}" --epochs "${EPOCHS:-3}" --model "${MODEL:-resnet50}" \
  --device "${DEVICE:-cuda}" --store "${STORE:-cloud-nas}" --cache-frac "${CACHE_FRAC:-0.2}" \
  --systems "${SYSTEMS:-pytorch,quiver,scout}" --paths worker,device \
  --name "${NAME:-pipeline-gpu}" --root "${ROOT:-.}" ${data_args[@]+"${data_args[@]}"}
