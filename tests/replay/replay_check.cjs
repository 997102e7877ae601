// The replay test's browser side (tests/archive/replay_test.cc): opens each
// archived URL in ReplayWeb.page (its prebuilt ui.js and sw.js, served from
// BASE with the crawl's WACZ) in Debian's Chromium, headless, through
// puppeteer-core, and prints one JSON line per URL with what a reader sees:
// the title, the h1, the page's version (the testsite's p.version), the
// stylesheets and two styles they set, each image (loaded or broken), and
// every replayed request answered 404 or worse.
// Usage: NODE_PATH=$(npm root -g) node replay_check.cjs BASE [TS@]URL...
// (TS: a capture's 14-digit timestamp; without it, the latest capture.)
// Exit 1 (with a line "replay check: ...") if a page never shows.
'use strict';
const puppeteer = require('puppeteer-core');

async function Check(browser, base, arg) {
  const at = arg.indexOf('@');
  const ts = at > 0 ? arg.slice(0, at) : '';
  const url = at > 0 ? arg.slice(at + 1) : arg;
  const page = await browser.newPage();
  const missing = [];
  page.on('response', (r) => {
    if (r.status() >= 400 && r.url().includes('_/http')) missing.push(`${r.status()} ${r.url()}`);
  });
  const when = ts ? `&ts=${ts}` : '';
  await page.goto(`${base}/index.html?url=${encodeURIComponent(url)}${when}`, {waitUntil: 'load'});
  // The replay frame appears once the service worker runs and has loaded
  // the WACZ. Under a loaded CI machine (ASan tests beside it) the first
  // page once never got one in 60 s, its replay/ frame showing nothing: the
  // viewer is loaded again then, up to 3 times 20 s, as a reader would.
  let frame = null;
  for (let i = 0; i < 600 && !frame; ++i) {
    frame = page.frames().find((f) => f.url().includes(ts + 'mp_/' + url));
    if (!frame && i % 200 === 199) await page.reload({waitUntil: 'load'});
    if (!frame) await new Promise((r) => setTimeout(r, 100));
  }
  if (!frame) throw new Error(`${url}: no replay frame; frames: ${page.frames().map((f) => f.url())}`);
  await frame.waitForSelector('h1', {timeout: 60000});
  await frame.waitForFunction(
      () => document.readyState === 'complete' && [...document.images].every((i) => i.complete),
      {timeout: 60000});
  const seen = await frame.evaluate(() => ({
    title: document.title,
    h1: document.querySelector('h1')?.textContent,
    version: document.querySelector('p.version')?.textContent || '',
    sheets: [...document.styleSheets].map((s) => s.href).filter((h) => h),
    body_background: getComputedStyle(document.body).backgroundImage,
    h1_background: getComputedStyle(document.querySelector('h1')).backgroundImage,
    images: [...document.images].map((i) => ({src: i.currentSrc, ok: i.naturalWidth > 0})),
  }));
  await page.close();
  return {url, ts, ...seen, missing};
}

(async () => {
  const [base, ...urls] = process.argv.slice(2);
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/lib/chromium/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  let code = 0;
  try {
    for (const url of urls) console.log(JSON.stringify(await Check(browser, base, url)));
  } catch (e) {
    console.log('replay check: ' + e.message);
    code = 1;
  }
  await browser.close();
  process.exit(code);
})();
