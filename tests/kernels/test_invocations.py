"""Every bad invocation exits 2 with one line on stderr that names the problem."""

from __future__ import annotations

import pytest

from helpers.kernels import run

L, B, C = "numa_latency", "numa_bandwidth", "numa_copy"

# (kernel, arguments, extra environment, words the one-line message must contain)
BAD = [
    (L, ["--size=0"], {}, "zero"),
    (L, ["--size=-5"], {}, "negative"),
    (L, ["--size=5X"], {}, "unknown unit"),
    (L, ["--size=16-1"], {}, "runs backwards"),
    (L, ["--size=1-12"], {}, "powers of two"),
    (L, ["--size=1", "--policy=bind", "--mem-nodes=7"], {}, "node 7 does not exist"),
    (L, ["--size=250G"], {}, "exceeds the free memory"),
    (L, ["--policy=weighted", "--mem-nodes=0", "--weights=1,2"], {}, "2 weights for 1 nodes"),
    (L, ["--policy=weighted", "--mem-nodes=0", "--weights=0"], {}, "--weights: 0 is out of range"),
    (L, ["--policy=weighted", "--mem-nodes=0", "--weights=256"], {}, "--weights: 256 is out of range"),
    (L, ["--policy=weighted", "--mem-nodes=0"], {"NUMASWEEP_FAKE_NO_WEIGHTED": "1"}, "no weighted interleave"),
    (B, ["--pattern=zigzag"], {}, "unknown pattern 'zigzag'"),
    (B, ["--pattern=strided", "--stride=0"], {}, "--stride: 0 is out of range"),
    (B, ["--threads=0"], {}, "--threads: 0 is out of range"),
    (B, [], {"OMP_NUM_THREADS": "0"}, "OMP_NUM_THREADS: 0 is out of range"),
    (L, ["--frobnicate"], {}, "unknown option '--frobnicate'"),
    (L, ["--csv=/nonexistent-folder/x.csv"], {}, "folder '/nonexistent-folder' does not exist"),
    (B, ["--csv=/nonexistent-folder/x.csv"], {}, "does not exist"),
    (C, ["--src=0"], {}, "give --src=A and --dst=B"),
    (C, ["--src=7", "--dst=0"], {}, "--src: node 7 does not exist"),
    (C, ["--matrix", "--policy=bind", "--mem-nodes=0"], {}, "do not apply to numa_copy"),
    (L, ["--pages=3m"], {}, "unknown page size"),
    (L, ["--policy=sideways"], {}, "unknown policy"),
    (L, ["--policy=bind"], {}, "needs --mem-nodes"),
    (L, ["--mem-nodes=0"], {}, "--mem-nodes needs --policy"),
    (L, ["--policy=interleave", "--mem-nodes=0", "--weights=1"], {}, "--weights applies only to --policy=weighted"),
    (L, ["--samples=0"], {}, "--samples: 0 is out of range"),
    (L, ["--min-time=soon"], {}, "--min-time: 'soon' is not a number"),
    (L, ["512"], {}, "unexpected argument '512'"),
    (L, ["--size"], {}, "'--size' needs a value"),
    (L, ["--serial=yes"], {}, "'--serial' takes no value"),
    (B, ["--ntimes=1"], {}, "--ntimes: 1 is out of range"),
    (B, ["--kernels=copy,fma"], {}, "unknown kernels 'fma'"),
    (C, ["--src=0", "--dst=0", "--size=1Q"], {}, "unknown unit"),
    (B, ["--stores=streaming"], {}, "unknown stores 'streaming': use regular or nt"),
    # A plain number is MiB: one meant as bytes is named with the size it was read as.
    (B, ["--array-size=67108864"], {},
     "(a plain number is MiB: 67108864 is read as 65536G; for 67108864 bytes write 64M)"),
    (L, ["--size=16K,1073741824"], {}, "(a plain number is MiB: 1073741824 is read as 1048576G; for 1073741824 bytes write 1G)"),
    (C, ["--src=0", "--dst=0", "--size=67108864"], {},
     "(a plain number is MiB: 67108864 is read as 65536G; for 67108864 bytes write 64M)"),
    (L, ["--spread=-1"], {}, "--spread: -1 is out of range"),
    (L, ["--max-time=never"], {}, "--max-time: 'never' is not a number"),
]


@pytest.mark.parametrize("kernel,args,env,words", BAD, ids=[f"{k}:{' '.join(a) or list(e)[0]}" for k, a, e, _ in BAD])
def test_bad_invocation_exits_2_with_one_line(kernels_bin, kernel, args, env, words):
    proc = run([kernels_bin / kernel, *args], env=env)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    # libgomp itself complains about a bad OMP_NUM_THREADS as it loads, before the kernel runs.
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("libgomp: ")]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{kernel}: error: "), lines[0]
    assert words in lines[0], lines[0]
    assert proc.stdout == ""


def test_at_least_fifteen_bad_invocations_are_covered():
    assert len(BAD) >= 15
