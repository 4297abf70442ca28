#!/usr/bin/env bash
# The README's two commands, for a fresh Debian 12 machine (run as root, or with sudo available):
#   bash scripts/numasweep.sh sweep   install, build, run the default local sweep, write the report
#   bash scripts/numasweep.sh test    install everything the tests use, run the whole test suite
# Both are idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

die() { echo "numasweep.sh: error: $*" >&2; exit 2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "not root and no sudo: run as root or install sudo"
    SUDO="sudo"
fi

# What the sweep needs (compilers, numactl/libnuma, Open MPI, hwloc; dmidecode for the DIMMs'
# speed and channels, the theoretical memory bandwidth the report measures against).
APT_RUN=(build-essential numactl libnuma-dev openmpi-bin libopenmpi-dev hwloc
         dmidecode python3-venv git)
# What the tests add: likwid for the kernel benchmark, shellcheck, SLURM and munge for the
# real clusters, slurmdbd and MariaDB for their accounting, QEMU and cpio/busybox for the NUMA
# guest, chromium for the HTML report screenshot, hipcc and the HIP runtime headers to build
# gpu_xfer for AMD GPUs (a sweep on AMD GPUs uses the site's ROCm instead), strace to check
# that a kernel writes each message in one piece, Environment Modules for a site's module stack
# (config envmodules). (Installing
# mariadb-server starts Debian's own MariaDB service where services start on install; the tests
# use a private server.)
APT_TEST=(likwid shellcheck slurm-wlm slurmctld slurmd slurm-client munge slurmdbd mariadb-server
          qemu-system-x86 qemu-utils cpio busybox-static chromium hipcc libamdhip64-dev strace
          environment-modules)

apt_install() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "numasweep.sh: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# .venv from the pinned requirements files named (requirements.txt for a sweep, and
# requirements-dev.txt for the tests); each installed file is kept in .venv, so a file already
# installed as it is installs nothing again.
venv() {
    local file stale=()
    for file in "$@"; do
        cmp -s "$file" ".venv/.$file" || stale+=("$file")
    done
    if [ ! -x .venv/bin/python ] || [ ${#stale[@]} -gt 0 ]; then
        python3 -m venv .venv
        .venv/bin/pip install -q --upgrade pip >/dev/null
        .venv/bin/pip install -q "${@/#/--requirement=}"
        .venv/bin/pip install -q --no-deps -e .
        for file in "$@"; do cp "$file" ".venv/.$file"; done
    fi
    export PATH="$ROOT/.venv/bin:$PATH"
    # The package's bytecode, written where it is missing or stale: where PYTHONDONTWRITEBYTECODE
    # is set, every job's Python would otherwise compile the package again.
    python -m compileall -q workflow >/dev/null
}

case "${1:-}" in
    sweep)
        apt_install "${APT_RUN[@]}"
        venv requirements.txt
        snakemake --profile profiles/local
        # snakemake itself ends with the report's path, its headline and what it left unconcluded
        ;;
    test)
        apt_install "${APT_RUN[@]}" "${APT_TEST[@]}"
        venv requirements.txt requirements-dev.txt
        bash tests/numa_vm/fetch_kernel.sh
        rc=0
        python -m pytest tests "${@:2}" || rc=$?
        # pytest exits 5 when it collected nothing: that is a failure here.
        [ "$rc" -eq 5 ] && die "pytest collected no test"
        exit "$rc"
        ;;
    *)
        echo "usage: bash scripts/numasweep.sh sweep|test [pytest args]" >&2
        exit 2
        ;;
esac
