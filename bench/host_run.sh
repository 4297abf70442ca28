#!/usr/bin/env bash
# The fidelity run of a quiet many-core host, in one go (bench/README.md, "A quiet many-core host"):
#
#   bash bench/host_run.sh KIT OUT [SECONDS]
#
# KIT: a folder of reference tools built outside the repository (bench/README.md says how to make
#      it): setup.sh (sourced: puts likwid, numactl and an Open MPI runtime on the PATH), stream.c,
#      numa_latency built elsewhere for a host without an MPI compiler, and numa_bandwidth for a
#      host without make (e.g. KERNEL_CFLAGS="-O3 -march=x86-64-v4").
# OUT: where the results go, as few files: host.txt (CPU, caches, frequency, topology as likwid
#      sees it), bandwidth.txt (kernels.py's interval verdicts at 1, 2, 4, 8 and 16 threads, each
#      tool's CPU list) and host_run.tgz, refreshed after each part: those two, the host's latency
#      curve (4 KiB and transparent huge pages, 16 KiB to 4 GiB, as workflow jobs: CSV, provenance
#      record, log, and topology.json) in latency/, every pair's ratios in csv/bw-pairs-*.json.
# SECONDS: the wall time the whole run may take (default 540); the bandwidth section gets what the
#      latency curve leaves, and prints each thread count's table as soon as it is done.
# Environment: THREADS (1,2,4,8,16), SIZES (latency, 16K to 4G), CURVE (page kinds of the latency
#      curve, "4k thp"; empty: no curve), LIKWID (flavours), PAIRS (at most
#      4 per comparison), BUDGET (45 s of pairs per thread count), NTIMES (10 repetitions per run
#      of ours and STREAM), VARIANT (our code shape, auto), STREAM (empty: no STREAM),
#      PYTHON (python3).
#
# Every part runs under its own time limit and a failing part does not stop the next one.
set -uo pipefail

KIT=$(cd "$1" && pwd) || { echo "host_run.sh: no kit folder '$1'" >&2; exit 2; }
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || exit 2
LIMIT=${3:-540}
START=$(date +%s)
WORK=$(mktemp -d /tmp/host_run.XXXXXX)
mkdir -p "$WORK/latency"
cd "$(dirname "$0")/.." || exit 2
pack() { cp "$WORK/host.txt" "$OUT/"; cp "$WORK/bandwidth.txt" "$OUT/" 2>/dev/null
         tar czf "$OUT/host_run.tgz" -C "$WORK" --exclude=ref .; }
left() { echo $((LIMIT - ($(date +%s) - START))); }
PY=${PYTHON:-python3}

{
    echo "== host: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    lscpu
    grep -m1 -E '^flags' /proc/cpuinfo
    for index in /sys/devices/system/cpu/cpu0/cache/index*; do
        echo "cache L$(cat "$index/level") $(cat "$index/type"): $(cat "$index/size"), shared by CPUs $(cat "$index/shared_cpu_list")"
    done
    echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
    free -g
    uname -a
    gcc --version | head -1
} >"$WORK/host.txt" 2>&1

# shellcheck disable=SC1091
source "$KIT/setup.sh" >>"$WORK/host.txt" 2>&1
{
    echo "== likwid-topology"; timeout 60 likwid-topology -c 2>&1 | head -80
    echo "== likwid-pin -p"; timeout 30 likwid-pin -p 2>&1
} >>"$WORK/host.txt" 2>&1
pack

# Our kernels: numa_bandwidth built here by this host's compiler, as users build STREAM
# (-O3 -march=native); numa_latency from the kit where this host has no mpicc.
if ! make -C kernels "$PWD/build/bin/numa_bandwidth" MPICC=mpicc >"$WORK/build.log" 2>&1; then
    echo "numa_bandwidth: no build here ($(tail -1 "$WORK/build.log")): the kit's is used" | tee -a "$WORK/host.txt"
    mkdir -p build/bin && cp "$KIT/numa_bandwidth" build/bin/numa_bandwidth
fi
if ! command -v mpicc >/dev/null || ! make -C kernels "$PWD/build/bin/numa_latency" >>"$WORK/build.log" 2>&1; then
    cp "$KIT/numa_latency" build/bin/numa_latency
fi
echo "kernels: $(build/bin/numa_bandwidth --version | head -1); $(build/bin/numa_latency --version | head -1)" | tee -a "$WORK/host.txt"

# The latency curve, as the workflow's one-rank job would run it (run-job: provenance, quality
# verdict), on the last CPU, 4 KiB pages and huge pages.
cpu=$(($(nproc) - 1))
# up to 4 GiB, or the largest power of two that fits in 80% of node 0's free memory
free_mib=$(($(awk '/MemFree/ {print $4}' /sys/devices/system/node/node0/meminfo) / 1024))
top=4096
while [ "$top" -gt 1 ] && [ $((top * 5 / 4)) -gt "$free_mib" ]; do top=$((top / 2)); done
echo "latency curve: 16 KiB to $top MiB (node 0 has $free_mib MiB free)" | tee -a "$WORK/host.txt"
PYTHONPATH=workflow timeout 60 "$PY" -m numasweep topology --detect -o "$WORK/latency/topology.json" >>"$WORK/host.txt" 2>&1
for pages in ${CURVE-4k thp}; do
    job="lat-sequential-d0-r1-local-concurrent${pages/4k/}-rep0"
    job=${job/concurrentthp/concurrent-thp}
    PYTHONPATH=workflow timeout 150 "$PY" -m numasweep run-job --job-id "$job" \
        --launch "env OMP_NUM_THREADS=1 'OMP_PLACES={$cpu}' OMP_PROC_BIND=close kernels/wrapper_numa.sh --cpuset=$cpu --numa=0 --policy=bind -- build/bin/numa_latency --size=${SIZES:-16K,32K,64K,128K,256K,512K,1-$top} --pages=$pages --max-time=0.8 --csv=$WORK/latency/$job.csv.partial" \
        --grid "{\"domains\": \"0\", \"label\": \"\", \"memory\": \"local\", \"pages\": \"$pages\", \"ranks_per_domain\": 1, \"repetition\": 0, \"strategy\": \"sequential\"}" \
        --kernel build/bin/numa_latency --topology "$WORK/latency/topology.json" --csv "$WORK/latency/$job.csv" \
        --provenance "$WORK/latency/$job.json" --log "$WORK/latency/$job.log" --retry-disturbed 0 2>&1 | tail -3
    pack
done

# Bandwidth: interval verdicts at 1 to 16 threads, the fastest likwid flavours of earlier runs on
# Xeon hosts (scouted again per thread count), STREAM built with its loops kept.
stream=(--stream-src "$KIT/stream.c")
[ -n "${STREAM-yes}" ] || stream=()
budget=$(left)
echo "== bandwidth: ${budget} s left"
PYTHONUNBUFFERED=1 timeout $((budget > 30 ? budget - 10 : 20)) "$PY" bench/kernels.py --bin build/bin --short \
    --threads "${THREADS:-1,2,4,8,16}" "${stream[@]}" --ref-dir "$WORK/ref" --keep "$WORK/csv" \
    --likwid "${LIKWID:-copy_sse,copy_avx512,copy_mem_avx,copy_mem_avx512,stream_sse,stream_avx512_fma,stream_mem_avx,stream_mem_avx512,load_sse,load_avx512}" \
    --ntimes "${NTIMES:-10}" --variant "${VARIANT:-auto}" --max-pairs "${PAIRS:-4}" --budget "${BUDGET:-45}" --skip latency --skip cycle --skip sweep \
    2>&1 | tee "$WORK/bandwidth.txt" "$OUT/bandwidth.txt"
echo "== done in $(($(date +%s) - START)) s, load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$WORK/bandwidth.txt"
pack
