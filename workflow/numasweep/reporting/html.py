"""The Markdown report as one HTML page: the same text, tables and figures, nothing else.

The report is written in Markdown first (`report.render`); this page is that text read back, so
the two can never say different things. No Markdown library is among the report's dependencies,
and the report writes a small subset of Markdown: ATX headings, paragraphs, pipe tables with
their alignment row, images alone on a line, `- ` lists, `> ` quotes, fenced code, and inline
`**bold**`, `*italic*`, `` `code` `` and links. That subset, and only it, is read here; the
figures are embedded (base64 PNG), so the page is one file that opens anywhere, Snakemake's
HTML report included.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import jinja2

from numasweep.core.io import atomic_write_text

TEMPLATES = Path(__file__).resolve().parents[2] / "report"

INLINE = (
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])"), r"<em>\1</em>"),
    (re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)"), r'<a href="\2">\1</a>'),
)
IMAGE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)$")
HEADING = re.compile(r"^(#{1,6}) (.*)$")


def inline(text: str) -> str:
    """One line of Markdown text as HTML: escaped, code spans kept as they are written."""
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
            continue
        part = html.escape(part, quote=False)
        for pattern, repl in INLINE:
            part = pattern.sub(repl, part)
        out.append(part)
    return "".join(out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table(lines: list[str]) -> str:
    head, align, *rows = lines
    sides = ["right" if a.endswith(":") and not a.startswith(":") else "left" for a in _cells(align)]

    def row(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f'<{tag} style="text-align:{sides[i] if i < len(sides) else "left"}">'
                                f"{inline(c)}</{tag}>" for i, c in enumerate(cells)) + "</tr>"

    body = "\n".join(row(_cells(r), "td") for r in rows)
    return f"<table>\n<thead>{row(_cells(head), 'th')}</thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def image(alt: str, src: str, base: Path) -> str:
    """A figure embedded as a data URI where the file is there, else linked as written."""
    path = base / src
    if path.suffix.lower() == ".png" and path.is_file():
        src = "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img src="{html.escape(src)}" alt="{html.escape(alt)}"></figure>'


def blocks(lines: list[str], base: Path) -> list[str]:
    """The block structure of the report's Markdown, in order."""
    out: list[str] = []
    para: list[str] = []
    i = 0

    def flush() -> None:
        if para:
            out.append(f"<p>{inline(' '.join(para))}</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```")), len(lines))
            out.append("<pre><code>" + html.escape("\n".join(lines[i + 1:end])) + "</code></pre>")
            i = end + 1
            continue
        if not stripped:
            flush()
        elif HEADING.match(stripped):
            flush()
            level, text = HEADING.match(stripped).groups()
            out.append(f"<h{len(level)}>{inline(text)}</h{len(level)}>")
        elif stripped.startswith("|") and i + 1 < len(lines) and set(lines[i + 1].strip()) <= set("|:- "):
            flush()
            end = i
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            out.append(table([ln for ln in lines[i:end]]))
            i = end
            continue
        elif IMAGE.match(stripped):
            flush()
            out.append(image(IMAGE.match(stripped)["alt"], IMAGE.match(stripped)["src"], base))
        elif stripped.startswith("> ") or stripped == ">":
            flush()
            end = i
            while end < len(lines) and lines[end].strip().startswith(">"):
                end += 1
            quoted = [ln.strip()[1:].removeprefix(" ") for ln in lines[i:end]]
            out.append("<blockquote>" + "\n".join(blocks(quoted, base)) + "</blockquote>")
            i = end
            continue
        elif stripped.startswith("- "):
            flush()
            items: list[str] = []
            while i < len(lines) and (lines[i].strip().startswith("- ") or
                                      (items and lines[i].startswith("  ") and lines[i].strip())):
                if lines[i].strip().startswith("- "):
                    items.append(lines[i].strip()[2:])
                else:
                    items[-1] += " " + lines[i].strip()
                i += 1
            out.append("<ul>" + "".join(f"<li>{inline(item)}</li>" for item in items) + "</ul>")
            continue
        else:
            para.append(stripped)
        i += 1
    flush()
    return out


def to_html(markdown: str, base: Path) -> tuple[str, str]:
    """(title, body HTML) of the report's Markdown; `base` is the folder its image paths start from."""
    lines = markdown.splitlines()
    title = next((HEADING.match(ln.strip()).group(2) for ln in lines if HEADING.match(ln.strip())), "Report")
    return title, "\n".join(blocks(lines, base))


def write(markdown_path: str | Path, html_path: str | Path) -> Path:
    """The HTML page of a Markdown report written by `report.render`, next to it or where asked."""
    markdown_path, html_path = Path(markdown_path), Path(html_path)
    title, body = to_html(markdown_path.read_text(), markdown_path.parent)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=False,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    page = env.get_template("experimentation.html.j2").render(title=html.escape(title), body=body)
    atomic_write_text(html_path, page)
    return html_path
