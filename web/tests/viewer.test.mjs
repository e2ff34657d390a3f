// Browser tests: the real `tcpscope` binary serving the project's recorded traces, driven in
// Debian's chromium through playwright-core. Screenshots go to web/test-results/.
//
// TCPSCOPE_BIN: the binary (default ../target/release/tcpscope); CHROMIUM: the browser
// (default /usr/bin/chromium).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.TCPSCOPE_BIN ?? path.join(root, "target/release/tcpscope");
const out = path.join(root, "web/test-results");
mkdirSync(out, { recursive: true });
const data = (f) => path.join(root, "tests/data", f);
const TRACES = [data("loss-snd.pcap"), data("zerowin-snd.pcap")];

let server, url, browser;

/** Starts `tcpscope view` and resolves with the URL it prints. */
function startViewer(args) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ["view", "--no-open", ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let buf = "";
    p.stdout.on("data", (d) => {
      buf += d;
      const m = buf.match(/http:\/\/\S+/);
      if (m) resolve([p, m[0]]);
    });
    p.on("exit", (code) => reject(new Error(`tcpscope view exited ${code}`)));
  });
}

/** A page that fails the test on any console error or uncaught exception. */
async function page() {
  const ctx = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
  const pg = await ctx.newPage();
  pg.errors = [];
  pg.on("console", (m) => m.type() === "error" && pg.errors.push(m.text()));
  pg.on("pageerror", (e) => pg.errors.push(String(e)));
  return pg;
}

const fetches = (pg) => pg.evaluate(() => window.tcpscopePerf.fetches.length);
async function afterFetch(pg, n) {
  await pg.waitForFunction((n) => window.tcpscopePerf.fetches.length > n, n);
  await nextFrame(pg);
}
/** Resolves after the page's pending animation frame (the one that draws new data) has run. */
const nextFrame = (pg) => pg.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
const depth = async (pg) => Number((await pg.textContent("#where")).match(/zoom depth (\d+)/)[1]);
/** The zoom depth once the frame that shows it is drawn (the status line is written per frame). */
async function expectDepth(pg, n) {
  await pg.waitForFunction((n) => document.querySelector("#where")?.textContent?.endsWith(`zoom depth ${n}`), n, { timeout: 5000 }).catch(() => {});
  assert.equal(await depth(pg), n);
}
const hash = async (pg) => new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1));

before(async () => {
  assert.ok(existsSync(bin), `${bin} missing: build it first (make build)`);
  [server, url] = await startViewer(TRACES);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox", "--headless=new"] });
});

after(async () => {
  await browser?.close();
  server?.kill();
});

test("connection list, time-sequence plot, zoom, hover, history, compare", async () => {
  // Oracle for the list: the command-line listing of the same traces.
  const listed = JSON.parse(execFileSync(bin, ["conns", "--json", ...TRACES])).connections;
  const screened = JSON.parse(execFileSync(bin, ["screen", "--json", "--all", ...TRACES])).connections;
  const pg = await page();
  await pg.goto(url);
  await pg.waitForSelector("#conns tbody tr");
  // Boring connections hidden; the rest ranked as `screen` ranks them, with its verdicts.
  const shown = screened.filter((c) => !c.boring);
  assert.equal(await pg.locator("#conns tbody tr").count(), shown.length);
  const ids = await pg.locator("#conns tbody tr").evaluateAll((rows) => rows.map((r) => Number(r.dataset.id)));
  assert.deepEqual(ids, shown.map((c) => c.id));
  assert.equal(await pg.textContent(`#conns tbody tr[data-id="${shown[0].id}"] td:last-child`), shown[0].verdict);
  await pg.check("#show-boring");
  assert.equal(await pg.locator("#conns tbody tr").count(), listed.length);

  // Sorting by retransmissions, worst first: the loss trace's connection comes first.
  await pg.selectOption("#sort", "a2b.rexmit_packets");
  assert.equal(await pg.textContent("#sort-dir"), "▼");
  const worst = [...listed].sort((a, b) => b.a2b.rexmit_packets - a.a2b.rexmit_packets)[0];
  assert.equal(await pg.getAttribute("#conns tbody tr:first-child", "data-id"), String(worst.id));
  // The filter box.
  await pg.fill("#filter", "no such host");
  assert.equal(await pg.locator("#conns tbody tr").count(), 0);
  await pg.fill("#filter", "");

  let n = await fetches(pg);
  await pg.click(`#conns tbody tr[data-id="${worst.id}"]`);
  await afterFetch(pg, n);
  assert.equal((await hash(pg)).get("c"), String(worst.id));
  const legend = await pg.textContent(".plot .legend");
  assert.match(legend, /retransmission \(R\)/, "the loss trace's plot shows retransmissions");
  await pg.screenshot({ path: path.join(out, "1-selected.png") });

  // Hover a retransmission: its packet-listing row, as `tcpscope` has it, and its event.
  const rx = await pg.evaluate(() => window.tcpscopeMarkAt("seg rexmit"));
  assert.ok(rx, "a retransmission is drawn");
  await pg.mouse.move(rx[0], rx[1]);
  await pg.waitForSelector("#tip table.pkt");
  const tip = await pg.textContent("#tip");
  const cells = await pg.locator("#tip table.pkt tr:nth-child(2) td").allTextContents();
  assert.equal(cells[0], String(rx[2]), "the row is the hovered frame's");
  assert.equal(cells[2], "a2b");
  assert.match(tip, /retransmission seq \d+, \d+ bytes/);
  await pg.screenshot({ path: path.join(out, "2-hover.png") });

  // Rectangle zoom around the first retransmission.
  const box = await pg.locator(".plot .overlay").boundingBox();
  n = await fetches(pg);
  await pg.mouse.move(rx[0] - 40, rx[1] - 40);
  await pg.mouse.down();
  await pg.mouse.move(rx[0] + 40, rx[1] + 40, { steps: 4 });
  await pg.mouse.up();
  await afterFetch(pg, n);
  await expectDepth(pg, 1);
  const [t0, t1] = (await hash(pg)).get("t").split(",").map(Number);
  assert.ok(t1 - t0 < worst.duration_s / 5, `zoomed to ${t0}..${t1}`);
  await pg.screenshot({ path: path.join(out, "3-zoomed.png") });

  // The zoomed view reloads from its URL.
  const zoomedUrl = pg.url();
  const pg2 = await page();
  n = 0;
  await pg2.goto(zoomedUrl);
  await afterFetch(pg2, 0);
  assert.equal((await hash(pg2)).get("t"), `${t0},${t1}`);
  await pg2.close();

  // Wheel zoom in, then back out twice through the history (right click, Backspace).
  n = await fetches(pg);
  await pg.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await pg.mouse.wheel(0, -200);
  await afterFetch(pg, n);
  await expectDepth(pg, 2);
  await pg.mouse.click(box.x + box.width / 2, box.y + box.height / 2, { button: "right" });
  await expectDepth(pg, 1);
  await pg.keyboard.press("Backspace");
  await expectDepth(pg, 0);
  assert.equal((await hash(pg)).get("t"), null, "back at the whole connection");

  // An event in the side list jumps the view to it.
  n = await fetches(pg);
  await pg.click("#events li >> text=retransmission");
  await afterFetch(pg, n);
  assert.ok((await hash(pg)).get("t"), "the event's time window is in the URL");

  // Direction b→a, then two connections on one scale.
  await pg.click("#dir-b2a");
  assert.equal((await hash(pg)).get("d"), "b2a");
  await pg.click("#dir-a2b");
  const other = listed.find((c) => c.id !== worst.id);
  n = await fetches(pg);
  await pg.click(`#conns tbody tr[data-id="${other.id}"]`, { modifiers: ["Control"] });
  await pg.waitForFunction(() => document.querySelectorAll(".plot").length === 2);
  await pg.waitForFunction((n) => window.tcpscopePerf.fetches.length >= n + 2, n);
  await nextFrame(pg);
  assert.equal((await hash(pg)).get("c"), `${worst.id},${other.id}`);
  await pg.screenshot({ path: path.join(out, "4-compare.png") });

  const frames = await pg.evaluate(() => window.tcpscopePerf.frames);
  assert.ok(frames.length > 3);
  assert.deepEqual(pg.errors, [], "no console errors");
});

test("the server answers only its routes", async () => {
  for (const p of ["../../etc/passwd", "api/../../../etc/passwd", "tests/data/loss-snd.pcap", "api/file?path=/etc/passwd"]) {
    const r = await fetch(url + p);
    assert.equal(r.status, 404, p);
  }
});

test("report: one file that works offline", async () => {
  const file = path.join(out, "report.html");
  execFileSync(bin, ["report", ...TRACES, "-o", file]);
  const pg = await page();
  const outside = [];
  await pg.route("**/*", (r) => (r.request().url().startsWith("file:") ? r.continue() : (outside.push(r.request().url()), r.abort())));
  await pg.goto("file://" + file);
  await pg.waitForFunction(() => window.tcpscopePerf.fetches.length > 0);
  await nextFrame(pg);
  assert.match(await pg.textContent(".plot .legend"), /data segment/);
  // Zooming works on the inline data.
  const box = await pg.locator(".plot .overlay").boundingBox();
  await pg.mouse.move(box.x + 200, box.y + 100);
  await pg.mouse.down();
  await pg.mouse.move(box.x + 400, box.y + 300, { steps: 4 });
  await pg.mouse.up();
  await expectDepth(pg, 1);
  await pg.waitForTimeout(100);
  await pg.screenshot({ path: path.join(out, "5-report.png") });
  assert.deepEqual(outside, [], "the report loads nothing from outside");
  assert.deepEqual(pg.errors, []);
});
