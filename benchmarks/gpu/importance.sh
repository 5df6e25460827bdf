#!/usr/bin/env bash
# Does importance sampling pay on a GPU? The device-ready experiment of issue #43, from a
# checkout:
#
#   bash benchmarks/gpu/importance.sh
#
# hotset bench train on the synth-noisy workload at CIFAR scale: 50,000 generated 32x32
# images (45,000 trained, 5,000 validation), a fifth of the labels flipped and half the
# samples easy; a CIFAR-style ResNet-18 (torchvision's, 3x3 stem, no max-pool; the same
# shape built by hotset without torchvision) under bf16 autocast and channels_last,
# batches of 512, SGD lr 0.1 cosine-annealed over 5 epochs, seeds 0, 1 and 2, a 20% cache
# on the modeled cloud-nas store (5 ms, 380 MB/s, 8 in flight). Time is the store's
# modeled I/O plus each step's compute as measured on the GPU (--measure-compute), so a
# row says how long it would take to reach pytorch's final accuracy when reading from
# that store. Arms: pytorch (the target), quiver, scout, scout[sampler=random], impact,
# impact_history (history-only estimates) and impact[sampler=rho] (RHO-loss, the paper's
# selector; its held-out models are trained, and charged, before the first epoch). The
# warm-ups are shortened to fit 5 epochs: scout selects from its third epoch
# (warm_up=2), ImPACT ends its warm-up after 3 (max_warm_up=3).
#
# Writes benchmarks/results/train-importance-gpu.json (its params name the GPU and the
# run's wall seconds) and regenerates benchmarks/README.md. Budget: 8 minutes on one
# H100 -- an estimate, not measured: about a minute to generate and decode the images
# once, then 21 runs of 5 epochs at roughly 3-4 s an epoch (1-2 s of ResNet-18 steps,
# the rest the planner's decisions and the modeled reads on the host).
#
# Environment overrides, for a smaller run (the test suite runs this script on a CPU
# with tiny values): PYTHON, N, MODEL, DEVICE, EPOCHS, BATCH, LR, SEEDS, SYSTEMS, STORE,
# CACHE_FRAC, NAME, ROOT, DATA (the directory that keeps the generated images).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
systems='pytorch,quiver,scout[warm_up=2],scout[sampler=random],impact[max_warm_up=3]'
systems+=',impact_history[max_warm_up=3],impact[sampler=rho,max_warm_up=3]'
exec "${PYTHON:-python3}" -m hotset bench train --workloads synth-noisy \
  --synth-n "${N:-50000}" --model "${MODEL:-resnet18}" --device "${DEVICE:-cuda}" \
  --measure-compute --no-identification --batch-size "${BATCH:-512}" --lr "${LR:-0.1}" \
  --epochs "${EPOCHS:-5}" --seeds "${SEEDS:-0,1,2}" --systems "${SYSTEMS:-$systems}" \
  --store "${STORE:-cloud-nas}" --cache-frac "${CACHE_FRAC:-0.2}" \
  --data-dir "${DATA:-.hotset-data}" --name "${NAME:-train-importance-gpu}" --root "${ROOT:-.}"
