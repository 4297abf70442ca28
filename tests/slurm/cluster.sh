#!/usr/bin/env bash
# A one-node SLURM cluster on localhost, for the slurm profile's tests and for trying the profile
# by hand. Debian's packages, no systemd, everything under one state folder:
#   bash tests/slurm/cluster.sh up       install (once), start munged, slurmctld, slurmd; wait for idle
#   bash tests/slurm/cluster.sh down     cancel jobs, stop each daemon by its pidfile, remove the state
#   bash tests/slurm/cluster.sh status   each daemon's PID and state, then sinfo; exit 1 unless all run
# NUMASWEEP_SLURM_STATE sets the state folder (default /run/numasweep-slurm: root-only, short
# paths for the daemons' UNIX sockets, gone after a reboot). Needs root (or sudo).
# The configuration goes to /etc/slurm/slurm.conf, where every client looks: the plugin's job
# step drops SLURM_* variables (SLURM_CONF too) before its srun, so a private path would not
# reach the jobs. A slurm.conf this script did not write is never replaced or removed.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
STATE=${NUMASWEEP_SLURM_STATE:-/run/numasweep-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# numasweep test cluster, state in $STATE"
CTLD_PORT=${NUMASWEEP_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${NUMASWEEP_SLURMD_PORT:-16818}
PACKAGES=(slurm-wlm slurmctld slurmd slurm-client munge)
# Daemons in start order; `down` stops them in reverse.
DAEMONS=(munged slurmctld slurmd)

die() { echo "cluster.sh: error: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "the cluster's daemons run as root: run as root or install sudo"
    exec sudo -n --preserve-env=NUMASWEEP_SLURM_STATE,NUMASWEEP_SLURMCTLD_PORT,NUMASWEEP_SLURMD_PORT \
        bash "$0" "$@"
fi

unset SLURM_CONF

pidfile() {
    case $1 in
        munged) echo "$STATE/munge/munged.pid" ;;
        *) echo "$STATE/$1.pid" ;;
    esac
}

# PID of a daemon whose pidfile names a live process running that program, else nothing.
running_pid() {
    local file pid
    file=$(pidfile "$1")
    [ -s "$file" ] || return 1
    pid=$(tr -dc 0-9 <"$file")
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$1" ] || return 1
    echo "$pid"
}

log_tails() {
    local f
    for f in "$STATE"/log/*.log "$STATE"/munge/munged.log; do
        [ -f "$f" ] || continue
        echo "---- last lines of $f"
        tail -n 25 "$f"
    done >&2
}

install_packages() {
    local missing=() p archives
    for p in "${PACKAGES[@]}"; do
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

ours() { [ -f "$CONF" ] && head -n 1 "$CONF" | grep -qxF "$MARK"; }

write_config() {
    local host node_line
    if [ -e "$CONF" ] && ! ours; then
        die "$CONF exists and was not written by this script: this machine has its own SLURM; use it, or move $CONF away"
    fi
    host=$(hostname -s)
    # slurmd -C reports what this machine has (CPUs, sockets, cores, threads, memory); the node
    # line must match it or slurmd registers the node as invalid.
    node_line=$(slurmd -C | head -n 1)
    [[ $node_line == NodeName=* ]] || die "slurmd -C printed no node line: $node_line"
    mkdir -p "$(dirname "$CONF")"
    { echo "$MARK"; sed -e "s|@STATE@|$STATE|g" -e "s|@HOST@|$host|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" \
        -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" -e "s|@NODE_LINE@|$node_line|g" \
        "$HERE/slurm.conf.in"; } >"$CONF.tmp"
    mv "$CONF.tmp" "$CONF"
}

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
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local seconds=$1 what=$2 i
    shift 2
    for ((i = 0; i < seconds * 4; i++)); do
        "$@" >/dev/null 2>&1 && return 0
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
    sleep 1
    running_pid "$name" >/dev/null || { log_tails; die "$name exited right after starting (its log above)"; }
}

node_idle() {
    local st
    st=$(sinfo -h -N -o %t)
    [ "$st" = idle ] || [ "$st" = mix ] || [ "$st" = alloc ]
}

up() {
    install_packages
    mkdir -p "$STATE/ctld" "$STATE/spool" "$STATE/log"
    chmod 0755 "$STATE"
    write_config
    start_munged
    wait_for 10 "munged answered no credential request" \
        munge -n --socket="$STATE/munge/munge.socket.2"
    start_daemon slurmctld slurmctld -f "$CONF"
    wait_for 30 "slurmctld did not answer scontrol ping" scontrol ping
    start_daemon slurmd slurmd -f "$CONF"
    wait_for 30 "node $(hostname -s) did not become idle" node_idle
    sinfo
}

stop_daemon() {
    local pid i
    pid=$(running_pid "$1") || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 60; i++)); do
        [ -d "/proc/$pid" ] || return 0
        sleep 0.25
    done
    echo "cluster.sh: $1 (PID $pid) ignored SIGTERM for 15s, killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

down() {
    local i d
    if running_pid slurmctld >/dev/null; then
        # Jobs first, so no job step outlives its slurmd.
        scancel --full --quiet --partition=debug 2>/dev/null || true
        for ((i = 0; i < 60; i++)); do
            [ -z "$(squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
            sleep 0.25
        done
    fi
    for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do
        d=${DAEMONS[$i]}
        stop_daemon "$d"
    done
    ours && rm -f "$CONF"
    rm -rf "$STATE"
}

status() {
    local d pid rc=0
    for d in "${DAEMONS[@]}"; do
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
    up) up ;;
    down) down ;;
    status) status ;;
    *) echo "usage: bash tests/slurm/cluster.sh up|down|status" >&2; exit 2 ;;
esac
