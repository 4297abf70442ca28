#!/usr/bin/env bash
# Per-rank NUMA placement for one process of a launch: picks this rank's memory node(s) and CPU,
# checks them against the machine, and execs the kernel under numactl.
#
#   srun   --ntasks=8 --cpu-bind=map_cpu:1,9,17,25,33,41,49,57 wrapper_numa.sh --numa=0,0,1,1,2,2,3,3 -- KERNEL ARGS
#   mpirun -n 2 --bind-to none wrapper_numa.sh --cpus=0,1 --numa=0 -- KERNEL ARGS
#
# Local rank: OMPI_COMM_WORLD_LOCAL_RANK first, then SLURM_LOCALID, PMI_LOCAL_RANK,
# MPI_LOCALRANKID, else 0. Open MPI's variable comes first because an mpirun started inside a
# SLURM job passes the batch step's SLURM_LOCALID (0) to every rank it starts.
set -euo pipefail

PROG=wrapper_numa.sh
SYSFS=${NUMASWEEP_SYSFS:-/sys}

usage() {
    cat <<'EOF'
usage: wrapper_numa.sh [OPTIONS] -- KERNEL [ARGS...]

  --numa=N|LIST|auto  memory node(s). bind/preferred: entry i is local rank i's node, one
                      value applies to every rank, auto = round-robin over the machine's nodes.
                      interleave/weighted: the node set every rank uses (auto = all nodes).
  --policy=P          bind (default: numactl --membind), preferred (--preferred),
                      interleave (--interleave), weighted (the kernel's own --policy=weighted
                      --mem-nodes --weights, since numactl may lack --weighted-interleave),
                      local (--localalloc: each thread's pages on its own node)
  --weights=LIST      weighted only: one weight (1..255) per node of --numa; without it, the
                      weights the kernel has now (sysfs weighted_interleave, set by hand or auto)
  --cpus=LIST         entry i = local rank i's CPU (numactl --physcpubind); one value applies to all
  --cpuset=LIST       one CPU set (cpulist, e.g. 0-3,8) for every rank: a multi-threaded process
  --quiet             no [Rank i] lines (--verbose, the default, is accepted as the seed wrote it)
  --dry-run           print what would run, run nothing
  --help              this text

If the first word after -- starts with '-', the kernel is numa_latency from the build
folder (build/bin next to kernels/), as the seed's `wrapper_numa.sh --numa=3 -- --size=2048`.
EOF
}

die() {
    echo "$PROG: error: $*" >&2
    exit 2
}

numa=""
policy=bind
weights=""
cpus=""
cpuset=""
quiet=0
dry=0
while [ $# -gt 0 ]; do
    case "$1" in
        --numa=*) numa=${1#*=} ;;
        --policy=*) policy=${1#*=} ;;
        --weights=*) weights=${1#*=} ;;
        --cpus=*) cpus=${1#*=} ;;
        --cpuset=*) cpuset=${1#*=} ;;
        --quiet) quiet=1 ;;
        --verbose) quiet=0 ;;
        --dry-run) dry=1 ;;
        --help | -h) usage; exit 0 ;;
        --) shift; break ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) break ;;
    esac
    shift
done

[ $# -gt 0 ] || die "no kernel after --: give the kernel and its arguments (see --help)"
if [[ $1 == -* ]]; then
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    set -- "$root/build/bin/numa_latency" "$@"
fi

case "$policy" in
    bind | preferred | interleave | weighted | local) ;;
    *) die "--policy=$policy: use bind, preferred, interleave, weighted or local" ;;
esac

local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-${PMI_LOCAL_RANK:-${MPI_LOCALRANKID:-0}}}}
rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMI_RANK:-$local_rank}}}
[[ $local_rank =~ ^[0-9]+$ ]] || die "local rank '$local_rank' from the launcher is not a number"

# Expand a Linux cpulist/nodelist ("0-3,8") into space-separated numbers.
expand_list() {
    local part lo hi out=() parts=()
    IFS=, read -r -a parts <<<"$1"
    for part in "${parts[@]}"; do
        if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
            lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
            [ "$lo" -le "$hi" ] || return 1
            while [ "$lo" -le "$hi" ]; do out+=("$lo"); lo=$((lo + 1)); done
        elif [[ $part =~ ^[0-9]+$ ]]; then
            out+=("$part")
        else
            return 1
        fi
    done
    echo "${out[*]}"
}

# The machine's memory nodes: has_memory when the kernel provides it, else every nodeN folder.
machine_nodes() {
    local f=$SYSFS/devices/system/node/has_memory d out=()
    if [ -r "$f" ]; then
        expand_list "$(cat "$f")"
        return
    fi
    for d in "$SYSFS"/devices/system/node/node[0-9]*; do
        [ -d "$d" ] && out+=("${d##*/node}")
    done
    printf '%s\n' "${out[@]}" | sort -n | tr '\n' ' '
}

check_node() {
    [ -d "$SYSFS/devices/system/node/node$1" ] ||
        die "NUMA node $1 does not exist on this machine (nodes: $(machine_nodes | tr ' ' ',' | sed 's/,$//')); see numactl --hardware"
}

check_cpu() {
    [ -d "$SYSFS/devices/system/cpu/cpu$1" ] ||
        die "CPU $1 does not exist on this machine (CPUs: $(cat "$SYSFS/devices/system/cpu/online" 2>/dev/null)); see lscpu"
}

# Entry i of a comma list for local rank i; a single entry applies to every rank.
entry_for_rank() {
    local name=$1 list=$2
    local -a items
    IFS=, read -r -a items <<<"$list"
    if [ "${#items[@]}" -eq 1 ]; then
        echo "${items[0]}"
    elif [ "$local_rank" -lt "${#items[@]}" ]; then
        echo "${items[$local_rank]}"
    else
        die "local rank $local_rank has no entry in --$name=$list (${#items[@]} entries, one per rank)"
    fi
}

numactl_args=()
kernel_args=()
message=""
if [ "$numa" = auto ]; then
    read -r -a all_nodes <<<"$(machine_nodes)"
    [ "${#all_nodes[@]}" -gt 0 ] || die "no NUMA nodes found under $SYSFS/devices/system/node"
    if [ "$policy" = interleave ] || [ "$policy" = weighted ]; then
        numa=$(IFS=,; echo "${all_nodes[*]}")
    else
        numa=${all_nodes[$((local_rank % ${#all_nodes[@]}))]}
    fi
fi
if [ -n "$numa" ] && [ "$policy" = local ]; then
    die "--policy=local takes no --numa (each thread allocates on its own node)"
elif [ -n "$numa" ]; then
    nodes=$(expand_list "$numa") || die "--numa=$numa is not a node list like 0,1 or auto"
    for n in $nodes; do check_node "$n"; done
    nodes_csv=$(echo "$nodes" | tr ' ' ',')
    case "$policy" in
        bind | preferred)
            node=$(entry_for_rank numa "$nodes_csv")
            if [ "$policy" = bind ]; then
                numactl_args+=("--membind=$node")
                message="Binding to NUMA domain $node"
            else
                numactl_args+=("--preferred=$node")
                message="Preferring NUMA domain $node"
            fi
            ;;
        interleave)
            numactl_args+=("--interleave=$nodes_csv")
            message="Interleaving over NUMA domains $nodes_csv"
            ;;
        weighted)
            if [ -z "$weights" ]; then
                kernel_args+=("--policy=weighted" "--mem-nodes=$nodes_csv")
                message="Weighted interleave over NUMA domains $nodes_csv with the kernel's current weights"
            else
                read -r -a wlist <<<"$(echo "$weights" | tr ',' ' ')"
                read -r -a nlist <<<"$nodes"
                [ "${#wlist[@]}" -eq "${#nlist[@]}" ] ||
                    die "--weights=$weights has ${#wlist[@]} weight(s) for ${#nlist[@]} node(s) in --numa=$numa; give one per node"
                for w in "${wlist[@]}"; do
                    if ! [[ $w =~ ^[0-9]+$ ]] || [ "$w" -lt 1 ] || [ "$w" -gt 255 ]; then
                        die "--weights=$weights: weight '$w' is not in 1..255"
                    fi
                done
                kernel_args+=("--policy=weighted" "--mem-nodes=$nodes_csv" "--weights=$weights")
                message="Weighted interleave over NUMA domains $nodes_csv with weights $weights"
            fi
            ;;
    esac
elif [ "$policy" = local ]; then
    numactl_args+=("--localalloc")
    message="Allocating on each thread's local NUMA domain"
elif [ "$policy" != bind ]; then
    die "--policy=$policy needs --numa=LIST"
else
    message="No NUMA memory binding"
fi
if [ -n "$weights" ] && [ "$policy" != weighted ]; then
    die "--weights is for --policy=weighted only"
fi

[ -z "$cpus" ] || [ -z "$cpuset" ] || die "give --cpus (one CPU per rank) or --cpuset (one set for all), not both"
if [ -n "$cpus" ]; then
    [[ $cpus =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--cpus=$cpus is not a comma list of CPUs (one per rank)"
    for c in ${cpus//,/ }; do check_cpu "$c"; done
    cpu=$(entry_for_rank cpus "$cpus")
    numactl_args=("--physcpubind=$cpu" "${numactl_args[@]}")
    message="$message, CPU $cpu"
elif [ -n "$cpuset" ]; then
    set_cpus=$(expand_list "$cpuset") || die "--cpuset=$cpuset is not a CPU list like 0-3,8"
    for c in $set_cpus; do check_cpu "$c"; done
    numactl_args=("--physcpubind=$cpuset" "${numactl_args[@]}")
    message="$message, CPUs $cpuset"
fi

kernel=("$1")
shift
cmd=("${kernel[@]}" "${kernel_args[@]}" "$@")
if [ "${#numactl_args[@]}" -gt 0 ]; then
    cmd=(numactl "${numactl_args[@]}" "${cmd[@]}")
fi

verb=Executing
[ "$dry" -eq 0 ] || verb="Would execute"
if [ "$quiet" -eq 0 ] || [ "$dry" -eq 1 ]; then
    echo "[Rank $rank] $message" >&2
    echo "[Rank $rank] $verb: ${cmd[*]}" >&2
fi
[ "$dry" -eq 1 ] && exit 0
if [ "${cmd[0]}" = numactl ] && ! command -v numactl >/dev/null; then
    die "numactl not found: install the numactl package"
fi
exec "${cmd[@]}"
