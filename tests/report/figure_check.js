// Appended to a copy of Snakemake's HTML report: shows every result the way a click on it does
// (the report's own view manager calls app.setView with content "img"), waits for the <img> the
// report renders, and records whether the browser decoded it. The outcome goes into
// a pre element (id figure-check) that `chromium --dump-dom` prints.
window.addEventListener("load", async () => {
    const out = document.createElement("pre");
    out.id = "figure-check";
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const checks = [];
    try {
        // React mounts the app after load; `app` is its global handle once mounted.
        for (let i = 0; i < 200 && typeof app === "undefined"; i++) {
            await sleep(20);
        }
        for (const [category, subcategories] of Object.entries(categories)) {
            for (const [subcategory, paths] of Object.entries(subcategories)) {
                // Through the top menu first, as a reader would, so the navbar remounts.
                app.setView({ navbarMode: "menu" });
                await sleep(50);
                app.setView({ navbarMode: "subcategory", category: category, subcategory: subcategory });
                await sleep(50);
                const listed = document.body.innerText;
                for (const path of paths) {
                    const entry = results[path];
                    if (!String(entry.mime_type).startsWith("image/")) {
                        continue; // the report's own page (text/html): checked on its own
                    }
                    app.setView({ content: "img", contentPath: entry.data_uri, resultPath: path });
                    let img = null;
                    for (let i = 0; i < 100 && !img; i++) {
                        await sleep(20);
                        img = [...document.querySelectorAll("#app img")].find((el) => el.getAttribute("src") === entry.data_uri) || null;
                    }
                    if (img && !img.complete) {
                        await new Promise((resolve) => { img.onload = resolve; img.onerror = resolve; });
                    }
                    checks.push({
                        path: path,
                        category: category,
                        // With labels the navbar lists a table of label values, not file names.
                        listed: Object.values(entry.labels || { name: entry.name }).every((v) => listed.includes(String(v))),
                        found: img !== null,
                        width: img ? img.naturalWidth : 0,
                        height: img ? img.naturalHeight : 0,
                    });
                }
            }
        }
        out.textContent = JSON.stringify({ checks: checks });
    } catch (err) {
        out.textContent = JSON.stringify({ error: String(err), checks: checks });
    }
    document.body.appendChild(out);
});
