"""The report as one HTML page: the Markdown analysis (summary table, findings, figures) rendered
with Python-Markdown, beside experimentation.md so that its figure paths stay valid. Snakemake's
own HTML report (`snakemake --report report.html`) carries this page as the item of its
"Analysis" category, beside the figures by category.

`python -m numasweep html -i report/<system>/experimentation.md [-o .../experimentation.html]`
"""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path

import markdown

from numasweep.core.errors import NumasweepError
from numasweep.core.io import atomic_write_text

# Tables as the Markdown aligns them (numbers right), figures no wider than the page.
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.45; color: #222; }
h1, h2, h3 { line-height: 1.2; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.92rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.55rem; vertical-align: top; }
th { background: #f2f2f2; }
img { max-width: 100%; height: auto; }
code { background: #f5f5f5; padding: 0 0.2rem; }
pre { overflow-x: auto; }
"""


def render(text: str, title: str) -> str:
    """A complete HTML page from the report's Markdown."""
    body = markdown.markdown(text, extensions=["tables", "fenced_code", "sane_lists"], output_format="html")
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def title_of(text: str, fallback: str) -> str:
    m = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
    return m.group(1).strip() if m else fallback


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m numasweep html",
                                     description="Render the Markdown report as one HTML page beside it.")
    parser.add_argument("-i", "--input", required=True, help="experimentation.md")
    parser.add_argument("-o", "--output", help="the HTML page (default: the input with .html)")
    args = parser.parse_args(argv)
    source = Path(args.input)
    if not source.is_file():
        raise NumasweepError(f"{source}: no such report; render it first (snakemake report)")
    out = Path(args.output) if args.output else source.with_suffix(".html")
    if out.parent.resolve() != source.parent.resolve():
        raise NumasweepError(f"{out}: write the page beside {source} (its figure paths are relative to it)")
    text = source.read_text()
    atomic_write_text(out, render(text, title_of(text, source.parent.name)))
    print(f"{out}: {len(text.splitlines())} Markdown lines rendered")
    return 0
