#!/usr/bin/env bash
# Boot a QEMU guest whose kernel sees several NUMA nodes and run one command inside it.
#
#   tests/numa_vm/run.sh [OPTIONS] -- COMMAND [ARGS...]
#
#   --nodes=N            NUMA nodes (default 2)
#   --memory-only=LIST   nodes without CPUs, e.g. 3 (CXL-like); turns on HMAT so the guest
#                        kernel puts them in a lower memory tier
#   --cpus-per-node=K    CPUs on each node that has CPUs (default 1)
#   --l3-groups=G        split each node's CPUs into G groups sharing an L3 cache (default 1:
#                        every CPU its own socket and L3); each CPU node is then one socket of
#                        G dies, and QEMU gives the CPUs of a die one L3 (CPUID leaf 4)
#   --node-memory=MIB    memory per node in MiB (default 512)
#   --timeout=SECONDS    wall-clock limit for the whole boot + command (default 300)
#   --accel=tcg|kvm      QEMU's accelerator (default tcg: emulation); kvm needs /dev/kvm
#   --rw=DIR             share host folder DIR writable at the same path (repeatable); the
#                        rest of the host's / is read-only with a throw-away in-memory overlay
#   --log=FILE           keep the serial console log there (default: removed on success)
#   --tap=IFNAME         a network card on the host's TAP device IFNAME (which must exist, e.g.
#                        on a bridge: tests/slurm/cluster.sh up --guest makes one), with
#   --ip=ADDR/PREFIX     the guest's address on it (eth0); without --tap the guest has only lo
#
# The command runs as root in the guest with the host's PATH, in the current directory.
# Its output is printed here; run.sh exits with the command's exit code. When the guest
# itself fails (QEMU cannot start, the guest does not boot, the time limit is hit) it prints
# one `numa_vm: error: ...` line plus the console log's tail on stderr and exits 125
# (124 for the time limit).
#
# Emulation is TCG unless --accel=kvm: KVM on some machines we test on fails with a normal guest,
# and TCG gives the same NUMA topology to the guest kernel, only slower (tests/numa_vm/numa_guest.py
# asks for KVM where /dev/kvm can be opened). Under TCG the CPU is QEMU's `max` without FMA: with
# both AVX2 and FMA offered, numpy's AVX2+FMA3 code paths crash (SIGSEGV) under QEMU 7.2's TCG,
# e.g. in matplotlib's figure rendering; under KVM it is the host's.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE="$HERE/cache"
KERNEL_DIR="$CACHE/kernel"

nodes=2
memory_only=""
cpus_per_node=1
l3_groups=1
node_memory=512
limit=300
accel=tcg
log=""
tap=""
ip=""
rw_dirs=()

die() { echo "numa_vm: error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --nodes=*) nodes=${1#*=} ;;
        --memory-only=*) memory_only=${1#*=} ;;
        --cpus-per-node=*) cpus_per_node=${1#*=} ;;
        --l3-groups=*) l3_groups=${1#*=} ;;
        --node-memory=*) node_memory=${1#*=} ;;
        --timeout=*) limit=${1#*=} ;;
        --accel=*) accel=${1#*=} ;;
        --rw=*) rw_dirs+=("${1#*=}") ;;
        --log=*) log=${1#*=} ;;
        --tap=*) tap=${1#*=} ;;
        --ip=*) ip=${1#*=} ;;
        --help|-h) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) die "unknown option '$1': see tests/numa_vm/run.sh --help" ;;
    esac
    shift
done
[ $# -gt 0 ] || die "no command given: tests/numa_vm/run.sh [OPTIONS] -- COMMAND [ARGS...]"
for value in "$nodes" "$cpus_per_node" "$l3_groups" "$node_memory" "$limit"; do
    [[ "$value" =~ ^[1-9][0-9]*$ ]] || die "'$value' is not a positive integer: check --nodes, --cpus-per-node, --l3-groups, --node-memory, --timeout"
done
[ $((cpus_per_node % l3_groups)) -eq 0 ] \
    || die "--l3-groups=$l3_groups does not divide --cpus-per-node=$cpus_per_node: give a divisor"
is_memory_only() { [[ ",$memory_only," == *",$1,"* ]]; }
for node in ${memory_only//,/ }; do
    if ! [[ "$node" =~ ^[0-9]+$ ]] || [ "$node" -ge "$nodes" ]; then
        die "--memory-only=$memory_only names node '$node', the guest has nodes 0-$((nodes - 1))"
    fi
done
is_memory_only 0 && die "--memory-only cannot include node 0: the guest boots on node 0's CPUs"
case "$accel" in
    tcg|kvm) ;;
    *) die "--accel=$accel: use tcg or kvm" ;;
esac
[ "$accel" = tcg ] || [ -w /dev/kvm ] || die "--accel=kvm but /dev/kvm cannot be opened: use --accel=tcg"
for dir in "${rw_dirs[@]}"; do
    [ -d "$dir" ] || die "--rw=$dir is not a folder: create it first"
done
if [ -n "$tap" ] || [ -n "$ip" ]; then
    [[ "$ip" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] || die "--tap needs --ip=ADDR/PREFIX (e.g. 10.213.77.21/24), not '$ip'"
    [ -n "$tap" ] || die "--ip needs --tap=IFNAME, the host's TAP device for the guest's network card"
    [ -e "/sys/class/net/$tap" ] || die "--tap=$tap: no such network device: create the TAP device first (ip tuntap add dev NAME mode tap)"
fi

command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found: apt-get install qemu-system-x86"
command -v cpio >/dev/null || die "cpio not found: apt-get install cpio"
BUSYBOX=$(command -v busybox || true)
# The initramfs has no libraries: only a static busybox runs there.
case "$( [ -n "$BUSYBOX" ] && ldd "$BUSYBOX" 2>&1 )" in
    *"not a dynamic"*) ;;
    *) die "no statically linked busybox: apt-get install busybox-static" ;;
esac
[ -f "$KERNEL_DIR/.complete" ] || die "no guest kernel in $KERNEL_DIR: run bash tests/numa_vm/fetch_kernel.sh"

# The initramfs depends on init.sh, busybox and the kernel's modules; rebuild when any changes.
initramfs() {
    local key out stage module path
    key=$(cat "$HERE/init.sh" "$BUSYBOX" "$KERNEL_DIR/release" | sha256sum | cut -c1-16)
    out="$CACHE/initramfs-$key.cpio.gz"
    if [ ! -f "$out" ]; then
        stage=$(mktemp -d "$CACHE/initramfs.XXXXXX")
        mkdir -p "$stage"/{bin,dev,proc,sys,lower,rw,root,modules}
        cp "$BUSYBOX" "$stage/bin/busybox"
        for applet in sh mount insmod mkdir cat sync poweroff chroot ip hostname; do
            ln -s busybox "$stage/bin/$applet"
        done
        cp "$HERE/init.sh" "$stage/init"
        chmod 755 "$stage/init"
        for module in netfs 9pnet 9pnet_virtio 9p overlay failover net_failover virtio_net; do
            path=$(find "$KERNEL_DIR/modules/kernel" -name "$module.ko*" | head -n 1)
            [ -n "$path" ] || { rm -rf "$stage"; die "kernel module $module missing from $KERNEL_DIR: rerun fetch_kernel.sh"; }
            case "$path" in
                *.xz) xz -dc "$path" > "$stage/modules/$module.ko" ;;
                *.zst) zstd -qdc "$path" > "$stage/modules/$module.ko" ;;
                *) cp "$path" "$stage/modules/$module.ko" ;;
            esac
        done
        (cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) > "$out.tmp"
        mv "$out.tmp" "$out"
        rm -rf "$stage"
    fi
    echo "$out"
}
INITRD=$(initramfs)

JOB=$(mktemp -d /tmp/numa_vm.XXXXXX)
CONSOLE="$JOB/console.log"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    if [ -n "$log" ] && [ -f "$CONSOLE" ]; then cp "$CONSOLE" "$log"; fi
    rm -rf "$JOB"
}
trap cleanup EXIT

{
    echo "export PATH=$(printf '%q' "$PATH")"
    echo "export HOME=/root LANG=C.UTF-8 TERM=dumb"
    echo "cd $(printf '%q' "$PWD") || exit 125"
    printf 'exec'
    printf ' %q' "$@"
    echo
} > "$JOB/cmd.sh"

if [ "$accel" = kvm ]; then
    accel_args=(-accel kvm)
    cpu="host,-arch-capabilities"
else
    # shellcheck disable=SC2054  # commas belong to QEMU's option values
    accel_args=(-accel tcg,thread=multi)
    cpu="max,-fma"
fi
# tsc=reliable: emulated CPUs outnumbering the host's cores drift apart, the kernel then marks
# the TSC unstable and switches sched_clock's static key while the others run, which crashes
# a 16-CPU guest under multi-threaded TCG (a page fault in sched_clock_cpu).
# L3 groups: QEMU 7.2 shares the L3 among the CPUs of one die in CPUID leaf 4, but Linux reads
# leaf 4 only on Intel CPUs; on QEMU's AMD TCG CPU (family 15) it shares the L3 per package.
# So with groups the CPU says it is Intel, and each die's CPUs get their own L3 in sysfs.
if [ "$l3_groups" -gt 1 ]; then cpu+=",vendor=GenuineIntel"; fi

# shellcheck disable=SC2054  # commas belong to QEMU's option values
qemu_args=(
    "${accel_args[@]}" -cpu "$cpu"
    -nodefaults -display none -no-reboot
    -serial "file:$CONSOLE"
    -kernel "$KERNEL_DIR/vmlinuz" -initrd "$INITRD"
    -append "console=ttyS0 quiet loglevel=3 panic=-1 init_on_alloc=0 tsc=reliable numa_vm.job=$JOB${ip:+ numa_vm.ip=$ip}"
    -virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$JOB,mount_tag=job,security_model=none,multidevs=remap"
)
if [ -n "$tap" ]; then
    qemu_args+=(-netdev "tap,id=net0,ifname=$tap,script=no,downscript=no" -device "virtio-net-pci,netdev=net0")
fi
: > "$JOB/mounts"
for i in "${!rw_dirs[@]}"; do
    dir=$(cd "${rw_dirs[$i]}" && pwd)
    qemu_args+=(-virtfs "local,path=$dir,mount_tag=rw$i,security_model=none,multidevs=remap")
    echo "rw$i $dir" >> "$JOB/mounts"
done

# NUMA layout: one RAM backend per node; CPUs only on nodes that are not memory-only.
cpu_nodes=()
for ((node = 0; node < nodes; node++)); do
    is_memory_only "$node" || cpu_nodes+=("$node")
done
cpus=$((cpus_per_node * ${#cpu_nodes[@]}))
qemu_args+=(-m "$((node_memory * nodes))M")
if [ "$l3_groups" -eq 1 ]; then
    qemu_args+=(-smp "$cpus,sockets=$cpus,cores=1,threads=1")
else
    qemu_args+=(-smp "$cpus,sockets=${#cpu_nodes[@]},dies=$l3_groups,cores=$((cpus_per_node / l3_groups)),threads=1")
fi
hmat=""
[ -n "$memory_only" ] && hmat=1
machine="q35"
[ -n "$hmat" ] && machine+=",hmat=on"
qemu_args+=(-machine "$machine")
for ((node = 0; node < nodes; node++)); do
    spec="node,nodeid=$node,memdev=mem$node"
    # HMAT needs an initiator for every node: a memory-only node hangs off node 0.
    if [ -n "$hmat" ]; then
        if is_memory_only "$node"; then spec+=",initiator=0"; else spec+=",initiator=$node"; fi
    fi
    qemu_args+=(-object "memory-backend-ram,id=mem$node,size=${node_memory}M" -numa "$spec")
done
socket=0
for node in "${cpu_nodes[@]}"; do
    if [ "$l3_groups" -gt 1 ]; then
        qemu_args+=(-numa "cpu,node-id=$node,socket-id=$socket")
        socket=$((socket + 1))
        continue
    fi
    for ((k = 0; k < cpus_per_node; k++)); do
        qemu_args+=(-numa "cpu,node-id=$node,socket-id=$socket")
        socket=$((socket + 1))
    done
done
# Distances: 10 local, 20 between CPU nodes, 30 to or from a memory-only node (a far tier).
for ((src = 0; src < nodes; src++)); do
    for ((dst = src + 1; dst < nodes; dst++)); do
        distance=20
        if is_memory_only "$src" || is_memory_only "$dst"; then distance=30; fi
        qemu_args+=(-numa "dist,src=$src,dst=$dst,val=$distance")
    done
done
if [ -n "$hmat" ]; then
    for initiator in "${cpu_nodes[@]}"; do
        for ((target = 0; target < nodes; target++)); do
            if [ "$target" -eq "$initiator" ]; then latency=100; bandwidth=20G
            elif is_memory_only "$target"; then latency=300; bandwidth=5G
            else latency=200; bandwidth=10G; fi
            qemu_args+=(
                -numa "hmat-lb,initiator=$initiator,target=$target,hierarchy=memory,data-type=access-latency,latency=$latency"
                -numa "hmat-lb,initiator=$initiator,target=$target,hierarchy=memory,data-type=access-bandwidth,bandwidth=$bandwidth"
            )
        done
    done
fi

tail_console() {
    echo "--- last 40 lines of the guest console${log:+ (whole log kept in $log)} ---" >&2
    if [ -s "$CONSOLE" ]; then tr -d '\r' < "$CONSOLE" | tail -n 40 >&2; else echo "(empty)" >&2; fi
    echo "---" >&2
}

start=$(date +%s)
qemu_rc=0
timeout -k 10 "$limit" qemu-system-x86_64 "${qemu_args[@]}" > "$JOB/qemu.out" 2>&1 || qemu_rc=$?
elapsed=$(($(date +%s) - start))
[ -f "$CONSOLE" ] || : > "$CONSOLE"

# What the command printed: the console between the begin marker and the exit marker.
# The exit marker ends a line of its own, or the command's last line when that had no newline.
tr -d '\r' < "$CONSOLE" | awk '
    /^NUMA_VM_BEGIN$/ { on = 1; next }
    on && /NUMA_VM_EXIT=[0-9]+$/ { sub(/NUMA_VM_EXIT=[0-9]+$/, ""); printf "%s", $0; exit }
    on { print }'
rc=$(tr -d '\r' < "$CONSOLE" | sed -n 's/.*NUMA_VM_EXIT=\([0-9]*\)$/\1/p' | tail -n 1)

if [ "$qemu_rc" -eq 124 ] || [ "$qemu_rc" -eq 137 ]; then
    echo "numa_vm: error: the guest did not finish within ${limit}s: raise --timeout or look at the console below" >&2
    tail_console
    exit 124
fi
if grep -qs '^NUMA_VM_INIT_FAILED' "$CONSOLE"; then
    echo "numa_vm: error: the guest's init failed: see the console below" >&2
    tail_console
    exit 125
fi
if [ -z "$rc" ]; then
    echo "numa_vm: error: the guest stopped without an exit code (QEMU exit $qemu_rc after ${elapsed}s): see QEMU's output and the console below" >&2
    sed 's/^/qemu: /' "$JOB/qemu.out" | tail -n 20 >&2
    tail_console
    exit 125
fi
echo "numa_vm: guest with $nodes nodes finished in ${elapsed}s, command exit $rc" >&2
exit "$rc"
