#!/bin/sh
# /init of the NUMA guest's initramfs (busybox). The host's / arrives read-only over 9p and gets
# an in-memory overlay, so the guest runs the host's own python, numactl, mpirun and kernels.
# run.sh shares its job folder (tag "job") at the same path as on the host; it holds cmd.sh,
# the command to run, and `mounts`, one "TAG PATH" line per extra writable share.
# The last console line is "NUMA_VM_EXIT=<code>": run.sh takes the command's exit code from it.
PATH=/bin
export PATH

finish() {
    sync
    echo "NUMA_VM_EXIT=$1"
    poweroff -f
}

fail() {
    echo "numa_vm: init: $*"
    echo "NUMA_VM_INIT_FAILED"
    poweroff -f
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# 6.12 has virtio-pci built in; 9p, overlayfs and the network card are modules, in dependency order.
for module in netfs 9pnet 9pnet_virtio 9p overlay failover net_failover virtio_net; do
    insmod "/modules/$module.ko" || fail "cannot load kernel module $module"
done

job=""
address=""
# shellcheck disable=SC2013  # the kernel command line is one line of words
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        numa_vm.job=*) job=${arg#numa_vm.job=} ;;
        numa_vm.ip=*) address=${arg#numa_vm.ip=} ;;
    esac
done
[ -n "$job" ] || fail "no numa_vm.job= on the kernel command line"

# cache=loose: the guest lives seconds and the host tree does not change under a test.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 host /lower \
    || fail "cannot mount the host's / over 9p"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /root \
    || fail "cannot mount the overlay on the host's /"

mount -t proc proc /root/proc
mount -t sysfs sysfs /root/sys
mount -t devtmpfs devtmpfs /root/dev
mkdir -p /root/dev/pts /root/dev/shm
mount -t devpts devpts /root/dev/pts
mount -t tmpfs tmpfs /root/dev/shm
# /tmp stays the overlay's: a checkout under the host's /tmp (CI clones there) must be
# visible in the guest, and what the guest writes there still goes to memory only.
mount -t tmpfs tmpfs /root/run

mkdir -p "/root$job"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 job "/root$job" \
    || fail "cannot mount the job folder $job"
if [ -f "/root$job/mounts" ]; then
    while read -r tag path; do
        mkdir -p "/root$path"
        mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 "$tag" "/root$path" \
            || fail "cannot mount the writable share $path"
    done < "/root$job/mounts"
fi

# Open MPI's PMIx connects over loopback.
ip link set lo up || fail "cannot bring up lo"
# run.sh --tap --ip: the network card, e.g. on the SLURM test cluster's bridge.
if [ -n "$address" ]; then
    { ip addr add "$address" dev eth0 && ip link set eth0 up; } || fail "cannot give eth0 the address $address"
fi
hostname numa-vm

echo "NUMA_VM_BEGIN"
chroot /root /bin/bash "$job/cmd.sh" < /dev/console > /dev/console 2>&1
finish $?
