#!/usr/bin/env bash
# Session 28 (issue 36): what holds the head-dim-128 flash forward below cuDNN's. Nsight Compute's
# full set on one launch of the forward (FlashAttention-3's intra-warpgroup overlap, branch
# flash-fwd-overlap) at llama-3.1-8b s4096 b2 (flash_speed's fourth shape): pipe utilisation, warp
# stall reasons, and per-instruction stall samples (SASS). KERNELS='regex:skip ...' for others.
# Carry: build/device/bin/flash_speed build/device/lib (FLASH_SPEED=path: another build's)
# Run: bash reports/results/h100/flash_hd128_ncu/run.sh
set -uo pipefail
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r/ncu_flash
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
NCU=$(command -v ncu)
for f in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
  [ -n "$NCU" ] || { [ -x "$f" ] && NCU=$f; }
done
echo "ncu: $NCU $("$NCU" --version | tail -1)" >"$R/ncu.txt"
# Each item: a kernel-name regex and the matching launches to skip. Others worth a look: the
# lockstep forward 'flash_forward_wgmma_kernel<.*128>:2', the backward 'backward_kernel<.*128,
# false>:2', cuDNN's forward 'fprop:212' (1 + 3 · (3 + 20) launches a shape: its 213th is the
# first of head dim 128's third).
# shellcheck disable=SC2206
KERNELS=(${KERNELS:-'flash_forward_overlap_kernel:2'})
for k in "${KERNELS[@]}"; do
  n=$(echo "${k%:*}" | tr -c 'a-z0-9' _ | cut -c1-24)
  timeout 90 "$NCU" --set full --kernel-name-base demangled --kernel-name "regex:${k%:*}" \
    --launch-skip "${k##*:}" --launch-count 1 --kill yes --clock-control none -f -o "$R/$n" \
    "${FLASH_SPEED:-build/device/bin/flash_speed}" >"$R/$n.log" 2>&1
  echo "$k rc=$? t=$((SECONDS - t0)) s" >>"$R/ncu.txt"
  "$NCU" -i "$R/$n.ncu-rep" --page details --print-details all >"$R/$n.details.txt" 2>&1
  "$NCU" -i "$R/$n.ncu-rep" --page source --csv --print-source sass >"$R/$n.sass.csv" 2>&1
  rm -f "$R/$n.ncu-rep"
done
