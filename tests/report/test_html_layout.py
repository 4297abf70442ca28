"""The HTML page as Chromium lays it out: no number in a table broken across lines or sticking out
of its cell, no header broken inside a word, wide tables scrolling in their own box, and code
blocks ("Commands run") showing each line whole (layout_check.js measures the rendered cells).

Pages: the LUMI-G example (two raw latency tables of 20 columns) and a report of every benchmark
(tests/helpers/synthetic.py), which holds every table the default sweep's report has."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.synthetic import write_results
from numasweep.findings import analysis
from numasweep.reporting import html, report

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def page(results: Path, out: Path) -> Path:
    """experimentation.html of a results folder, as the report rule writes it (without figures:
    they do not change the tables)."""
    out.mkdir(parents=True, exist_ok=True)
    md = report.render(results, analysis.analyse(results), None, out / "experimentation.md")
    return html.write(md, out / "experimentation.html")


def layout(page_path: Path, tmp_path: Path, width: int) -> dict:
    """layout_check.js's verdict on the page in a window `width` pixels wide."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed: apt-get install chromium (bash scripts/numasweep.sh test does)"
    text = page_path.read_text()
    cut = text.rfind("</body>")
    checked = page_path.with_name(f"checked-{width}.html")
    checked.write_text(text[:cut] + "<script>" + (HERE / "layout_check.js").read_text() + "</script>" + text[cut:])
    proc = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                           "--virtual-time-budget=10000", f"--window-size={width},1000", "--dump-dom",
                           checked.as_uri()], capture_output=True, text=True, timeout=180)
    found = re.findall(r'<pre id="layout-check">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"the check script left no verdict:\n{proc.stderr[-2000:]}"
    return json.loads(found[-1].replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


@pytest.mark.parametrize("width", [1280, 800])
@pytest.mark.parametrize("name", ["lumi-g", "every-benchmark"])
def test_table_cells_hold_their_numbers_and_code_blocks_show_every_line(name: str, width: int,
                                                                        tmp_path: Path) -> None:
    results = REPO / "examples" / name if name == "lumi-g" else write_results(tmp_path / "results" / "twin")
    out = tmp_path / "report"
    verdict = layout(page(results, out), tmp_path, width)
    print(f"{name} at {width} px: {json.dumps({k: v for k, v in verdict.items() if k != 'problems'})}")
    assert verdict["tables"] >= 10 and verdict["numbers"] >= 300 and verdict["code_blocks"] >= 1, verdict
    # LUMI-G's raw latency tables (20 columns) are wider than the text: they scroll, in their own box
    assert name != "lumi-g" or verdict["scrolling"] >= 2, verdict
    assert not verdict["problems"], "\n".join(verdict["problems"][:20])
