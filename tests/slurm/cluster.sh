#!/usr/bin/env bash
# A SLURM cluster on this one machine, for the slurm profile's tests and for trying the profile
# by hand. Debian's packages, no systemd, everything under one state folder:
#   bash tests/slurm/cluster.sh up [--nodes N] [--accounting] [--guest NAME:CPUS:MEMORY_MB]
#        install (once), start the daemons, wait until every node is idle. Without --nodes, one
#        node: this machine itself, on 127.0.0.1. With --nodes N, N nodes node1..nodeN, each a
#        slurmd in a network namespace of its own (own address on a private bridge, own host
#        name in a UTS namespace) under one slurmctld. --accounting adds slurmdbd on a private
#        MariaDB server (its own data folder and socket, not the system service), so sacct works.
#        --guest (with --nodes) adds node NAME in partition `guest`, at the bridge's .21 through
#        the TAP device nsw-guest: a machine of other hardware (the NUMA guest, run.sh --tap)
#        whose own slurmd registers it; `up` does not wait for it.
#   bash tests/slurm/cluster.sh down     cancel jobs, stop each daemon by its pidfile, remove the
#                                        namespaces, the bridge and the state
#   bash tests/slurm/cluster.sh status   each daemon's PID and state, then sinfo; exit 1 unless all run
# NUMASWEEP_SLURM_STATE sets the state folder (default /run/numasweep-slurm: root-only, short
# paths for the daemons' UNIX sockets, gone after a reboot); NUMASWEEP_SLURM_SUBNET the first
# three octets of the nodes' /24 (default 10.213.77; refused if any route already covers it).
# Needs root (or sudo).
# The configuration goes to /etc/slurm/slurm.conf (and slurmdbd.conf), where every client looks:
# the plugin's job step drops SLURM_* variables (SLURM_CONF too) before its srun, so a private
# path would not reach the jobs. A file there this script did not write is never replaced or
# removed. If `up` fails or is interrupted, it brings down what it had started.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
STATE=${NUMASWEEP_SLURM_STATE:-/run/numasweep-slurm}
CONF=/etc/slurm/slurm.conf
DBD_CONF=/etc/slurm/slurmdbd.conf
MARK="# numasweep test cluster, state in $STATE"
CTLD_PORT=${NUMASWEEP_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${NUMASWEEP_SLURMD_PORT:-16818}
DBD_PORT=${NUMASWEEP_SLURMDBD_PORT:-16819}
DB_PORT=${NUMASWEEP_MARIADB_PORT:-16306}
SUBNET=${NUMASWEEP_SLURM_SUBNET:-10.213.77}
BRIDGE=numasweep0
GUEST_TAP=nsw-guest
GUEST=""
NETNS_PREFIX=numasweep-
PACKAGES=(slurm-wlm slurmctld slurmd slurm-client munge)
ACCOUNTING_PACKAGES=(slurmdbd mariadb-server)
ACCOUNT=numasweep

die() { echo "cluster.sh: error: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "the cluster's daemons run as root: run as root or install sudo"
    exec sudo -n --preserve-env=NUMASWEEP_SLURM_STATE,NUMASWEEP_SLURMCTLD_PORT,NUMASWEEP_SLURMD_PORT,NUMASWEEP_SLURMDBD_PORT,NUMASWEEP_MARIADB_PORT,NUMASWEEP_SLURM_SUBNET \
        bash "$0" "$@"
fi

unset SLURM_CONF

# ------------------------------------------------------------------ daemons and their pidfiles

# $STATE/daemons: one line per daemon, "NAME PIDFILE", in start order; written before the first
# daemon starts, so `down` (and the tests) stop exactly what `up` started, whatever the layout.
DAEMONS_FILE=$STATE/daemons

daemon_names() { [ -f "$DAEMONS_FILE" ] && cut -d' ' -f1 "$DAEMONS_FILE"; }

pidfile() { awk -v d="$1" '$1 == d { print $2 }' "$DAEMONS_FILE" 2>/dev/null; }

# PID of a daemon whose pidfile names a live process running that program, else nothing.
# slurmd@node1 is the program slurmd serving node node1.
running_pid() {
    local file pid
    file=$(pidfile "$1")
    [ -n "$file" ] && [ -s "$file" ] || return 1
    pid=$(tr -dc 0-9 <"$file")
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "${1%@*}" ] || return 1
    echo "$pid"
}

log_tails() {
    local f
    for f in "$STATE"/log/*.log "$STATE"/munge/munged.log "$STATE"/mariadb/mariadbd.log; do
        [ -f "$f" ] || continue
        echo "---- last lines of $f"
        tail -n 25 "$f"
    done >&2
}

# Each try of a program may take at most 5 s (a client waiting on a daemon that never answers).
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local seconds=$1 what=$2 deadline limit=(timeout 5)
    shift 2
    declare -F "$1" >/dev/null && limit=()
    deadline=$((SECONDS + seconds))
    while [ $SECONDS -lt $deadline ]; do
        "${limit[@]}" "$@" >/dev/null 2>&1 && return 0
        sleep 0.25
    done
    log_tails
    die "$what within ${seconds}s (daemon logs above, state in $STATE)"
}

# A daemon that cannot bind its port or read its files exits right after forking: say so now,
# with its log, rather than after the whole wait for the node.
start_daemon() {  # start_daemon NAME COMMAND...
    local name=$1
    shift
    running_pid "$name" >/dev/null && return 0
    "$@" || { log_tails; die "$name did not start"; }
    wait_for 10 "$name exited right after starting (its log above) or wrote no pidfile" running_pid "$name"
}

# mariadbd stays in the foreground: run it in a session of its own, detached from this script.
detached() { setsid -f "$@" </dev/null >/dev/null 2>&1; }

stop_daemon() {
    local pid i
    pid=$(running_pid "$1") || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 80; i++)); do
        [ -d "/proc/$pid" ] || return 0
        sleep 0.25
    done
    echo "cluster.sh: $1 (PID $pid) ignored SIGTERM for 20s, killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

# ------------------------------------------------------------------ packages and files

install_packages() {
    local missing=() p archives
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "cluster.sh: installing ${missing[*]}"
    # A private download folder: another apt-get running at the same time may clean the shared
    # cache and make .deb files vanish under this one.
    archives=$(mktemp -d)
    mkdir -p "$archives/partial"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o Dir::Cache::Archives="$archives" -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null
    rm -rf "$archives"
}

ours() { [ -f "$1" ] && head -n 1 "$1" | grep -qxF "$MARK"; }

claim() {  # claim FILE: refuse to go on if FILE exists and this script did not write it
    if [ -e "$1" ] && ! ours "$1"; then
        die "$1 exists and was not written by this script: this machine has its own SLURM; use it, or move $1 away"
    fi
}

# The machine's node line from slurmd -C (CPUs, sockets, cores, threads, memory) without its
# NodeName: a node line must match what slurmd finds, or slurmd registers the node as invalid.
hardware() {
    local line
    line=$(slurmd -C | head -n 1)
    [[ $line == NodeName=* ]] || die "slurmd -C printed no node line: $line"
    echo "${line#NodeName=* }"
}

write_config() {  # write_config CTLD_ADDR
    local host
    claim "$CONF"
    host=$(hostname -s)
    mkdir -p "$(dirname "$CONF")"
    {
        echo "$MARK"
        sed -e "s|@STATE@|$STATE|g" -e "s|@HOST@|$host|g" -e "s|@CTLD_ADDR@|$1|g" \
            -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" "$HERE/slurm.conf.in"
        echo
        if [ "$ACCOUNTING" = 1 ]; then
            echo "# Accounting through slurmdbd (sacct, sacctmgr); a job needs a valid account."
            echo "AccountingStorageType=accounting_storage/slurmdbd"
            echo "AccountingStorageHost=$1"
            echo "AccountingStoragePort=$DBD_PORT"
            echo "# The munged socket for talking to slurmdbd (the default is munged's system socket)."
            echo "AccountingStoragePass=$STATE/munge/munge.socket.2"
            echo "AccountingStorageEnforce=associations"
            echo "JobAcctGatherType=jobacct_gather/linux"
        else
            echo "# No slurmdbd: the cluster without accounting that the slurm profile must support."
            echo "AccountingStorageType=accounting_storage/none"
            echo "JobAcctGatherType=jobacct_gather/none"
        fi
        echo
        if [ "$NODES" = 0 ]; then
            echo "NodeName=$host $(hardware) NodeAddr=127.0.0.1 State=UNKNOWN"
            echo "PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP"
        else
            # Every node claims the whole machine: they share its CPUs, which is what a test of
            # scheduling and placement across nodes needs (not a measurement).
            for ((i = 1; i <= NODES; i++)); do
                echo "NodeName=node$i NodeHostname=node$i NodeAddr=$(node_addr "$i") $(hardware) State=UNKNOWN"
            done
            echo "PartitionName=debug Nodes=node[1-$NODES] Default=YES MaxTime=INFINITE State=UP"
        fi
        if [ -n "$GUEST" ]; then
            IFS=: read -r name cpus memory <<<"$GUEST"
            echo "# Another machine, the NUMA guest: its own slurmd registers it (run.sh --tap=$GUEST_TAP)."
            echo "NodeName=$name NodeHostname=$name NodeAddr=$(guest_addr) CPUs=$cpus RealMemory=$memory State=UNKNOWN"
            echo "PartitionName=guest Nodes=$name MaxTime=INFINITE State=UP"
        fi
    } >"$CONF.tmp"
    mv "$CONF.tmp" "$CONF"
}

# ------------------------------------------------------------------ network namespaces

node_addr() { echo "$SUBNET.$((10 + $1))"; }
guest_addr() { echo "$SUBNET.21"; }

subnet_free() {
    local inside covering
    inside=$(ip -4 route show root "$SUBNET.0/24" 2>/dev/null)
    covering=$(ip -4 route show match "$SUBNET.0/24" 2>/dev/null | grep -v '^default' || true)
    [ -z "$inside$covering" ]
}

# A bridge in the root namespace holds the controller's address; each node's namespace gets one
# end of a veth pair, the other end on the bridge. No default route and no forwarding: the
# namespaces reach each other and this machine's own addresses on the bridge, nothing else.
make_network() {
    local i ns
    subnet_free || die "the subnet $SUBNET.0/24 is already routed on this machine: choose another with NUMASWEEP_SLURM_SUBNET"
    ip link add "$BRIDGE" type bridge
    ip addr add "$SUBNET.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    for ((i = 1; i <= NODES; i++)); do
        ns=${NETNS_PREFIX}node$i
        ip netns add "$ns"
        ip link add "nsw-node$i" type veth peer name eth0 netns "$ns"
        ip link set "nsw-node$i" master "$BRIDGE" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$(node_addr "$i")/24" dev eth0
        ip -n "$ns" link set eth0 up
    done
    if [ -n "$GUEST" ]; then
        ip tuntap add dev "$GUEST_TAP" mode tap
        ip link set "$GUEST_TAP" master "$BRIDGE" up
    fi
    node_hosts >"$STATE/hosts"
}

# The nodes' /etc/hosts: every node name resolves inside every node, as on a cluster.
node_hosts() {
    local i
    echo "127.0.0.1 localhost"
    echo "$SUBNET.1 $(hostname -s)"
    for ((i = 1; i <= NODES; i++)); do
        echo "$(node_addr "$i") node$i"
    done
    [ -z "$GUEST" ] || echo "$(guest_addr) ${GUEST%%:*}"
}

our_namespaces() { ip netns list 2>/dev/null | awk '{ print $1 }' | grep "^$NETNS_PREFIX" || true; }

# Whatever still runs in a node's namespace (a job step that outlived its slurmd) is killed,
# then the namespace, its veth pair and its hosts file go; the bridge last.
remove_network() {
    local ns pids
    for ns in $(our_namespaces); do
        mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null || true)
        if [ ${#pids[@]} -gt 0 ]; then
            echo "cluster.sh: killing processes left in namespace $ns: ${pids[*]}" >&2
            kill -KILL "${pids[@]}" 2>/dev/null || true
        fi
        ip netns delete "$ns" || true
    done
    ip link show "$GUEST_TAP" >/dev/null 2>&1 && ip link delete "$GUEST_TAP"
    ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"
    return 0
}

# ------------------------------------------------------------------ accounting: MariaDB, slurmdbd

DB_DIR=$STATE/mariadb

sql() { mariadb --no-defaults --socket="$DB_DIR/mariadbd.sock" -u root "$@"; }

# A private MariaDB server: its own data folder, socket and port, loopback only; the system
# service (if any) and its /etc/mysql configuration are left alone (--no-defaults).
start_mariadb() {
    mkdir -p "$DB_DIR/data"
    chown -R mysql:mysql "$DB_DIR"
    mariadb-install-db --no-defaults --user=mysql --datadir="$DB_DIR/data" \
        --auth-root-authentication-method=socket --skip-test-db >"$DB_DIR/install.log" 2>&1 \
        || { tail -n 20 "$DB_DIR/install.log" >&2; die "mariadb-install-db failed"; }
    start_daemon mariadbd detached mariadbd --no-defaults --user=mysql --datadir="$DB_DIR/data" \
        --socket="$DB_DIR/mariadbd.sock" --pid-file="$DB_DIR/mariadbd.pid" \
        --log-error="$DB_DIR/mariadbd.log" --bind-address=127.0.0.1 --port="$DB_PORT" \
        --skip-name-resolve --innodb-buffer-pool-size=32M --innodb-log-file-size=16M \
        --innodb-lock-wait-timeout=900
    wait_for 60 "MariaDB did not answer on $DB_DIR/mariadbd.sock" sql -e 'SELECT 1'
    DB_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -dc A-Za-z0-9)
    sql -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

write_dbd_config() {
    claim "$DBD_CONF"
    # slurmdbd refuses a configuration anyone but SlurmUser may read: it holds the password.
    (
        umask 077
        cat >"$DBD_CONF.tmp" <<EOF
$MARK
AuthType=auth/munge
AuthInfo=socket=$STATE/munge/munge.socket.2
DbdHost=$(hostname -s)
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$STATE/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASSWORD
StorageLoc=slurm_acct_db
EOF
    )
    mv "$DBD_CONF.tmp" "$DBD_CONF"
}

# The cluster, one account and the users who submit (root, and whoever called sudo), with that
# account as their default: AccountingStorageEnforce=associations refuses anyone else's jobs.
register_accounts() {
    local user
    sacctmgr -i add cluster numasweep >/dev/null
    sacctmgr -i add account "$ACCOUNT" Description="numasweep tests" Organization=numasweep >/dev/null
    for user in root ${SUDO_USER:-}; do
        sacctmgr -i add user "$user" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" >/dev/null
    done
}

# ------------------------------------------------------------------ up, down, status

start_munged() {
    running_pid munged >/dev/null && return 0
    mkdir -p "$STATE/munge"
    # munged refuses a key or folder that anyone but its own user may write, and a socket folder
    # that not everyone may enter.
    [ -s "$STATE/munge/munge.key" ] || mungekey --create --keyfile="$STATE/munge/munge.key"
    chown -R munge:munge "$STATE/munge"
    chmod 0755 "$STATE/munge"
    chmod 0600 "$STATE/munge/munge.key"
    runuser -u munge -- munged --socket="$STATE/munge/munge.socket.2" \
        --key-file="$STATE/munge/munge.key" --pid-file="$STATE/munge/munged.pid" \
        --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/munged.seed" \
        || { log_tails; die "munged did not start"; }
    wait_for 10 "munged answered no credential request" munge -n --socket="$STATE/munge/munge.socket.2"
}

# slurmd for node I in its network namespace, under the node's own host name (a UTS namespace
# of its own: jobs there see `hostname` = nodeI) and with the cluster's hosts file (a mount
# namespace of its own). Not `ip netns exec`: it remounts /sys for the namespace, which hides
# /sys/fs/cgroup, and slurmd refuses to start without it.
start_node() {
    local node=node$1
    # shellcheck disable=SC2016 # $1..$3 are the inner shell's arguments
    start_daemon "slurmd@$node" nsenter --net="/run/netns/$NETNS_PREFIX$node" \
        unshare --uts --mount --propagation private -- \
        sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts && exec slurmd -f "$3" -N "$1"' \
        sh "$node" "$STATE/hosts" "$CONF"
}

nodes_idle() {  # nodes_idle N: N nodes are up (idle, or already running jobs)
    [ "$(sinfo -h -N -t idle,mix,alloc -o %N | sort -u | wc -l)" -eq "$1" ]
}

write_daemons_file() {
    local i
    {
        echo "munged $STATE/munge/munged.pid"
        if [ "$ACCOUNTING" = 1 ]; then
            echo "mariadbd $DB_DIR/mariadbd.pid"
            echo "slurmdbd $STATE/slurmdbd.pid"
        fi
        echo "slurmctld $STATE/slurmctld.pid"
        if [ "$NODES" = 0 ]; then
            echo "slurmd@$(hostname -s) $STATE/slurmd-$(hostname -s).pid"
        else
            for ((i = 1; i <= NODES; i++)); do
                echo "slurmd@node$i $STATE/slurmd-node$i.pid"
            done
        fi
    } >"$DAEMONS_FILE"
}

up() {
    local ctld_addr=127.0.0.1 i d
    NODES=0
    ACCOUNTING=0
    while [ $# -gt 0 ]; do
        case $1 in
            --nodes)
                [[ ${2:-} =~ ^[1-9][0-9]?$ ]] || die "--nodes takes a number of nodes from 1 to 99, not '${2:-}'"
                NODES=$2
                shift 2
                ;;
            --accounting) ACCOUNTING=1; shift ;;
            --guest)
                [[ ${2:-} =~ ^[a-z][a-z0-9-]*:[1-9][0-9]*:[1-9][0-9]*$ ]] \
                    || die "--guest takes NAME:CPUS:MEMORY_MB (e.g. numa-vm:4:1024), not '${2:-}'"
                GUEST=$2
                shift 2
                ;;
            *) die "unknown option '$1' (usage: cluster.sh up [--nodes N] [--accounting] [--guest NAME:CPUS:MEMORY_MB])" ;;
        esac
    done
    [ -z "$GUEST" ] || [ "$NODES" != 0 ] || die "--guest needs --nodes N: the guest reaches the controller on the nodes' bridge"
    if [ -f "$DAEMONS_FILE" ]; then
        status >/dev/null && { echo "cluster.sh: already up"; sinfo; return 0; }
        die "a cluster was started before and is not fully running: bash $0 down, then up again"
    fi
    install_packages "${PACKAGES[@]}"
    [ "$ACCOUNTING" = 1 ] && install_packages "${ACCOUNTING_PACKAGES[@]}"
    claim "$CONF"
    [ "$ACCOUNTING" = 1 ] && claim "$DBD_CONF"
    # From here on, a failure or an interrupt takes down whatever was started.
    trap 'rc=$?; trap - EXIT INT TERM; if [ $rc -ne 0 ]; then echo "cluster.sh: up failed, bringing down what it started" >&2; down >/dev/null 2>&1 || true; fi; exit $rc' EXIT
    trap 'exit 130' INT TERM
    mkdir -p "$STATE/ctld" "$STATE/log"
    chmod 0755 "$STATE"
    write_daemons_file
    for d in $(daemon_names); do
        [[ $d == slurmd@* ]] || continue
        mkdir -p "$STATE/spool/${d#slurmd@}" "$STATE/tmp/${d#slurmd@}"
        chmod 1777 "$STATE/tmp/${d#slurmd@}"
    done
    if [ "$NODES" != 0 ]; then
        make_network
        ctld_addr=$SUBNET.1
    fi
    write_config "$ctld_addr"
    start_munged
    if [ "$ACCOUNTING" = 1 ]; then
        start_mariadb
        write_dbd_config
        start_daemon slurmdbd slurmdbd
        wait_for 60 "slurmdbd did not answer sacctmgr" sacctmgr -n list cluster
        register_accounts
    fi
    start_daemon slurmctld slurmctld -f "$CONF"
    wait_for 30 "slurmctld did not answer scontrol ping" scontrol ping
    if [ "$NODES" = 0 ]; then
        start_daemon "slurmd@$(hostname -s)" slurmd -f "$CONF"
        wait_for 30 "node $(hostname -s) did not become idle" nodes_idle 1
    else
        for ((i = 1; i <= NODES; i++)); do
            start_node "$i"
        done
        wait_for 60 "nodes node[1-$NODES] did not all become idle" nodes_idle "$NODES"
    fi
    trap - EXIT INT TERM
    sinfo
}

down() {
    local i d names
    if running_pid slurmctld >/dev/null; then
        # Jobs first, so no job step outlives its slurmd.
        scancel --full --quiet --partition=debug 2>/dev/null || true
        scancel --full --quiet --partition=guest 2>/dev/null || true
        for ((i = 0; i < 60; i++)); do
            [ -z "$(squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
            sleep 0.25
        done
    fi
    mapfile -t names < <(daemon_names)
    for ((i = ${#names[@]} - 1; i >= 0; i--)); do
        d=${names[$i]}
        stop_daemon "$d"
    done
    remove_network
    ours "$CONF" && rm -f "$CONF"
    ours "$DBD_CONF" && rm -f "$DBD_CONF"
    rm -rf "$STATE"
}

status() {
    local d pid rc=0
    [ -f "$DAEMONS_FILE" ] || { echo "no cluster (no $DAEMONS_FILE)"; return 1; }
    for d in $(daemon_names); do
        if pid=$(running_pid "$d"); then
            echo "$d: running (PID $pid)"
        else
            echo "$d: stopped"
            rc=1
        fi
    done
    [ $rc -eq 0 ] && sinfo
    return $rc
}

case "${1:-}" in
    up) shift; up "$@" ;;
    down) down ;;
    status) status ;;
    *) echo "usage: bash tests/slurm/cluster.sh up [--nodes N] [--accounting] | down | status" >&2; exit 2 ;;
esac
