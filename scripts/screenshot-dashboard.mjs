// Saves a screenshot of a running dashboard once its first view is drawn (the page fetches its
// data after it loads, so a plain `chromium --headless --screenshot` catches only "Loading…"):
//   node scripts/screenshot-dashboard.mjs [URL (default http://127.0.0.1:7420/)] [OUT (default docs/dashboard.png)]
// Headless Debian Chromium (/usr/bin/chromium, or $CHROMIUM) driven by playwright-core (a devDependency).
import { chromium } from 'playwright-core';

const url = process.argv[2] ?? 'http://127.0.0.1:7420/';
const out = process.argv[3] ?? 'docs/dashboard.png';
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.goto(url);
  // Drawn: the totals, the pools, the block map and the nodes table have their data.
  for (const sel of ['[data-stat="allocated"][data-value]', '#block-map .cell', '[data-stat="issues"][data-value]'])
    await page.waitForSelector(sel, { timeout: 30_000 });
  await page.screenshot({ path: out, fullPage: true });
  process.stdout.write(`saved ${out}\n`);
} finally {
  await browser.close();
}
