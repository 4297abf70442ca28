"""The report stage under Snakemake: regeneration from cached results with no benchmark tool on
PATH, and Snakemake's HTML report checked in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.synthetic import write_results
from helpers.workflow import job_counts, snakemake, snakemake_env

pytestmark = pytest.mark.workflow

HERE = Path(__file__).resolve().parent
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
REPORT_JOBS = {"analyse", "figures", "report_md", "report"}


def cached_workdir(repo: Path, tmp_path: Path) -> Path:
    """A working directory for the project's Snakefile, so a test run writes nothing in the
    repository: it needs only the config folder next to it."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "config").symlink_to(repo / "config")
    return workdir


def bare_path(tmp_path: Path) -> str:
    """A PATH holding only a shell and `which` (the SLURM executor plugin runs `which sacct`
    when imported): no numactl, MPI launcher, SLURM client or compiler."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("bash", "sh", "which"):
        (bindir / tool).symlink_to(shutil.which(tool))
    path = str(bindir)
    for tool in ("numactl", "mpirun", "srun", "sbatch", "cc", "gcc", "make", "nvcc"):
        assert shutil.which(tool, path=path) is None
    return path


def test_regeneration_dry_run_lists_only_report_jobs(repo: Path, tmp_path: Path) -> None:
    workdir = cached_workdir(repo, tmp_path)
    proc = snakemake(workdir, "-s", str(repo / "workflow" / "Snakefile"), "-d", str(workdir), "-n", "report",
                     "--config", f"results={repo / 'examples' / 'lumi-g'}", check=True)
    counts = job_counts(proc.stdout + proc.stderr)
    assert set(counts) == REPORT_JOBS and all(n == 1 for n in counts.values()), counts


def test_regeneration_from_lumi_g_example_without_tools(repo: Path, tmp_path: Path) -> None:
    workdir = cached_workdir(repo, tmp_path)
    env = {**os.environ, "PATH": bare_path(tmp_path)}
    start = time.monotonic()
    snakemake(workdir, "-s", str(repo / "workflow" / "Snakefile"), "-d", str(workdir), "-c2", "report",
              "--config", f"results={repo / 'examples' / 'lumi-g'}", env=env, check=True)
    elapsed = time.monotonic() - start
    print(f"report regenerated from examples/lumi-g in {elapsed:.1f} s (target: under 30 s)")
    out = workdir / "report" / "example-lumi-g"
    findings = json.loads((out / "findings.json").read_text())
    assert findings["findings"]
    text = (out / "experimentation.md").read_text()
    assert "## Summary" in text
    assert "<h2>Summary</h2>" in (out / "experimentation.html").read_text()
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (out / link).is_file(), link
    assert sorted(p.name for p in (out / "figures" / "latency").glob("*.png")) == [
        "concurrent_vs_serial--all.png", "latency_matrix--concurrent.png", "latency_matrix--serial.png",
        "latency_vs_size--concurrent.png", "latency_vs_size--serial.png"]
    # nothing was built or measured
    assert not (workdir / "build").exists() and not (workdir / "results").exists()
    # the project's default target registers every figure for Snakemake's HTML report
    snakemake(workdir, "-s", str(repo / "workflow" / "Snakefile"), "-d", str(workdir), "--report", "report.html",
              "--config", f"results={repo / 'examples' / 'lumi-g'}", env=env, check=True)
    html = (workdir / "report.html").read_text()
    for png in (out / "figures" / "latency").glob("*.png"):
        assert f'"name": "{png.name}"' in html, png.name


def test_a_full_disk_ends_the_report_in_one_line_and_leaves_nothing_half_written(repo: Path, tmp_path: Path) -> None:
    """report/ on a small tmpfs (as root) that the figures do not fit in: the console shows one
    numasweep line naming the figure folder and the space needed, no traceback, and the folder
    holds no figure, page or temporary file of the failed run."""
    workdir = cached_workdir(repo, tmp_path)
    report = workdir / "report"
    report.mkdir()
    if os.geteuid() != 0:
        pytest.fail("NOT RUN: a full disk is a small tmpfs, which only root can mount (run the tests as root)")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(report)],
                           capture_output=True, text=True)
    assert mount.returncode == 0, f"cannot mount a tmpfs at {report}: {mount.stderr.strip()}"
    try:
        proc = snakemake(workdir, "-s", str(repo / "workflow" / "Snakefile"), "-d", str(workdir), "-c1", "report",
                         "--config", f"results={repo / 'examples' / 'lumi-g'}")
        left = sorted(str(p.relative_to(report)) for p in report.rglob("*") if p.is_file())
    finally:
        subprocess.run(["umount", str(report)], check=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("numasweep: ")]
    assert re.search(r"disk full at report/example-lumi-g/figures: the figures were not written; they need "
                     r"[0-9.]+ KiB, [0-9.]+ KiB are free there; free space there", line), line
    # at most what a step that ran before it wrote whole (analyse); no figure, page or temporary file
    assert set(left) <= {"example-lumi-g/.report.lock", "example-lumi-g/findings.json"}, left


def test_two_reports_of_one_cached_folder_wait_for_each_other(repo: Path, tmp_path: Path) -> None:
    """`snakemake report --config results=...` twice, 1.5 s apart: the second waits for the first
    (one line naming its PID) and both end well, instead of Snakemake refusing the second (its
    directory lock, or the first run's outputs taken as incomplete)."""
    workdir = cached_workdir(repo, tmp_path)
    args = ("-s", str(repo / "workflow" / "Snakefile"), "-d", str(workdir), "-c1", "report",
            "--config", f"results={repo / 'examples' / 'lumi-g'}")
    first = subprocess.Popen([sys.executable, "-m", "snakemake", *args], cwd=workdir, env=snakemake_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.5)
        second = snakemake(workdir, *args)
    finally:
        first_out = first.communicate(timeout=300)[0]
    assert first.returncode == 0, first_out[-3000:]
    out = second.stdout + second.stderr
    assert second.returncode == 0, out[-3000:]
    assert re.search(rf"numasweep: the report folder report/example-lumi-g is held by PID {first.pid} ", out), \
        out[-3000:]
    assert "has the lock now" in out and "Exception" not in out, out[-3000:]
    assert (workdir / "report" / "example-lumi-g" / "experimentation.html").is_file()


def figure_check(html: Path, tmp_path: Path) -> list[dict]:
    """Open a copy of the report with figure_check.js appended; return its per-figure verdicts."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed: apt-get install chromium"
    page = html.read_text()
    cut = page.rfind("</body>")
    checked = tmp_path / "checked.html"
    checked.write_text(page[:cut] + "<script>" + (HERE / "figure_check.js").read_text() + "</script>" + page[cut:])
    common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=30000"]
    proc = subprocess.run([*common, "--dump-dom", checked.as_uri()], capture_output=True, text=True, timeout=180)
    found = re.findall(r'<pre id="figure-check">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"the check script left no verdict:\n{proc.stderr[-2000:]}"
    verdict = json.loads(found[-1].replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert "error" not in verdict, verdict
    # A screenshot of the report as a reader sees it after the last figure was shown.
    shot = tmp_path / "report.png"
    subprocess.run([*common, "--window-size=1400,900", f"--screenshot={shot}", checked.as_uri()],
                   capture_output=True, text=True, timeout=180)
    assert shot.exists(), "chromium wrote no screenshot"
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])
    assert (width, height) == (1400, 900) and shot.stat().st_size > 20000
    return verdict["checks"]


def test_html_report_shows_every_figure_in_chromium(repo: Path, tmp_path: Path) -> None:
    results = write_results(tmp_path / "results" / "twin")
    workdir = tmp_path / "work"
    workdir.mkdir()
    args = ["-s", str(HERE / "Snakefile"), "-d", str(workdir), "--config", f"results={results}"]
    snakemake(workdir, *args, "-c2", "report", check=True)
    snakemake(workdir, *args, "--report", "report.html", "report", check=True)
    pngs = sorted((workdir / "report" / "twin" / "figures").rglob("*.png"))
    assert len(pngs) >= 8
    checks = figure_check(workdir / "report.html", tmp_path)
    assert sorted(Path(c["path"]).name for c in checks) == sorted(p.name for p in pngs)
    for c in checks:
        assert c["found"] and c["listed"], c
        assert c["width"] >= 600 and c["height"] >= 400, c
    categories = {c["category"] for c in checks}
    assert categories == {"Memory latency", "Memory bandwidth", "Node-to-node copy", "Host-device transfers"}
    # the report itself, as one page, is the item of its own category (figure_check.js checks images only)
    page = (workdir / "report.html").read_text()
    assert re.search(r'"report/twin/experimentation.html": \{[^{}]*"mime_type": "text/html"', page)
    assert '"Report"' in page


PAGE_CHECK = """<script>
window.addEventListener("load", () => {
    const out = document.createElement("pre");
    out.id = "page-check";
    const summary = [...document.querySelectorAll("h2")].find((h) => h.textContent.trim() === "Summary");
    let table = summary ? summary.nextElementSibling : null;
    while (table && table.tagName !== "TABLE" && table.tagName !== "H2") { table = table.nextElementSibling; }
    out.textContent = JSON.stringify({
        summary: Boolean(summary),
        summary_rows: table && table.tagName === "TABLE" ? table.querySelectorAll("tbody tr").length : 0,
        images: [...document.images].map((img) => ({ src: img.getAttribute("src"), width: img.naturalWidth })),
    });
    document.body.appendChild(out);
});
</script>"""


def test_html_page_shows_the_summary_and_the_figures_in_chromium(repo: Path, tmp_path: Path) -> None:
    """experimentation.html, as a browser shows it: the summary table first, every figure decoded."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed: apt-get install chromium"
    results = write_results(tmp_path / "results" / "twin")
    workdir = tmp_path / "work"
    workdir.mkdir()
    snakemake(workdir, "-s", str(HERE / "Snakefile"), "-d", str(workdir), "--config", f"results={results}", "-c2",
              "report", check=True)
    out = workdir / "report" / "twin"
    page = (out / "experimentation.html").read_text()
    assert page.count("<img") == len(re.findall(r"!\[[^\]]*\]\(", (out / "experimentation.md").read_text())) >= 8
    checked = out / "checked.html"          # beside the page: its figure paths are relative
    cut = page.rfind("</body>")
    checked.write_text(page[:cut] + PAGE_CHECK + page[cut:])
    common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    proc = subprocess.run([*common, "--dump-dom", checked.as_uri()], capture_output=True, text=True, timeout=180)
    found = re.findall(r'<pre id="page-check">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"the check script left no verdict:\n{proc.stderr[-2000:]}"
    verdict = json.loads(found[-1].replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert verdict["summary"] and verdict["summary_rows"] >= 3, verdict
    assert verdict["images"] and all(i["width"] >= 600 for i in verdict["images"]), verdict["images"]
    shot = tmp_path / "page.png"
    subprocess.run([*common, "--window-size=1280,1600", f"--screenshot={shot}", checked.as_uri()],
                   capture_output=True, text=True, timeout=180)
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])
    assert (width, height) == (1280, 1600) and shot.stat().st_size > 20000
    shutil.copy(shot, tmp_path.parent / "experimentation-page.png")  # for a look after the run
