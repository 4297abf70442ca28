"""`python -m numasweep run-job`: the per-job lock, the job's process group, archive by copy,
and the workflow under kill -9 and SIGINT of snakemake. Launch lines here are real commands
(bash, the kernels); nothing is mocked."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numasweep.core import system_state
from numasweep.core import isa
from numasweep.planning import checks

from helpers.kernels import build_kernel, run, weights_folder
from helpers.workflow import TEST_CONFIGS, copy_repo, planned_jobs, snakemake, snakemake_env


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _runjob(tmp: Path, script: str, *extra: str, job: str = "j1") -> list[str]:
    """run-job argv whose launch line is `bash -c SCRIPT --csv=<csv>.partial` ($0 is the option)."""
    csv = tmp / "bench" / f"{job}.csv"
    topo = Path(__file__).resolve().parents[2] / "examples" / "lumi-g" / "topology.json"
    launch = shlex.join(["bash", "-c", script, f"--csv={csv}.partial"])
    return [sys.executable, "-m", "numasweep", "run-job", "--job-id", job, "--launch", launch,
            "--grid", '{"repetition": 0}', "--kernel", "/bin/true", "--topology", str(topo),
            "--csv", str(csv), "--provenance", str(csv.with_suffix(".json")),
            "--log", str(csv.with_suffix(".log")), *extra]


WRITE = 'printf "size,value\\n1,2.5\\n" > "${0#--csv=}"'
SLOW = 'sleep 60 & sleep 60; wait'


def _env() -> dict[str, str]:
    env = snakemake_env()
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "workflow")
    return env


def _wait_lock(tmp: Path, job: str = "j1") -> int:
    lock = tmp / "bench" / f".{job}.lock"
    deadline = time.time() + 30
    while time.time() < deadline:
        if lock.exists() and lock.read_text().strip():
            return int(lock.read_text())
        time.sleep(0.05)
    pytest.fail("the runner never took its lock")


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    members.append(int(entry.name))
            except (ProcessLookupError, PermissionError):
                pass
    return members


def _children_groups(pid: int) -> set[int]:
    groups = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == pid:
                    groups.add(os.getpgid(int(entry.name)))
            except (OSError, ValueError, ProcessLookupError):
                pass
    return groups


def test_finished_job_is_published_and_archived_by_copy(tmp_path: Path) -> None:
    proc = subprocess.run(_runjob(tmp_path, WRITE), capture_output=True, text=True, env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    csv = tmp_path / "bench" / "j1.csv"
    # one short progress line: the job, how long
    # ... and its quality verdict (a table without share columns: quiet, or noisy by the load average)
    assert re.fullmatch(r"numasweep: j1 measured in [0-9.]+ s"
                        r"; (quiet|noisy: load average [0-9.]+ on [0-9]+ CPUs when the job ended)",
                        proc.stderr.strip()), proc.stderr
    record = json.loads(csv.with_suffix(".json").read_text())
    assert record["quality"]["tries"] == 1
    # the tiering settings as the job found them, the same when it ended (nothing changed them)
    assert record["system"]["tiering_before"] == system_state.tiering_words(system_state.tiering())
    assert record["system"]["tiering_changed"] is None
    archived = {p.suffix: p for p in (tmp_path / "bench" / "archive").iterdir()}
    assert set(archived) == {".csv", ".json", ".log"}
    assert archived[".csv"].read_bytes() == csv.read_bytes()
    assert archived[".csv"].stat().st_ino != csv.stat().st_ino
    assert all(not os.access(p, os.W_OK) or os.geteuid() == 0 for p in archived.values())
    before = {p: _sha(p) for p in archived.values()}
    # An in-place edit and a truncation of the result, then a failed rerun that deletes it.
    with open(csv, "r+") as fh:
        fh.write("9")
    csv.write_text("")
    failed = subprocess.run(_runjob(tmp_path, "echo broken; exit 3"), capture_output=True, text=True,
                            env=_env(), timeout=60)
    assert failed.returncode == 3 and "broken" in failed.stderr
    csv.unlink()
    csv.with_suffix(".json").unlink()
    assert {p: _sha(p) for p in archived.values()} == before


def test_second_run_of_a_running_job_refuses_naming_the_pid(tmp_path: Path) -> None:
    first = subprocess.Popen(_runjob(tmp_path, SLOW), env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        holder = _wait_lock(tmp_path)
        assert holder == first.pid
        second = subprocess.run(_runjob(tmp_path, WRITE, "--lock-wait", "0"), capture_output=True,
                                text=True, env=_env(), timeout=60)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"PID {first.pid}" in lines[0] and "Traceback" not in second.stderr
        assert not (tmp_path / "bench" / "j1.csv").exists()
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=20)


@pytest.mark.slow
def test_second_run_waits_for_the_first_then_measures(tmp_path: Path) -> None:
    first = subprocess.Popen(_runjob(tmp_path, SLOW), env=_env(), stderr=subprocess.PIPE, text=True)
    _wait_lock(tmp_path)
    second = subprocess.Popen(_runjob(tmp_path, WRITE, "--lock-wait", "60"), env=_env(),
                              stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    assert second.poll() is None, "the second run did not wait"
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=20) == 128 + signal.SIGTERM
    _, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert f"held by PID {first.pid}" in err
    assert (tmp_path / "bench" / "j1.csv").read_text().startswith("size,value")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_ends_the_whole_process_group(tmp_path: Path, sig: int) -> None:
    runner = subprocess.Popen(_runjob(tmp_path, SLOW), env=_env(), stderr=subprocess.PIPE, text=True)
    _wait_lock(tmp_path)
    deadline = time.time() + 20
    while time.time() < deadline and not _children_groups(runner.pid):
        time.sleep(0.05)
    (group,) = _children_groups(runner.pid)
    assert group != os.getpgid(runner.pid), "the launch line must run in a process group of its own"
    runner.send_signal(sig)
    _, err = runner.communicate(timeout=20)
    assert runner.returncode == 128 + sig
    assert signal.Signals(sig).name in err and "Traceback" not in err
    deadline = time.time() + 10
    while time.time() < deadline and _group_members(group):
        time.sleep(0.1)
    assert _group_members(group) == []
    assert not (tmp_path / "bench" / "j1.csv").exists() and not (tmp_path / "bench" / "j1.csv.partial").exists()


def test_killed_runner_takes_its_job_with_it(tmp_path: Path) -> None:
    # SIGKILL cannot be caught: the launch line's parent death signal ends it.
    runner = subprocess.Popen(_runjob(tmp_path, "exec sleep 60"), env=_env(), stderr=subprocess.PIPE)
    _wait_lock(tmp_path)
    deadline = time.time() + 20
    while time.time() < deadline and not _children_groups(runner.pid):
        time.sleep(0.05)
    (group,) = _children_groups(runner.pid)
    runner.kill()
    runner.wait()
    deadline = time.time() + 10
    while time.time() < deadline and _group_members(group):
        time.sleep(0.1)
    assert _group_members(group) == []


def test_missing_launcher_names_the_package(tmp_path: Path) -> None:
    import shlex

    argv = _runjob(tmp_path, WRITE)
    csv = tmp_path / "bench" / "j1.csv"
    argv[argv.index("--launch") + 1] = shlex.join(["mpirun-not-here", f"--csv={csv}.partial"])
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=60)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "mpirun-not-here" in proc.stderr
    argv[argv.index("--launch") + 1] = shlex.join(["mpirun", f"--csv={csv}.partial"])
    env = _env()
    env["PATH"] = str(Path(sys.executable).parent)  # no Open MPI on this PATH
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "numasweep: error: mpirun: command not found; install openmpi-bin (apt-get install openmpi-bin)"
    ]


# ------------------------------------------------------------------ snakemake killed or interrupted


def _start_slow_sweep(work: Path) -> tuple[subprocess.Popen, list[str]]:
    args = ["sweep", "--profile", "profiles/local", "--configfile", str(TEST_CONFIGS / "slow.yaml")]
    sm = subprocess.Popen([sys.executable, "-m", "snakemake", *args], cwd=work, env=snakemake_env(),
                          stdout=open(work / "snakemake.out", "w"), stderr=subprocess.STDOUT,
                          start_new_session=True)
    return sm, args


def _wait_mid_job(sm: subprocess.Popen, results: Path) -> tuple[dict[Path, str], int]:
    """One job finished and the next one running: (finished files' checksums, its runner PID)."""
    deadline = time.time() + 240
    while time.time() < deadline:
        done = list(results.glob("*/latency/*.json"))
        partial = list(results.glob("*/latency/*.csv.partial"))
        if done and partial:
            job = partial[0].name[: -len(".csv.partial")]
            lock = partial[0].parent / f".{job}.lock"
            finished = {}
            for record in done:
                for ext in (".csv", ".json", ".log"):
                    finished[record.with_suffix(ext)] = _sha(record.with_suffix(ext))
            for archived in results.glob("*/latency/archive/*"):
                finished[archived] = _sha(archived)
            return finished, int(lock.read_text())
        assert sm.poll() is None, "the sweep ended before it could be interrupted"
        time.sleep(0.1)
    pytest.fail("no job finished within 240 s")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _processes_under(work: Path) -> list[str]:
    """Command lines of live processes that name the copy of the repository."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(work) in cmd and "snakemake" not in cmd and _alive(int(entry.name)):
                found.append(cmd)
    return found


def _mid_job(repo: Path, tmp_path: Path):
    """A copy of the repository with the slow sweep running, one job finished and one running."""
    work = copy_repo(repo, tmp_path / "numasweep")
    sm, args = _start_slow_sweep(work)
    try:
        finished, runner = _wait_mid_job(sm, work / "results")
    except BaseException:
        os.killpg(sm.pid, signal.SIGKILL)
        sm.wait()
        raise
    return work, work / "results", sm, args, finished, runner


@pytest.mark.workflow
def test_kill_9_of_snakemake_then_unlock_and_rerun_overlaps_nothing(repo: Path, tmp_path: Path) -> None:
    work, results, sm, args, finished, runner = _mid_job(repo, tmp_path)
    os.kill(sm.pid, signal.SIGKILL)  # snakemake alone: its job is not signalled by us
    sm.wait()
    # At once, as the README's recovery says.
    assert snakemake(work, "--unlock", *args).returncode == 0
    orphan_running = _alive(runner)
    rerun = subprocess.Popen([sys.executable, "-m", "snakemake", "--rerun-incomplete", *args], cwd=work,
                             env=snakemake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = rerun.communicate(timeout=400)
    assert rerun.returncode == 0, out[-3000:]
    # The orphan ended with snakemake (parent death signal), or the rerun waited for its lock:
    # either way the old runner is gone and never shared the job with the new one.
    assert not _alive(runner)
    if orphan_running:
        assert f"held by PID {runner}" in out, out[-3000:]
    csvs = sorted(results.glob("*/latency/*.csv"))
    assert len(csvs) == 3 and all(c.with_suffix(".json").exists() for c in csvs)
    assert {p: _sha(p) for p in finished} == finished
    assert _processes_under(work) == []


@pytest.mark.workflow
def test_sigint_to_snakemake_ends_the_job_and_keeps_finished_results(repo: Path, tmp_path: Path) -> None:
    work, results, sm, args, finished, runner = _mid_job(repo, tmp_path)
    try:
        os.kill(sm.pid, signal.SIGINT)  # the snakemake process alone, not its group
        deadline = time.time() + 10
        while time.time() < deadline and (_processes_under(work) or _alive(runner)):
            time.sleep(0.2)
        assert _processes_under(work) == [] and not _alive(runner)
        sm.wait(timeout=60)
    finally:
        if sm.poll() is None:
            os.killpg(sm.pid, signal.SIGKILL)
            sm.wait()
    assert {p: _sha(p) for p in finished} == finished
    # The running job was stopped, not left to finish and then be marked incomplete.
    out = (work / "snakemake.out").read_text()
    assert "stopped by SIGTERM" in out, out[-3000:]
    dry = snakemake(work, "-n", "--rerun-incomplete", *args)
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    again = planned_jobs(dry.stdout + dry.stderr)
    assert again and not again & {p.stem for p in finished if p.suffix == ".csv" and p.parent.name == "latency"}


def test_weights_left_by_a_killed_kernel_are_restored_by_the_next_run(kernels_bin: Path, tmp_path: Path) -> None:
    """The weights are a constructed folder (helpers.kernels.weights_folder), `auto` on: the
    host's own weights are never written by a test. A regular file does not turn `auto` off when a
    weight is written, so the test does, as the kernel would."""
    folder, env = weights_folder(tmp_path)
    weight, auto = folder / "node0", folder / "auto"
    bw = [str(kernels_bin / "numa_bandwidth"), "--policy=weighted", "--mem-nodes=0"]
    kernel = subprocess.Popen(bw + ["--weights=9", "--array-size=512M", "--ntimes=200", f"--csv={tmp_path / 'a.csv'}"],
                              env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while time.time() < deadline and weight.read_text().strip() != "9" and kernel.poll() is None:
            time.sleep(0.02)
        assert weight.read_text().strip() == "9" and (tmp_path / "w.state").exists(), kernel.poll()
        auto.write_text("false\n")
    finally:
        kernel.kill()
        kernel.wait()
    assert weight.read_text().strip() == "9"  # SIGKILL: no handler could restore them
    # The next job, through the job runner as the workflow runs it.
    argv = _runjob(tmp_path, "true", job="b")
    csv = tmp_path / "bench" / "b.csv"
    argv[argv.index("--launch") + 1] = shlex.join(bw + ["--array-size=1M", "--ntimes=2", f"--csv={csv}.partial"])
    argv[argv.index("--kernel") + 1] = bw[0]
    nxt = subprocess.run(argv, env={**_env(), **env}, capture_output=True, text=True, timeout=120)
    assert nxt.returncode == 0, nxt.stderr
    log = csv.with_suffix(".log").read_text()
    assert f"left changed by killed run PID {kernel.pid}" in log, log
    assert weight.read_text().strip() == "1" and auto.read_text().strip() == "true"
    assert not (tmp_path / "w.state").exists()
    # The provenance records it, and the report's data-quality notes say so.
    from numasweep.results import aggregate, quality

    record = json.loads(csv.with_suffix(".json").read_text())
    assert f"killed run PID {kernel.pid}" in record["system"]["weights_restored"]
    notes = quality.notes({"bandwidth": aggregate.read_job(csv, "bandwidth")})
    said = [n["note"] for n in notes if "killed run" in n["note"]]
    assert len(said) == 1 and f"PID {kernel.pid}" in said[0], notes


def test_kernel_built_for_another_cpu_names_the_build_flags(tmp_path: Path) -> None:
    # What a kernel built with -march=native on a newer login node does on an older compute node.
    proc = subprocess.run(_runjob(tmp_path, 'kill -ILL $$'), capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert proc.returncode == 128 + signal.SIGILL, proc.stderr
    assert "build.kernel_cflags" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "bench" / "j1.csv").exists()


# Instruction sets gcc 12 (Debian 12) compiles for, as its option and the /proc/cpuinfo flag: no
# x86 CPU has them all (the Xeon Phi's avx512er was never on a CPU with amx_tile).
FOREIGN_SETS = (("amx-tile", "amx_tile"), ("amx-int8", "amx_int8"), ("amx-bf16", "amx_bf16"),
                ("avx512fp16", "avx512_fp16"), ("avx512vp2intersect", "avx512_vp2intersect"),
                ("avx512bf16", "avx512_bf16"), ("avx512er", "avx512er"), ("avx512pf", "avx512pf"),
                ("avx5124fmaps", "avx512_4fmaps"), ("avx5124vnniw", "avx512_4vnniw"), ("avxvnni", "avx_vnni"),
                ("avx512vnni", "avx512_vnni"), ("avx512f", "avx512f"), ("fma4", "fma4"), ("xop", "xop"),
                ("avx2", "avx2"))


def test_kernel_compiled_for_an_instruction_set_this_cpu_lacks_is_refused_before_it_runs(tmp_path: Path) -> None:
    if platform.machine() not in ("x86_64", "i686"):
        pytest.fail(f"NOT RUN: on {platform.machine()} a kernel lists no instruction sets (isa.FLAGS is x86's), "
                    f"so run-job checks none")
    model, flags = isa.this_cpu()
    cc = os.environ.get("CC") or "gcc"
    chosen = next(((option, flag) for option, flag in FOREIGN_SETS if flag not in flags
                   and run([cc, f"-m{option}", "-dM", "-E", "-x", "c", "/dev/null"]).returncode == 0), None)
    assert chosen, f"this x86 CPU has every one of {[f for _, f in FOREIGN_SETS]}, or {cc} accepts none of them"
    option, flag = chosen
    kernel = build_kernel(tmp_path / "build", "numa_c2c", f"-O3 -march=native -m{option}")
    started = tmp_path / "started"
    argv = _runjob(tmp_path, f'touch {shlex.quote(str(started))}; exec {shlex.quote(str(kernel))} "$0"')
    argv[argv.index("--kernel") + 1] = str(kernel)
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert re.match(rf"numasweep: error: job j1: {re.escape(str(kernel))} was compiled for (.*, )?{flag}(,|\s)",
                    lines[0]), lines[0]
    assert f"(on {model}, flags -O3 -march=native -m{option})" in lines[0] and f"this CPU ({model}) lacks" in lines[0]
    assert "build.kernel_cflags" in lines[0], lines[0]
    # The kernel never started: no launch, no log, no table.
    assert not started.exists() and not list((tmp_path / "bench").glob("j1.*")), list((tmp_path / "bench").iterdir())
    # run-batch refuses the same, before its first point.
    folder = tmp_path / "batched"
    launch = f'bash -c {shlex.quote(f"touch {shlex.quote(str(started))}")} --csv={folder / "p1.csv"}.partial'
    batch = subprocess.run([sys.executable, "-m", "numasweep", "run-batch", "--batch", "b1", "--kernel", str(kernel),
                            "--topology", argv[argv.index("--topology") + 1],
                            "--manifest", str(folder / "batches" / "b1.json"), "--log", str(folder / "b1.log"),
                            "--point", "p1", launch, '{"repetition": 0}'],
                           capture_output=True, text=True, env=_env(), timeout=60)
    assert batch.returncode == 2 and len(batch.stderr.strip().splitlines()) == 1, batch.stderr
    assert batch.stderr.startswith(f"numasweep: error: batch b1: {kernel} was compiled for") and flag in batch.stderr
    assert not started.exists() and not (folder / "p1.log").exists()
    # The plan's check of a sweep's extra_args asks no kernel this CPU cannot run (a compute node's
    # build, read on a login node): it would die of SIGILL; the job asks it where it runs.
    checks._kernel_accepts(kernel, ["--no-such-option"], ("--no-such-option",), "c2c.sweeps[0].extra_args")
    assert not started.exists()


# A table whose on_cpu_pct is 10 for the first `$1` tries, then 100 (a count in the folder).
SHARED_FOR = ('n=$(( $(cat "$(dirname "${0#--csv=}")/tries" 2>/dev/null || echo 0) + 1 )); '
              'echo $n > "$(dirname "${0#--csv=}")/tries"; pct=100; [ $n -le %d ] && pct=10; '
              'echo "numa_x: warning: a thread ran only $pct%% of the time on its CPU"; '
              'printf "size,value,on_cpu_pct\\n1,2.5,$pct\\n" > "${0#--csv=}"')


@pytest.mark.parametrize("disturbed_tries, retry, tries, final", [(1, 2, 2, "not disturbed"), (9, 1, 2, "disturbed"),
                                                                  (9, 0, 1, "disturbed")])
def test_a_disturbed_job_is_measured_again_each_try_archived(tmp_path: Path, disturbed_tries: int, retry: int,
                                                             tries: int, final: str) -> None:
    proc = subprocess.run(_runjob(tmp_path, SHARED_FOR % disturbed_tries, "--retry-disturbed", str(retry),
                                  "--retry-backoff", "0.1"), capture_output=True, text=True, env=_env(), timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    record = json.loads((tmp_path / "bench" / "j1.json").read_text())["quality"]
    assert record["tries"] == tries and (record["verdict"] == "disturbed") == (final == "disturbed"), record
    archived = sorted((tmp_path / "bench" / "archive").glob("j1.*.json"))
    assert [json.loads(p.read_text())["quality"]["tries"] for p in archived] == list(range(1, tries + 1))
    assert json.loads(archived[0].read_text())["quality"]["verdict"] == "disturbed"
    lines = proc.stderr.strip().splitlines()
    # one progress line per try, the verdict and the kernel's warning on it; a line per retry
    measured = [ln for ln in lines if " measured in " in ln]
    assert len(measured) == tries and len(lines) == 2 * tries - 1, proc.stderr
    assert "; disturbed: a thread on its CPU 10% of the time" in measured[0], measured[0]
    assert all(ln.endswith("; 1 warning") and len(ln) < 160 for ln in measured), measured
    if final == "disturbed":     # its last try says what becomes of it
        assert ("(try 2 of 2, last: the report lists it disturbed)" if retry
                else "(the report lists it disturbed)") in measured[-1], measured[-1]
    assert all("measuring again in" in ln for ln in lines if ln not in measured)


def test_a_log_followed_while_the_job_waits_for_the_machine_is_followed_to_the_end(tmp_path: Path) -> None:
    from numasweep.running import hostlock

    log = tmp_path / "bench" / "j1.log"
    holder = hostlock.HostLock("holder", system="other")
    assert holder.acquire(0)
    job = subprocess.Popen(_runjob(tmp_path, 'for i in 1 2 3; do echo step $i; sleep 0.3; done; echo last step; '
                                             + WRITE), env=_env(), stderr=subprocess.PIPE, text=True)
    tail = None
    try:
        deadline = time.time() + 30
        while not (log.exists() and "waits for the machine" in log.read_text()):
            assert time.time() < deadline and job.poll() is None, "the job's log never said it waits"
            time.sleep(0.05)
        assert f"PID {os.getpid()}" in log.read_text() and "job holder" in log.read_text()
        tail = subprocess.Popen(["tail", "-n", "+1", "-f", str(log)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        holder.release()
        _, err = job.communicate(timeout=60)
        assert job.returncode == 0, err
        time.sleep(1.5)  # tail -f polls the file about once a second
        assert tail.poll() is None, tail.stderr.read()
    finally:
        holder.release()
        if job.poll() is None:
            job.kill()
        if tail is not None:
            tail.terminate()
    out, err = tail.communicate(timeout=10)
    assert "waits for the machine" in out and "has the machine now" in out and "last step" in out, out
    assert out.index("waits for the machine") < out.index("step 1") < out.index("last step"), out
    assert "inaccessible" not in err and "truncated" not in err, err


@pytest.mark.parametrize("option, value", [("--retry-disturbed", "-1"), ("--repeat-until", "nan"),
                                           ("--retry-backoff", "-5"), ("--max-repeats", "1000000000"),
                                           ("--repeat-until", "1e-12")])
def test_run_job_refuses_a_number_out_of_its_range(tmp_path: Path, option: str, value: str) -> None:
    proc = subprocess.run(_runjob(tmp_path, WRITE, option, value), capture_output=True, text=True, env=_env(),
                          timeout=60)
    assert proc.returncode == 2 and f"argument {option}: " in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "bench" / "j1.csv").exists()
