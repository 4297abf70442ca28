"""The Markdown report as one HTML page: the same text, tables and figures, nothing else.

The report is written in Markdown first (`report.render`); this page is that text converted by
Python-Markdown (tables with their alignment, fenced code), so the two can never say different
things. Lists are read as GitHub reads them: one may start on the line after a paragraph, in a
banner (a blockquote) too (`reporting.markdown.separate_lists`). The figures are embedded
(base64 PNG), so the page is one file that opens anywhere, Snakemake's HTML report included
(which shows it under "Report").

No HTML passes through: the Markdown's text from configs, results and sysfs is escaped where it
entered it (`reporting.markdown.md_text`), and the conversion here reads no raw HTML either (any
`<` that reached the Markdown unescaped is shown as a `<`); the page's template escapes the title.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from urllib.parse import unquote

import jinja2
import markdown
import markupsafe

from numasweep.core.io import atomic_write_text
from numasweep.reporting.markdown import separate_lists

TEMPLATES = Path(__file__).resolve().parents[2] / "report"
IMG_SRC = re.compile(r'(<img\b[^>]*\bsrc=")([^"]+)(")')


def embed_figures(body: str, folder: Path) -> str:
    """Every <img> whose src is a PNG file beside the report, as a data URI."""
    def inline(m: re.Match) -> str:
        path = folder / unquote(html.unescape(m.group(2)))
        if m.group(2).startswith(("data:", "http:", "https:")) or path.suffix.lower() != ".png" or not path.is_file():
            return m.group(0)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f"{m.group(1)}data:image/png;base64,{data}{m.group(3)}"
    return IMG_SRC.sub(inline, body)


def to_html(text: str, folder: Path) -> tuple[str, str]:
    """(title, body) of a Markdown report whose figure paths are relative to `folder`."""
    converter = markdown.Markdown(extensions=["tables", "fenced_code", "sane_lists"], output_format="html")
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    body = converter.convert(separate_lists(text))
    # the first heading as a browser shows it: its text, tags (an <em>) left out
    title = re.search(r"<h1>(.*?)</h1>", body, re.DOTALL)
    return (html.unescape(re.sub(r"<[^>]*>", "", title.group(1))).strip() if title else folder.name,
            embed_figures(body, folder))


def write(markdown_path: str | Path, html_path: str | Path) -> Path:
    """The HTML page of a Markdown report written by `report.render`, next to it or where asked."""
    markdown_path, html_path = Path(markdown_path), Path(html_path)
    title, body = to_html(markdown_path.read_text(), markdown_path.parent)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    page = env.get_template("experimentation.html.j2").render(title=title, body=markupsafe.Markup(body))
    atomic_write_text(html_path, page)
    return html_path
