// Appended to a report page by tests/report/test_html_layout.py: how Chromium laid out its
// tables and code blocks, as JSON in the text of a new element with the id layout-check.
//
// A number in a table cell (a run of digits with its decimal point and thousands commas) must
// lie on one line and within its cell's rendered width; a word of a header likewise (headers
// break at spaces only); no cell's content may be wider than the cell; a table wider than the
// text column scrolls in its own box (its box ends within the body); a code block shows all of
// each line (it wraps), none cut at its right edge.
window.addEventListener("load", () => {
    const out = document.createElement("pre");
    out.id = "layout-check";
    const problems = [];
    let numbers = 0, words = 0, cells = 0, scrolling = 0;
    const where = (cell) => {
        const table = cell.closest("table");
        const index = [...document.querySelectorAll("table")].indexOf(table);
        return `table ${index}, row ${cell.parentElement.rowIndex}, column ${cell.cellIndex}`;
    };
    // the line boxes a piece of text takes, and its width
    const laid = (node, start, end) => {
        const range = document.createRange();
        range.setStart(node, start);
        range.setEnd(node, end);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0);
        return { lines: new Set(rects.map((r) => Math.round(r.top))).size, box: range.getBoundingClientRect() };
    };
    const tokens = (cell, pattern, kind) => {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        const inner = cell.getBoundingClientRect();
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const m of node.data.matchAll(pattern)) {
                const { lines, box } = laid(node, m.index, m.index + m[0].length);
                if (kind === "number") numbers += 1; else words += 1;
                if (lines > 1) {
                    problems.push(`${where(cell)}: the ${kind} '${m[0]}' is broken over ${lines} lines`);
                } else if (box.left < inner.left - 0.5 || box.right > inner.right + 0.5) {
                    problems.push(`${where(cell)}: the ${kind} '${m[0]}' (${box.width.toFixed(1)} px) ` +
                                  `sticks out of its cell (${inner.width.toFixed(1)} px)`);
                }
            }
        }
    };
    const body = document.body.getBoundingClientRect();
    for (const table of document.querySelectorAll("table")) {
        const box = table.getBoundingClientRect();
        if (box.right > body.right + 0.5) {
            problems.push(`table ${[...document.querySelectorAll("table")].indexOf(table)}: ends ` +
                          `${(box.right - body.right).toFixed(0)} px right of the page's body`);
        }
        if (table.scrollWidth > table.clientWidth + 1) {
            scrolling += 1;
            if (getComputedStyle(table).overflowX !== "auto" && getComputedStyle(table).overflowX !== "scroll") {
                problems.push(`table ${[...document.querySelectorAll("table")].indexOf(table)}: wider than its ` +
                              "box and not scrollable");
            }
        }
    }
    for (const cell of document.querySelectorAll("td, th")) {
        cells += 1;
        tokens(cell, /\d[\d,]*(?:\.\d+)?/g, "number");
        if (cell.tagName === "TH") tokens(cell, /\S+/g, "word");
        if (cell.scrollWidth > cell.clientWidth + 1) {
            problems.push(`${where(cell)}: its content (${cell.scrollWidth} px) is wider than the cell ` +
                          `(${cell.clientWidth} px)`);
        }
    }
    const code = [...document.querySelectorAll("pre")];
    for (const [i, pre] of code.entries()) {
        if (pre.scrollWidth > pre.clientWidth + 1) {
            problems.push(`code block ${i}: ${pre.scrollWidth - pre.clientWidth} px of its lines are cut at the right`);
        }
    }
    out.textContent = JSON.stringify({
        tables: document.querySelectorAll("table").length, scrolling, cells, numbers, words,
        code_blocks: code.length, problems,
    });
    document.body.appendChild(out);
});
