#!/usr/bin/env bash
# Runs the prebuilt benchmark on the lent NVIDIA GPU (../shared/GPU.md): unpack the Vulkan
# loader carried in .gl/, point it at the NVIDIA driver, run .bin/wgsparse-bench with the
# given arguments, and keep its log under $OUT. Build first, on the development machine:
#   cargo xtask bench-build .bin
# then send `bash benches/gpu_run.sh ARGS` with carry [".gl", ".bin"].
# With WGSPARSE_SASS=1 the driver's shader cache of the run is kept under $OUT/glcache:
# `cargo xtask sass <files_at>/glcache sass/` then reads the SASS of every pipeline it compiled.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
if [ "${WGSPARSE_SASS:-0}" = 1 ]; then
    mkdir -p "$out/glcache"
    export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH="$out/glcache" __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/nvidia-smi.txt"
.bin/wgsparse-bench "$@" 2>&1 | tee "$out/bench.log"
