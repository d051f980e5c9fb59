#!/usr/bin/env bash
# On the GPU machine after profile-zstd.sh (same /tmp build and samples): Nsight Compute on the decoder's kernels
# for one sample (tuning aid). SAMPLE=/tmp/oct_u16.raw KERNELS=regex:k1 SECTIONS="..." by default.
set -o pipefail
D=$PWD/.gpudeps B=/tmp/zgpu-build
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
args=()
for s in ${SECTIONS:-SpeedOfLight WarpStateStats Occupancy LaunchStats SchedulerStats MemoryWorkloadAnalysis}; do args+=(--section $s); done
cd $B && ZGPU_ZSTD_SAMPLE_ONLY=1 ZGPU_ZSTD_SAMPLE=${SAMPLE:-/tmp/oct_u16.raw} timeout 300 ncu --kernel-name "${KERNELS:-regex:k1}" \
    --launch-count ${COUNT:-2} "${args[@]}" ${NCU_ARGS:-} ./bin/test_gpu_zstd 2>&1 | grep -vE "^\s*$|----|^==PROF=="
