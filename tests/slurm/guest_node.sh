#!/usr/bin/env bash
# Run inside the NUMA guest (tests/numa_vm/run.sh --tap --ip): make the guest a compute node of
# the test cluster that `tests/slurm/cluster.sh up --nodes N --guest NAME:...` started on the
# host. The guest sees the host's / read-only (slurm.conf, the slurm and munge programs, the
# project's venv) but not its /run, where the cluster's state lives: this starts a munged of
# its own with the cluster's key (which the caller copied to $1/munge.key) and slurmd under the
# guest's host name, then waits until $1/stop appears, then stops both and leaves slurmd's log
# in $1.
#   bash tests/slurm/guest_node.sh FOLDER [STATE]
set -euo pipefail
OUT=$1
STATE=${2:-/run/numasweep-slurm}
NAME=$(hostname)

stop() {
    if [ -s "$STATE/slurmd-$NAME.pid" ]; then kill "$(cat "$STATE/slurmd-$NAME.pid")" 2>/dev/null || true; fi
    sleep 1
    cp "$STATE/log/slurmd-$NAME.log" "$STATE/munge/munged.log" "$OUT/" 2>/dev/null || true
}
trap stop EXIT

# slurmd's cgroup plugin wants a cgroup file system, which the guest's init leaves out; with
# cgroup v2 it would ask systemd (over D-Bus) for a scope, which the guest has not: a
# cgroup.conf of the guest's own (its /etc is an in-memory overlay) tells it not to.
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/system.slice
printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' > /etc/slurm/cgroup.conf
mkdir -p "$STATE/munge" "$STATE/log" "$STATE/spool/$NAME" "$STATE/tmp/$NAME"
chmod 0755 /run "$STATE" "$STATE/munge"
chmod 1777 "$STATE/tmp/$NAME"
install -m 0600 "$OUT/munge.key" "$STATE/munge/munge.key"
chown -R munge:munge "$STATE/munge"
runuser -u munge -- munged --socket="$STATE/munge/munge.socket.2" --key-file="$STATE/munge/munge.key" \
    --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/munged.seed"
slurmd -f /etc/slurm/slurm.conf -N "$NAME" || { echo "guest_node: slurmd did not start:"; tail -n 20 "$STATE/log/slurmd-$NAME.log"; exit 1; }
echo "guest_node: munged and slurmd started as $NAME"
while [ ! -e "$OUT/stop" ]; do
    sleep 1
done
