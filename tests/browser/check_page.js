// Opens an HTML page in Debian's chromium through playwright-core and prints what the browser test checks, as JSON:
// usage: node check_page.js PAGE.html SCREENSHOT.png [TABLE_SELECTOR COLUMN_NAME]
// (the images' decoded widths and pixel variances, console and page errors, every request that is neither data:
// nor file:, the headline cells, and the column read after one and two clicks on its header).
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const CHROMIUM = process.env.MFSCORE_CHROMIUM || "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

async function main() {
  const [page_file, screenshot, table, column] = process.argv.slice(2);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "mfscore-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1280, height: 900 },
  });
  const found = { console_errors: [], page_errors: [], requests: [] };
  try {
    const page = context.pages()[0] || await context.newPage();
    page.on("console", (m) => { if (m.type() === "error") found.console_errors.push(m.text()); });
    page.on("pageerror", (e) => found.page_errors.push(String(e)));
    page.on("request", (r) => {
      const url = r.url();
      if (!url.startsWith("data:") && !url.startsWith("file:")) found.requests.push(url);
    });
    await page.goto("file://" + path.resolve(page_file), { waitUntil: "load" });
    await page.screenshot({ path: screenshot, fullPage: false });
    found.images = await page.evaluate(async () => {
      const out = [];
      for (const img of Array.from(document.images)) {
        await img.decode().catch(() => {});
        const canvas = document.createElement("canvas");
        canvas.width = img.naturalWidth || 1; canvas.height = img.naturalHeight || 1;
        const g = canvas.getContext("2d");
        g.drawImage(img, 0, 0);
        const px = g.getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0, sum = 0, squares = 0;
        for (let i = 0; i < px.length; i += 4) {
          const v = (px[i] + px[i + 1] + px[i + 2]) / 3; n++; sum += v; squares += v * v;
        }
        out.push({ alt: img.alt, width: img.naturalWidth, variance: squares / n - (sum / n) ** 2 });
      }
      return out;
    });
    found.headline = await page.$$eval("[data-table=headline] td[data-metric]", (cells) => cells.map((c) => ({
      metric: c.dataset.metric, query: c.dataset.query, value: c.dataset.value, text: c.textContent })));
    found.leaderboard = await page.$$eval("[data-table=leaderboard] tbody tr",
      (rows) => rows.map((r) => Array.from(r.cells, (c) => c.textContent)));
    if (table) {
      const header = page.locator(`${table} thead th`, { hasText: column }).first();
      const read = () => page.$$eval(`${table} thead th`, (ths, name) => {
        const i = ths.findIndex((th) => th.textContent === name);
        return Array.from(ths[i].closest("table").tBodies[0].rows, (r) => r.cells[i].textContent.trim());
      }, column);
      found.column_before = await read();
      await header.click();
      found.column_ascending = await read();
      await header.click();
      found.column_descending = await read();
    }
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(found));
}

main().catch((error) => { console.error(String(error && error.stack || error)); process.exit(1); });
