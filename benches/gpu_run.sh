#!/usr/bin/env bash
# Runs the prebuilt benchmark on the lent NVIDIA GPU (../shared/GPU.md): unpack the Vulkan
# loader carried in .gl/, point it at the NVIDIA driver, run .bin/wgsparse-bench with the
# given arguments, and keep its log under $OUT. Build first, on the development machine:
#   cargo xtask bench-build .bin
# then send `bash benches/gpu_run.sh ARGS` with carry [".gl", ".bin"].
# With WGSPARSE_SASS=1 the driver's shader cache of the run comes back as $OUT/glcache.tgz:
# `tar xzf <files_at>/glcache.tgz -C /tmp && cargo xtask sass /tmp/glcache sass/` then reads
# the SASS of every pipeline it compiled (the cache's folders are too deep to come back as
# they are).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
cache=/tmp/glcache
if [ "${WGSPARSE_SASS:-0}" = 1 ]; then
    rm -rf "$cache" && mkdir -p "$cache"
    export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH="$cache" __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/nvidia-smi.txt"
.bin/wgsparse-bench "$@" 2>&1 | tee "$out/bench.log"
status=$?
if [ "${WGSPARSE_SASS:-0}" = 1 ]; then
    tar czf "$out/glcache.tgz" -C /tmp glcache
fi
exit $status
