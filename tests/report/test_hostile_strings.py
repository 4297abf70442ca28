"""Text that a user or a machine controls is text in every report: a results folder whose cached
topology.json, hosts and launch lines, an arch file and references all carry markup and Markdown
(script, an image with a handler, a tag breaking out of an attribute, javascript: links, link and
image syntax) gives an experimentation.md/html with its comparison and fleet sections, and a
report of two systems, in which Chromium's DOM holds no element and no attribute of theirs and
shows each string as written."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers.synthetic import write_results

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
HOSTILE = ('<script>alert(1)</script> <img src=x onerror=alert(1)> "><svg onload=alert(1)> '
           "[link](javascript:alert(1)) ![image](x.png) <javascript:alert(1)> *em* _under_ a|b &lt; x\\")


def hostile(field: str) -> str:
    return f"{field} {HOSTILE}"


# the elements a report page is made of: the template's and what Markdown writes for the
# report's own headings, lists, tables, code, figures and emphasis
ELEMENTS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "ul", "ol", "li",
            "table", "thead", "tbody", "tr", "th", "td", "pre", "code", "strong", "em", "blockquote", "img",
            "figure", "hr", "br"}


class Page(HTMLParser):
    """A DOM as Chromium serialised it: its elements with their attributes, and its text."""

    def __init__(self, dom: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.texts: list[str] = []
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def text(self) -> str:
        return " ".join("".join(self.texts).split())


def dom(html: Path, tmp_path: Path) -> Page:
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed: apt-get install chromium"
    try:
        proc = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                               "--virtual-time-budget=5000", "--dump-dom", html.as_uri()],
                              capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{html.name}: Chromium never finished the page: a script in it ran (its alert waits forever)")
    assert "</body>" in proc.stdout, proc.stderr[-2000:]
    return Page(proc.stdout)


def numasweep(*args: str | Path, verdicts: tuple[int, ...] = (0,)) -> None:
    proc = subprocess.run([sys.executable, "-m", "numasweep", *map(str, args)], capture_output=True, text=True)
    assert proc.returncode in verdicts, proc.stderr


def cached_folder(tmp_path: Path) -> Path:
    """Every benchmark's results measured on two hosts (a fleet), with a cached topology.json
    whose system, CPU, hypervisor and GPU are hostile, and hostile hosts and launch lines."""
    results = write_results(tmp_path / "results" / "twin")
    topo = json.loads((results / "topology.json").read_text())
    topo.update(system=hostile("system"), cpu_model=hostile("cpu_model"), hypervisor=hostile("hypervisor"),
                gpus=[{"id": 0, "name": hostile("gpu name"), "pci": "0000:c1:00.0", "node": 0,
                       "vendor": "nvidia"}])
    (results / "topology.json").write_text(json.dumps(topo))
    for csv in results.glob("*.csv"):
        table = pd.read_csv(csv)
        twice = pd.concat([table.assign(host=hostile("host a")), table.assign(host=hostile("host b"))])
        twice.assign(command=hostile("command")).to_csv(csv, index=False)
    return results


def arch_folder(tmp_path: Path) -> Path:
    """LUMI-G's results with the topology a live run writes from an arch file whose CPU is
    hostile (its system names files and folders: the arch file's check allows no markup there)."""
    results = tmp_path / "results" / "lumi"
    shutil.copytree(REPO / "examples" / "lumi-g", results)
    arch = yaml.safe_load((REPO / "config" / "arch" / "lumi-g.yaml").read_text())
    arch.update(cpu_model=hostile("arch cpu_model"))
    (tmp_path / "arch.yaml").write_text(yaml.safe_dump(arch))
    numasweep("topology", "--arch", tmp_path / "arch.yaml", "-o", results / "topology.json")
    return results


def references(tmp_path: Path) -> Path:
    path = tmp_path / "refs.yaml"
    path.write_text(yaml.safe_dump({"references": [
        {"name": hostile("reference name"), "bench": "latency", "reference": [1, -0.1, 0.1, "ns"]},
        {"name": "by mode", "bench": "latency", "where": {"mode": hostile("where mode")},
         "reference": [90, -0.5, 0.5, "ns"]}]}))
    return path


def outside_code(markdown: str) -> str:
    """The Markdown but its fenced blocks and code spans, whose text is literal to every reader."""
    return re.sub(r"(`+).+?\1", "", re.sub(r"^(`{3,}).*?^\1", "", markdown, flags=re.M | re.S))


def assert_text_only(page: Page, fields: list[str]) -> None:
    for tag, attrs in page.elements:
        assert tag in ELEMENTS, (tag, attrs)
        for name, value in attrs:
            assert not name.startswith("on") and "javascript" not in (value or ""), (tag, name, value)
        if tag == "img":
            assert dict(attrs)["src"].startswith("data:image/png;base64,"), attrs
    shown = page.text()
    for field in fields:
        assert " ".join(hostile(field).split()) in shown, field


def test_hostile_strings_are_text_in_every_report(tmp_path: Path) -> None:
    cached, lumi = cached_folder(tmp_path), arch_folder(tmp_path)
    out = tmp_path / "report"
    out.mkdir()
    # compare's exit code is its verdict: passed (0) or failed (1), never an error
    numasweep("compare", "--results", cached, "--config", references(tmp_path), "-o", out / "comparison.md",
              verdicts=(0, 1))
    numasweep("fleet", "--results", cached, "-o", out / "fleet.md")
    numasweep("figures", "--results", cached, "-o", out / "figures")
    numasweep("report", "--results", cached, "--figures", out / "figures", "--section", out / "comparison.md",
              "--section", out / "fleet.md", "-o", out / "experimentation.md", "--html", out / "experimentation.html")
    numasweep("report", "--results", cached, "--results", lumi, "-o", out / "cross.md", "--html", out / "cross.html")

    for md in out.glob("*.md"):
        text = outside_code(md.read_text())
        # no tag, and no link or image but the report's own figures
        assert not re.search(r"<(script|img|svg|javascript)", text), md.name
        assert not re.search(r"(?<!\\)\]\((?!figures/)", text), md.name

    page = dom(out / "experimentation.html", tmp_path)
    assert_text_only(page, ["system", "cpu_model", "hypervisor", "gpu name", "host a", "host b",
                            "command", "reference name", "where mode"])
    assert sum(tag == "img" for tag, _ in page.elements) >= 8     # the figures, and only they
    assert dict(page.elements[[t for t, _ in page.elements].index("title")][1]) == {}
    assert assert_title(out / "experimentation.html", hostile("system"))
    assert_text_only(dom(out / "cross.html", tmp_path), ["system", "cpu_model", "hypervisor", "arch cpu_model",
                                                         "command"])


def assert_title(html: Path, system: str) -> bool:
    """The page's <title> is the report's heading as text."""
    found = re.search(r"<title>(.*?)</title>", html.read_text(), re.S)
    page = Page(f"<title>{found.group(1)}</title>")
    return page.text() == " ".join(f"NUMA memory benchmarks on {system}".split())
