"""The CPU a kernel was built for, read from the binary, against the CPU about to run it.

kernels/Makefile embeds one string in each CPU kernel (`ns_build_target`, kernels/common/
numasweep.h): the build host's CPU model (/proc/cpuinfo "model name", or "unknown"), the
optimisation flags, and the macros those flags make the compiler predefine (`$(CC) CFLAGS -dM -E`,
e.g. __AVX2__). `target` reads it from the file without running the kernel, which on a CPU
without an instruction set it was compiled for may die of SIGILL before it says anything;
FLAGS turns the macros into the flags Linux prints for those instruction sets. run-job and
run-batch refuse, in one line, a kernel compiled for a set this CPU lacks (`check`); the
provenance records the build host's CPU and the sets (`kernel.build_cpu`, `kernel.isa`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from numasweep.core.errors import NumasweepError

# The instruction-set macros of gcc and clang -> the flag Linux prints in /proc/cpuinfo for it
# (arch/x86/include/asm/cpufeatures.h: SSE3 is "pni", LZCNT "abm", SHA "sha_ni"). The one table of
# the mapping. x86's only: on another architecture none of these macros is defined, so a kernel
# built there has no instruction sets listed and is not checked. Left out are the system
# instructions (xsave*, rdrand, rdseed, fsgsbase, clflushopt, shstk, ...): the compiler emits them
# only through intrinsics, which the kernels do not call, and Linux hides some of them from
# /proc/cpuinfo on CPUs that have them (rdrand on some AMD parts), so they would refuse kernels
# that run.
FLAGS = {
    "__SSE3__": "pni",
    "__SSSE3__": "ssse3",
    "__SSE4_1__": "sse4_1",
    "__SSE4_2__": "sse4_2",
    "__SSE4A__": "sse4a",
    "__POPCNT__": "popcnt",
    "__ABM__": "abm",
    "__LZCNT__": "abm",
    "__BMI__": "bmi1",
    "__BMI2__": "bmi2",
    "__TBM__": "tbm",
    "__ADX__": "adx",
    "__MOVBE__": "movbe",
    "__F16C__": "f16c",
    "__FMA__": "fma",
    "__FMA4__": "fma4",
    "__XOP__": "xop",
    "__AVX__": "avx",
    "__AVX2__": "avx2",
    "__AVXVNNI__": "avx_vnni",
    "__AVXIFMA__": "avx_ifma",
    "__AES__": "aes",
    "__PCLMUL__": "pclmulqdq",
    "__SHA__": "sha_ni",
    "__VAES__": "vaes",
    "__VPCLMULQDQ__": "vpclmulqdq",
    "__GFNI__": "gfni",
    "__AVX512F__": "avx512f",
    "__AVX512CD__": "avx512cd",
    "__AVX512BW__": "avx512bw",
    "__AVX512DQ__": "avx512dq",
    "__AVX512VL__": "avx512vl",
    "__AVX512IFMA__": "avx512ifma",
    "__AVX512VBMI__": "avx512vbmi",
    "__AVX512VBMI2__": "avx512_vbmi2",
    "__AVX512VNNI__": "avx512_vnni",
    "__AVX512BITALG__": "avx512_bitalg",
    "__AVX512VPOPCNTDQ__": "avx512_vpopcntdq",
    "__AVX512BF16__": "avx512_bf16",
    "__AVX512FP16__": "avx512_fp16",
    "__AVX512VP2INTERSECT__": "avx512_vp2intersect",
    "__AVX512ER__": "avx512er",
    "__AVX512PF__": "avx512pf",
    "__AVX5124FMAPS__": "avx512_4fmaps",
    "__AVX5124VNNIW__": "avx512_4vnniw",
    "__AMX_TILE__": "amx_tile",
    "__AMX_INT8__": "amx_int8",
    "__AMX_BF16__": "amx_bf16",
    "__AMX_FP16__": "amx_fp16",
}
# What starts the embedded string (numasweep.h): lines `cpu=`, `flags=`, `macros=` follow.
MARKER = b"numasweep-build-target\n"
CPUINFO = Path("/proc/cpuinfo")


def instruction_sets(macros: list[str]) -> list[str]:
    """The /proc/cpuinfo flags of the instruction sets among the compiler's macros, in FLAGS's order."""
    present = set(macros)
    return list(dict.fromkeys(flag for macro, flag in FLAGS.items() if macro in present))


def target(kernel: Path) -> dict[str, Any] | None:
    """{cpu, flags, isa} embedded in `kernel` by kernels/Makefile; None for a file without them
    (a kernel built otherwise, e.g. gpu_xfer by nvcc, or a test's /bin/true) or none at all."""
    try:
        data = Path(kernel).read_bytes()
    except OSError:
        return None
    at = data.find(MARKER)
    if at < 0:
        return None
    end = data.find(b"\0", at)
    text = data[at + len(MARKER):end if end >= 0 else None].decode(errors="replace")
    fields = dict(line.partition("=")[::2] for line in text.splitlines())
    return {"cpu": " ".join(fields.get("cpu", "").split()) or "unknown", "flags": fields.get("flags", ""),
            "isa": instruction_sets(fields.get("macros", "").split())}


def this_cpu(cpuinfo: Path = CPUINFO) -> tuple[str, set[str] | None]:
    """(this CPU's model name or "unknown", its flags); the flags are None where /proc/cpuinfo has
    no `flags` line (not x86: nothing to compare a kernel's instruction sets with)."""
    model, flags = "unknown", None
    try:
        lines = cpuinfo.read_text(errors="replace").splitlines()
    except OSError:
        return model, flags
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model == "unknown":
            model = " ".join(value.split()) or model
        elif key.strip() == "flags" and flags is None:
            flags = set(value.split())
    return model, flags


def check(kernel: Path, what: str, cpuinfo: Path = CPUINFO) -> None:
    """Refuse, in one line starting with `what` (e.g. "job latency-3"), a kernel compiled for an
    instruction set this CPU lacks; nothing is checked for a kernel without the embedded string or
    on a CPU whose /proc/cpuinfo lists no flags."""
    built = target(kernel)
    model, flags = this_cpu(cpuinfo)
    if built is None or flags is None:
        return
    lacking = [flag for flag in built["isa"] if flag not in flags]
    if lacking:
        raise NumasweepError(
            f"{what}: {kernel} was compiled for {', '.join(lacking)} (on {built['cpu']}, flags {built['flags']}), "
            f"which this CPU ({model}) lacks; nothing was run: build it on a node like this one (`srun ... make "
            f"-C kernels`: the workflow builds where snakemake runs), or set build.kernel_cflags to flags every "
            f"node has, e.g. '-O3 -march=x86-64-v3' (docs/slurm.md)"
        )
