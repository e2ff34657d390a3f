// Browser tests: the real `tcpscope` binary serving the project's recorded traces, driven in
// Debian's chromium through playwright-core. Screenshots go to web/test-results/.
//
// TCPSCOPE_BIN: the binary (default ../target/release/tcpscope); CHROMIUM: the browser
// (default /usr/bin/chromium).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, existsSync, readdirSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { chromium } from "playwright-core";
import { inkAt, newPage, startViewer } from "./util.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.TCPSCOPE_BIN ?? path.join(root, "target/release/tcpscope");
const out = path.join(root, "web/test-results");
mkdirSync(out, { recursive: true });
const data = (f) => path.join(root, "tests/data", f);
const TRACES = [data("loss-snd.pcap"), data("zerowin-snd.pcap")];

let server, url, browser;

const page = () => newPage(browser);

const fetches = (pg) => pg.evaluate(() => window.tcpscopePerf.fetches.length);
async function afterFetch(pg, n) {
  await pg.waitForFunction((n) => window.tcpscopePerf.fetches.length > n, n);
  await nextFrame(pg);
}
/** Once the connection list has every row it asked the server for, drawn. */
async function listSettled(pg) {
  await pg.waitForFunction(() => document.getElementById("list").ariaBusy !== "true");
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
// The plot's margins (web/src/draw.ts).
const TOP = 10, BOTTOM = 34;

/** Both plots drawn over the same time range and the same sequence span per pixel. */
async function expectOneScale(pg, when) {
  const fr = await pg.evaluate(() => window.tcpscopeFrames());
  assert.equal(fr.length, 2, when);
  const [a, b] = fr;
  assert.ok(a && b, `${when}: both plots drawn`);
  assert.equal(a.x0, b.x0, `${when}: same time range`);
  assert.equal(a.x1, b.x1, `${when}: same time range`);
  assert.equal(a.w, b.w, `${when}: same width`);
  const perPx = (f) => (f.y1 - f.y0) / (f.h - TOP - BOTTOM);
  assert.ok(Math.abs(perPx(a) - perPx(b)) <= 1e-9 * perPx(a), `${when}: bytes per pixel ${perPx(a)} vs ${perPx(b)}`);
  return fr;
}

before(async () => {
  assert.ok(existsSync(bin), `${bin} missing: build it first (make build)`);
  [server, url] = await startViewer(bin, TRACES);
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
  await pg.waitForSelector("#conns tbody tr[data-id]");
  // Boring connections hidden; the rest ranked as `screen` ranks them, with its verdicts.
  const shown = screened.filter((c) => !c.boring);
  assert.equal(await pg.locator("#conns tbody tr[data-id]").count(), shown.length);
  const ids = await pg.locator("#conns tbody tr[data-id]").evaluateAll((rows) => rows.map((r) => Number(r.dataset.id)));
  assert.deepEqual(ids, shown.map((c) => c.id));
  assert.equal(await pg.textContent(`#conns tbody tr[data-id="${shown[0].id}"] td:last-child`), shown[0].verdict);
  await pg.check("#show-boring");
  await listSettled(pg);
  assert.equal(await pg.locator("#conns tbody tr[data-id]").count(), listed.length);

  // Sorting by retransmissions, worst first: the loss trace's connection comes first.
  await pg.selectOption("#sort", "a2b.rexmit_packets");
  await listSettled(pg);
  assert.equal(await pg.textContent("#sort-dir"), "▼");
  const worst = [...listed].sort((a, b) => b.a2b.rexmit_packets - a.a2b.rexmit_packets)[0];
  assert.equal(await pg.getAttribute("#conns tbody tr[data-id] >> nth=0", "data-id"), String(worst.id));
  // The filter box.
  await pg.fill("#filter", "no such host");
  await listSettled(pg);
  assert.equal(await pg.locator("#conns tbody tr[data-id]").count(), 0);
  await pg.fill("#filter", "");
  await listSettled(pg);

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
  // The data is drawn by the worker, where the page hit-tests it, on white.
  assert.equal(await pg.evaluate(() => window.tcpscopeDrawnBy()), "worker");
  const ink = await inkAt(pg, rx[0], rx[1]);
  assert.ok(ink.inked > 0 && ink.cornerWhite, `the retransmission is drawn where hovered: ${JSON.stringify(ink)}`);
  await pg.screenshot({ path: path.join(out, "2-hover.png") });

  // The page reads the packed answer (fmt=bin) into the marks the JSON answer has, for views
  // zoomed out (aggregates), in, and to a sequence range.
  for (const v of [{ w: 300 }, { w: 1000 }, { t0: 0.07, t1: 0.09, w: 800 }, { t0: 0.07, t1: 0.09, s0: 40000, s1: 60000, w: 600 }]) {
    const q = new URLSearchParams({ conn: worst.id, dir: "a2b", ...v });
    const want = await (await fetch(`${url}api/tsg?${q}`)).json();
    const got = await pg.evaluate(([id, v]) => window.tcpscopeMarksOf(id, "a2b", v), [worst.id, v]);
    assert.equal(got.marks.length, want.marks.length, JSON.stringify(v));
    assert.deepEqual(got.x, want.x);
    assert.deepEqual(got.y, want.y);
    got.marks.forEach((m, i) => {
      const w = want.marks[i];
      assert.deepEqual([m.c, m.f, m.n, m.p.length], [w.c, w.f, w.n, w.p.length], `mark ${i}`);
      m.p.forEach((p, k) => {
        const wp = w.p[k];
        assert.equal(p.length, wp.length, `mark ${i} prim ${k}`);
        p.forEach((x, j) => {
          if (typeof x === "number") {
            const origin = j % 2 === 0 ? want.x[0] : want.y[0];
            assert.ok(Math.abs(x - wp[j]) <= 1.2e-7 * Math.abs(wp[j] - origin) + 1e-9, `mark ${i} prim ${k}[${j}]: ${x} vs ${wp[j]}`);
          } else assert.equal(x, wp[j]);
        });
      });
    });
  }

  // The list is wide enough for its columns by default, and the splitter widens it.
  const [sw, cw] = await pg.evaluate(() => { const l = document.getElementById("list"); return [l.scrollWidth, l.clientWidth]; });
  assert.ok(sw <= cw + 1, `every column of the list shows without scrolling (${sw} px in ${cw})`);
  const sideW = (await pg.locator("#side").boundingBox()).width;
  const split = await pg.locator("#split").boundingBox();
  await pg.mouse.move(split.x + 3, split.y + 200);
  await pg.mouse.down();
  await pg.mouse.move(split.x + 153, split.y + 200, { steps: 5 });
  await pg.mouse.up();
  assert.ok(Math.abs((await pg.locator("#side").boundingBox()).width - (sideW + 150)) < 2, "the splitter resized the list");
  await pg.dblclick("#split");
  assert.ok(Math.abs((await pg.locator("#side").boundingBox()).width - sideW) < 2, "double-click: default width");
  await nextFrame(pg);

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
  // Both plots' data in (each plot's title is written when its answers arrive).
  await pg.waitForFunction(() => [...document.querySelectorAll(".plot h2")].filter((h) => h.textContent).length === 2);
  await nextFrame(pg);
  assert.equal((await hash(pg)).get("c"), `${worst.id},${other.id}`);
  await pg.screenshot({ path: path.join(out, "4-compare.png") });
  await expectOneScale(pg, "whole connections");
  // A rectangle zoom in the second plot: both plots follow, still on one scale, and the second
  // shows the sequence range the rectangle covered on it.
  // Answers still on their way (a resize reloads after 150 ms) would move the plot under the
  // pointer: let them land.
  let settled = -1;
  while (settled !== (settled = await fetches(pg))) await pg.waitForTimeout(400);
  await nextFrame(pg);
  const f1 = (await pg.evaluate(() => window.tcpscopeFrames()))[1];
  const box2 = await pg.locator(".plot:nth-child(2) .overlay").boundingBox();
  // Whole pixels: the browser hands the page the pointer's position in whole pixels.
  // Around the second connection's data (the lowest 15% of the shared span: it sent 262 kB,
  // the first 1 MB).
  const [ya, yb] = [Math.round(box2.y + 300), Math.round(box2.y + 384)];
  const seqAt = (py) => f1.y0 + ((f1.h - BOTTOM - (py - box2.y)) / (f1.h - TOP - BOTTOM)) * (f1.y1 - f1.y0);
  n = await fetches(pg);
  await pg.mouse.move(Math.round(box2.x + 90), ya);
  await pg.mouse.down();
  await pg.mouse.move(Math.round(box2.x + 200), yb, { steps: 4 });
  await pg.mouse.up();
  await pg.waitForFunction((n) => window.tcpscopePerf.fetches.length >= n + 2, n);
  await nextFrame(pg);
  const [z0, z1] = await expectOneScale(pg, "after a zoom in the second plot");
  assert.ok(Math.abs(z1.y0 - seqAt(yb)) < 2 && Math.abs(z1.y1 - seqAt(ya)) < 2, `second plot shows ${z1.y0}..${z1.y1}, the rectangle ${seqAt(yb)}..${seqAt(ya)}`);
  assert.ok(z0.x1 - z0.x0 < f1.x1 - f1.x0, "zoomed in time");
  assert.ok(await pg.evaluate(() => window.tcpscopeMarkAt("seg", 1)), "the second plot shows its segments");
  await pg.screenshot({ path: path.join(out, "4b-compare-zoomed.png") });
  // The view, offsets included, comes back from the URL.
  const pg3 = await page();
  await pg3.goto(pg.url());
  await pg3.waitForFunction(() => window.tcpscopePerf.fetches.length >= 2);
  await nextFrame(pg3);
  const again = await pg3.evaluate(() => window.tcpscopeFrames());
  for (const k of ["x0", "x1", "y0", "y1"]) assert.ok(Math.abs(again[1][k] - z1[k]) < 1.5, `${k}: ${again[1][k]} vs ${z1[k]}`);
  assert.deepEqual(pg3.errors, []);
  await pg3.close();

  const frames = await pg.evaluate(() => window.tcpscopePerf.frames);
  assert.ok(frames.length > 3);
  assert.deepEqual(pg.errors, [], "no console errors");
});

test("compared plots are both drawn at their shared ranges, whichever answer comes first", async () => {
  const listed = JSON.parse(execFileSync(bin, ["conns", "--json", ...TRACES])).connections;
  const dur = (c) => c.last_time - c.first_time;
  const withData = listed.filter((c) => c.a2b.data_packets > 10).sort((a, b) => dur(a) - dur(b));
  const [short, long] = [withData[0], withData[withData.length - 1]];
  assert.ok(dur(long) > 2 * dur(short), `${dur(short)} s and ${dur(long)} s`);
  const pg = await page();
  // The longer connection's answers come last: the shorter one is drawn first over its own
  // time range, which the longer one's answer then widens.
  const longs = new RegExp(`/api/(tsg|panels)\\?(.*&)?conn=${long.id}(&|$)`);
  await pg.route(longs, async (r) => {
    await new Promise((ok) => setTimeout(ok, 700));
    await r.continue();
  });
  await pg.goto(`${url}#c=${short.id},${long.id}`);
  await pg.waitForFunction(() => [...document.querySelectorAll(".plot h2")].filter((h) => h.textContent).length === 2);
  let settled = -1;
  while (settled !== (settled = await fetches(pg))) await pg.waitForTimeout(1000);
  await nextFrame(pg);
  await nextFrame(pg);
  await expectOneScale(pg, "both answers in");
  // The titles' lines are kept for them before the answers: whole, and as tall in both plots.
  const titles = await pg.evaluate(() => [...document.querySelectorAll(".plot h2")].map((h) => [h.clientHeight, h.scrollHeight <= h.clientHeight && h.scrollWidth <= h.clientWidth]));
  assert.deepEqual(titles, [[32, true], [32, true]], "both titles shown whole on two lines");
  // Every data layer shown as drawn (no transform): drawn at the shared ranges, not squeezed.
  const transforms = await pg.evaluate(() =>
    [...document.querySelectorAll(".plot .clip")].map((b) => [...b.querySelectorAll("canvas.data")].find((c) => c.style.visibility !== "hidden")?.style.transform),
  );
  assert.equal(transforms.length, 8, "two plots, four layers each");
  assert.ok(transforms.every((t) => t === "none" || t === ""), JSON.stringify(transforms));
  await pg.screenshot({ path: path.join(out, "4c-compare-widened.png") });
  assert.deepEqual(pg.errors, []);
  await pg.context().close();
});

test("the event list builds only the rows in sight, and they jump, hover and scroll as before", async () => {
  const listed = JSON.parse(execFileSync(bin, ["conns", "--json", ...TRACES])).connections;
  const worst = [...listed].sort((a, b) => b.a2b.rexmit_packets - a.a2b.rexmit_packets)[0];
  const want = (await (await fetch(`${url}api/events?conn=${worst.id}`)).json()).events;
  const text = (e) => `${e.t.toFixed(6)} ${e.dir} ${e.kind} ${e.text}`;
  // A short window: the list has room for a few rows of the connection's events.
  const ctx = await browser.newContext({ viewport: { width: 1500, height: 560 } });
  const pg = await ctx.newPage();
  const errors = [];
  pg.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  pg.on("pageerror", (e) => errors.push(String(e)));
  await pg.goto(`${url}#c=${worst.id}`);
  await pg.waitForFunction((n) => document.querySelector("#ev-count")?.textContent === `(${n})`, want.length);
  await nextFrame(pg);
  const rows = () => pg.locator("#events li:not(.spacer)").allTextContents();
  let got = await rows();
  assert.ok(want.length > 20 && got.length < want.length, `${got.length} of ${want.length} events built`);
  assert.deepEqual(got, want.slice(0, got.length).map(text), "the first rows, in order");
  // Scrolled to the end: the last events are built, in order, where they scrolled to.
  const last = want.length - 1;
  await pg.evaluate(() => { const l = document.getElementById("events"); l.scrollTop = l.scrollHeight; });
  await nextFrame(pg);
  got = await rows();
  assert.equal(got.at(-1), text(want[last]), "the last event is built");
  assert.deepEqual(got, want.slice(want.length - got.length).map(text));
  const row = pg.locator("#events li:not(.spacer)").last();
  const [lb, rb] = [await pg.locator("#events").boundingBox(), await row.boundingBox()];
  assert.ok(rb.y >= lb.y && rb.y + rb.height <= lb.y + lb.height + 1, "the last row shows at the list's bottom");
  // Hover highlights the row under the pointer across the list; a click jumps the view there.
  await row.hover();
  assert.equal(await row.evaluate((e) => getComputedStyle(e).backgroundColor), "rgb(238, 244, 255)");
  assert.ok(rb.width >= lb.width - 20, "the row spans the list");
  const n = await fetches(pg);
  await row.click();
  await afterFetch(pg, n);
  const [t0, t1] = new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1)).get("t").split(",").map(Number);
  assert.ok(t0 < want[last].t && want[last].t < t1, `the view ${t0}..${t1} is around the event at ${want[last].t}`);
  await pg.screenshot({ path: path.join(out, "5-events-scrolled.png") });
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("the connection list builds only the rows in sight; sort, filter and select work on all", async () => {
  // Every recorded trace, three times over: more connections than a short window shows.
  const all = readdirSync(path.join(root, "tests/data")).filter((f) => f.endsWith(".pcap")).map(data);
  const files = [...all, ...all, ...all];
  const listed = JSON.parse(execFileSync(bin, ["conns", "--json", ...files])).connections;
  const [srv, u] = await startViewer(bin, files);
  try {
    const ctx = await browser.newContext({ viewport: { width: 1500, height: 480 } });
    const pg = await ctx.newPage();
    const errors = [];
    pg.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    pg.on("pageerror", (e) => errors.push(String(e)));
    await pg.goto(`${u}#boring=1&sort=id&desc=0`);
    await pg.waitForSelector("#conns tbody tr[data-id]");
    await nextFrame(pg);
    await listSettled(pg);
    const ids = () => pg.locator("#conns tbody tr[data-id]").evaluateAll((rows) => rows.map((r) => Number(r.dataset.id)));
    const byId = listed.map((c) => c.id).sort((a, b) => a - b);
    let got = await ids();
    assert.equal(await pg.textContent("#count"), `${listed.length} of ${listed.length}`);
    assert.ok(listed.length > 30 && got.length < listed.length, `${got.length} of ${listed.length} rows built`);
    assert.deepEqual(got, byId.slice(0, got.length), "the first rows, by id");
    // Scrolled to the end: the last rows, where they scrolled to, under the header.
    await pg.evaluate(() => { const l = document.getElementById("list"); l.scrollTop = l.scrollHeight; });
    await nextFrame(pg);
    await listSettled(pg);
    got = await ids();
    assert.deepEqual(got, byId.slice(byId.length - got.length), "the last rows, by id");
    const lastRow = pg.locator(`#conns tbody tr[data-id="${byId.at(-1)}"]`);
    const [lb, rb] = [await pg.locator("#list").boundingBox(), await lastRow.boundingBox()];
    assert.ok(rb.y + rb.height <= lb.y + lb.height + 1 && rb.y > lb.y + 20, "the last row shows at the list's bottom");
    await pg.screenshot({ path: path.join(out, "6-conns-scrolled.png") });
    // Sorting (descending ids) and filtering act on every connection, not the rows built.
    await pg.click('#conns th[data-key="id"]');
    await pg.evaluate(() => { document.getElementById("list").scrollTop = 0; });
    await nextFrame(pg);
    await listSettled(pg);
    got = await ids();
    assert.deepEqual(got, [...byId].reverse().slice(0, got.length), "descending");
    await pg.fill("#filter", "zerowin-snd");
    await nextFrame(pg);
    await listSettled(pg);
    const want = listed.filter((c) => c.file.includes("zerowin-snd")).map((c) => c.id).sort((a, b) => b - a);
    assert.ok(want.length >= 3);
    assert.equal(await pg.textContent("#count"), `${want.length} of ${listed.length}`);
    assert.deepEqual(await ids(), want, "the filter finds them all");
    await pg.fill("#filter", "");
    await listSettled(pg);
    // A row scrolled into sight selects its connection.
    await pg.evaluate(() => { const l = document.getElementById("list"); l.scrollTop = l.scrollHeight; });
    await nextFrame(pg);
    await listSettled(pg);
    const low = byId[0];
    await pg.click(`#conns tbody tr[data-id="${low}"]`);
    await pg.waitForFunction(() => window.tcpscopePerf.fetches.length > 0);
    assert.equal(new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1)).get("c"), String(low));
    assert.ok(await pg.locator(`#conns tbody tr.sel[data-id="${low}"]`).count(), "the selected row is marked");
    assert.deepEqual(errors, []);
    await ctx.close();
  } finally {
    srv.kill();
  }
});

/**
 * A pcap (µs, Ethernet) of `n` connections from 10.0.0.1 to 10.0.0.2:80, each a SYN from its
 * own port sent 1 + (i % 4) times and never answered: more rows than one page of the list.
 */
function unansweredSyns(n) {
  const recs = [];
  let t = 1_700_000_000;
  for (let i = 0; i < n; i++)
    for (let k = 0; k <= i % 4; k++) {
      const f = Buffer.alloc(54);
      f.writeUInt16BE(0x0800, 12);
      Buffer.from([0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]).copy(f, 14);
      f.writeUInt16BE(10000 + i, 34);
      f.writeUInt16BE(80, 36);
      f.writeUInt32BE(1000 + i, 38);
      f.writeUInt16BE(0x5002, 46);
      f.writeUInt16BE(0xffff, 48);
      const h = Buffer.alloc(16);
      h.writeUInt32LE(t++, 0);
      h.writeUInt32LE(f.length, 8);
      h.writeUInt32LE(f.length, 12);
      recs.push(h, f);
    }
  const head = Buffer.from([0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0]);
  return Buffer.concat([head, ...recs]);
}

test("jumping to an event opens the plot of the direction whose data it is about", async (t) => {
  // acked_unseen is raised with its data's direction, dup ACKs and zero windows with the ACK's:
  // the page follows the server's data_dir (it once flipped acked_unseen to the wrong plot).
  const trace = path.join(root, "../shared/traces/public/tcptrace__zwnd.pcap");
  if (!existsSync(trace)) return t.skip("../shared/traces/public is absent");
  const [srv, u] = await startViewer(bin, [trace]);
  try {
    const conns = JSON.parse(execFileSync(bin, ["conns", "--json", trace])).connections;
    let checked = 0;
    for (const c of conns) {
      const events = (await (await fetch(`${u}api/events?conn=${c.id}`)).json()).events;
      for (const kind of ["acked_unseen", "zero_window"]) {
        const e = events.find((e) => e.kind === kind);
        if (!e) continue;
        const other = e.data_dir === "a2b" ? "b2a" : "a2b";
        const pg = await page();
        // Open the other direction first, so that the jump has to change it.
        await pg.goto(`${u}#c=${c.id}&d=${other}`);
        await pg.waitForSelector(`#events li >> text=${kind}`);
        const n = await fetches(pg);
        await pg.click(`#events li >> text=${kind}`);
        await afterFetch(pg, n);
        const shown = await pg.evaluate(() => document.querySelector("[data-dir].on")?.dataset.dir);
        assert.equal(shown, e.data_dir, `${kind} of connection ${c.id}`);
        assert.deepEqual(pg.errors, []);
        await pg.context().close();
        checked++;
      }
    }
    assert.ok(checked >= 2, `${checked} events jumped to`);
  } finally {
    srv.kill();
  }
});

test("a list of more connections than a page: rows asked for as they come into sight, sorted and filtered by the server", async () => {
  const file = path.join(os.tmpdir(), `tcpscope-many-${process.pid}.pcap`);
  writeFileSync(file, unansweredSyns(700));
  const listed = JSON.parse(execFileSync(bin, ["conns", "--json", file])).connections;
  assert.equal(listed.length, 700);
  const [srv, u] = await startViewer(bin, [file]);
  try {
    const pg = await page();
    const asked = [];
    pg.on("request", (r) => r.url().includes("api/conns") && asked.push(new URL(r.url()).searchParams));
    await pg.goto(`${u}#boring=1&sort=id&desc=0`);
    await pg.waitForSelector("#conns tbody tr[data-id]");
    await listSettled(pg);
    const ids = () => pg.locator("#conns tbody tr[data-id]").evaluateAll((rows) => rows.map((r) => Number(r.dataset.id)));
    assert.equal(await pg.textContent("#count"), "700 of 700");
    let got = await ids();
    assert.deepEqual(got, listed.map((c) => c.id).slice(0, got.length));
    assert.ok(asked.every((q) => Number(q.get("n")) <= 200), "pages, not the whole list");
    // Scrolled to the end: only the pages in sight are asked for, and their rows come.
    await pg.evaluate(() => { const l = document.getElementById("list"); l.scrollTop = l.scrollHeight; });
    await nextFrame(pg);
    await listSettled(pg);
    got = await ids();
    assert.deepEqual(got, listed.map((c) => c.id).slice(700 - got.length));
    assert.equal(await pg.locator("#conns tbody tr.pending").count(), 0, "no row left blank");
    const froms = new Set(asked.map((q) => q.get("from")));
    assert.ok(froms.has("0") && froms.has("600") && !froms.has("200"), `pages asked: ${[...froms]}`);
    // Sorted by packets (1 to 4 SYNs each), most first, ties by id: the server's order.
    await pg.selectOption("#sort", "a2b.packets");
    await pg.evaluate(() => { document.getElementById("list").scrollTop = 0; });
    await nextFrame(pg);
    await listSettled(pg);
    const byPackets = [...listed].sort((a, b) => b.a2b.packets - a.a2b.packets || a.id - b.id).map((c) => c.id);
    got = await ids();
    assert.deepEqual(got, byPackets.slice(0, got.length));
    // The filter finds rows never listed in the page: the ports 10650–10659.
    await pg.fill("#filter", ":1065");
    await listSettled(pg);
    assert.equal(await pg.textContent("#count"), "10 of 700");
    assert.deepEqual(await ids(), byPackets.filter((id) => String(listed[id - 1].a.port).startsWith("1065")));
    assert.deepEqual(pg.errors, []);
    await pg.context().close();
  } finally {
    srv.kill();
    rmSync(file, { force: true });
  }
});

/**
 * Opens, in a context prepared by `setup` (init scripts), the plot of the connection with the
 * most retransmissions a→b; the page collects its errors in `pg.errors`.
 */
async function worstPlot(setup) {
  const listed = JSON.parse(execFileSync(bin, ["conns", "--json", ...TRACES])).connections;
  const worst = [...listed].sort((a, b) => b.a2b.rexmit_packets - a.a2b.rexmit_packets)[0];
  const ctx = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
  await setup(ctx);
  const pg = await ctx.newPage();
  pg.errors = [];
  pg.on("console", (m) => m.type() === "error" && pg.errors.push(m.text()));
  pg.on("pageerror", (e) => pg.errors.push(String(e)));
  await pg.goto(`${url}#c=${worst.id}`);
  await afterFetch(pg, 0);
  return [ctx, pg];
}

/** A retransmission is drawn where the page says it is, for the whole connection and zoomed in on it. */
async function drawnWhereHovered(pg) {
  for (const when of ["whole connection", "zoomed"]) {
    await nextFrame(pg);
    const rx = await pg.evaluate(() => window.tcpscopeMarkAt("seg rexmit"));
    assert.ok(rx, `${when}: a retransmission is drawn`);
    const ink = await inkAt(pg, rx[0], rx[1]);
    assert.ok(ink.inked > 0 && ink.cornerWhite, `${when}: drawn where hovered: ${JSON.stringify(ink)}`);
    if (when === "zoomed") break;
    const n = await fetches(pg);
    await pg.mouse.move(rx[0], rx[1]);
    await pg.mouse.wheel(0, -300);
    await afterFetch(pg, n);
  }
}

test("the drawing worker draws on the plot's canvases, two per layer, and a zoom swaps its new drawing in", async () => {
  const [ctx, pg] = await worstPlot(() => {});
  assert.equal(await pg.evaluate(() => window.tcpscopeDrawnBy()), "worker");
  // Per data layer: its canvases, and which one is shown with what transform.
  const layers = () =>
    pg.evaluate(() =>
      [...document.querySelectorAll(".plot .clip")].map((b) => {
        const cs = [...b.querySelectorAll("canvas.data")];
        const shown = cs.filter((c) => c.style.visibility !== "hidden");
        return { n: cs.length, shown: shown.map((c) => c.dataset.slot), transform: shown[0]?.style.transform };
      }),
    );
  // (Until the worker's first drawings come, a new plot's layers show nothing.)
  const allShown = () => [...document.querySelectorAll(".plot .clip")].every((b) => b.querySelectorAll("canvas.data:not([style*='hidden'])").length === 1);
  await pg.waitForFunction(allShown, null, { timeout: 5000 });
  const before = await layers();
  assert.equal(before.length, 4, "the figure's layer and three panels'");
  for (const l of before) assert.ok(l.n === 2 && l.shown.length === 1, `two canvases, one shown: ${JSON.stringify(l)}`);
  const tsg = before[0].shown[0];
  await drawnWhereHovered(pg);
  // The zoom's answer drawn on the other canvas and shown at the view it was drawn at.
  await pg.waitForFunction((was) => document.querySelector(".plot .tsg canvas.data:not([style*='hidden'])")?.dataset.slot !== was, tsg, { timeout: 5000 });
  await pg.waitForFunction(allShown, null, { timeout: 5000 });
  const after = await layers();
  assert.notEqual(after[0].shown[0], tsg, "swapped");
  assert.ok(after.every((l) => l.shown.length === 1 && l.transform === "none"), JSON.stringify(after));
  assert.deepEqual(pg.errors, []);
  await ctx.close();
});

// Browsers where no drawing worker can start: without OffscreenCanvas (as older ones), or
// without handing a canvas over to it.
const NO_WORKER = {
  "no OffscreenCanvas": () => delete window.OffscreenCanvas,
  "no transferControlToOffscreen": () => delete HTMLCanvasElement.prototype.transferControlToOffscreen,
};
for (const [how, init] of Object.entries(NO_WORKER)) {
  test(`where no drawing worker can start (${how}), the page draws the data itself`, async () => {
    const [ctx, pg] = await worstPlot((ctx) => ctx.addInitScript(init));
    assert.equal(await pg.evaluate(() => window.tcpscopeDrawnBy()), "page");
    await drawnWhereHovered(pg);
    assert.deepEqual(pg.errors, []);
    await ctx.close();
  });
}

// A drawing worker that starts and then fails: the page must notice, draw the data itself from
// then on, and log no error (the failure is handled). Each way it can fail, in a worker put in
// place of drawworker.ts.
const FAILING_WORKERS = {
  "its script does not load": null,
  "it throws as it starts": "throw new Error('drawing worker: failed at start')",
  "it throws while drawing": "onmessage = (e) => { if (e.data.draw !== undefined) throw new Error('drawing worker: failed to draw'); }",
};
for (const [how, body] of Object.entries(FAILING_WORKERS)) {
  test(`when the drawing worker fails (${how}), the page draws the data itself`, async () => {
    const [ctx, pg] = await worstPlot((ctx) =>
      ctx.addInitScript((body) => {
        const Real = window.Worker;
        window.Worker = class extends Real {
          constructor(_url, opts) {
            // null: a script the server does not have (404), which fails after the worker starts.
            super(body === null ? "no-such-worker.js" : URL.createObjectURL(new Blob([body], { type: "text/javascript" })), opts);
          }
        };
      }, body),
    );
    await pg.waitForFunction(() => window.tcpscopeDrawnBy() === "page", null, { timeout: 5000 });
    await drawnWhereHovered(pg);
    if (how === "it throws as it starts") await pg.screenshot({ path: path.join(out, "7-worker-failed.png") });
    assert.deepEqual(pg.errors, []);
    await ctx.close();
  });
}

test("a resize of the window or of the list redraws the plot at its new width and asks for it again", async () => {
  const listed = JSON.parse(execFileSync(bin, ["conns", "--json", ...TRACES])).connections;
  const worst = [...listed].sort((a, b) => b.a2b.rexmit_packets - a.a2b.rexmit_packets)[0];
  const pg = await page();
  await pg.goto(`${url}#c=${worst.id}`);
  await afterFetch(pg, 0);
  // The plot's drawn width, the width it takes on the page, and the columns its answer was asked for.
  const widths = () => pg.evaluate(() => [window.tcpscopeFrames()[0].w, document.querySelector(".plot .tsg").clientWidth]);
  const asked = [];
  pg.on("request", (r) => r.url().includes("api/tsg") && asked.push(Number(new URL(r.url()).searchParams.get("w"))));
  for (const resize of [() => pg.setViewportSize({ width: 1200, height: 1000 }), () => pg.evaluate(() => document.getElementById("side").style.setProperty("--side-w", "300px"))]) {
    const before = await widths();
    const n = await fetches(pg);
    await resize();
    await afterFetch(pg, n);
    const [drawn, shown] = await widths();
    assert.notEqual(shown, before[1], "the plot's width changed");
    assert.equal(drawn, shown, "drawn at its new width");
    assert.equal(asked.at(-1), shown - 84 - 16, "asked for at its new width (plot area columns)");
  }
  assert.deepEqual(pg.errors, []);
  await pg.close();
});

test("hover reads no geometry from the page, and the plot stays put when its first answer comes", async () => {
  const listed = JSON.parse(execFileSync(bin, ["conns", "--json", ...TRACES])).connections;
  const worst = [...listed].sort((a, b) => b.a2b.rexmit_packets - a.a2b.rexmit_packets)[0];
  const pg = await page();
  // The first answer held back: where the plot is drawn before it, and after.
  let release;
  const held = new Promise((r) => (release = r));
  await pg.route(/\/api\/tsg\?/, async (r) => {
    await held;
    await r.continue();
  });
  await pg.goto(`${url}#c=${worst.id}`);
  await pg.waitForSelector(".plot .overlay");
  await nextFrame(pg);
  const top = () => pg.evaluate(() => document.querySelector(".plot .overlay").getBoundingClientRect().top);
  const before = await top();
  // While it is held back, the title says what the plot waits for (a pass over the file).
  await pg.waitForSelector(".plot h2.waiting");
  assert.equal(await pg.textContent(".plot h2"), `connection ${worst.id}: reading its packets from the trace…`);
  assert.equal(await top(), before, "the notice is on the title's line");
  release();
  await afterFetch(pg, 0);
  assert.match(await pg.textContent(".plot h2"), new RegExp(`^connection ${worst.id} a2b: `), "the title came");
  assert.equal(await pg.locator(".plot h2.waiting").count(), 0);
  assert.equal(await top(), before, "the title's line was kept for it: the plot did not move");

  // Reads of layout (a box, an element's size, the window's) made in the page from here on.
  await pg.evaluate(() => {
    window.geometryReads = [];
    const count = (proto, name, kind = "get") => {
      const d = Object.getOwnPropertyDescriptor(proto, name);
      Object.defineProperty(proto, name, { ...d, [kind]: function (...a) { window.geometryReads.push(name); return d[kind].apply(this, a); } });
    };
    count(Element.prototype, "getBoundingClientRect", "value");
    for (const n of ["offsetWidth", "offsetHeight", "offsetLeft", "offsetTop"]) count(HTMLElement.prototype, n);
    for (const n of ["clientWidth", "clientHeight"]) count(Element.prototype, n);
    for (const n of ["innerWidth", "innerHeight"]) count(window, n);
  });
  // Hovers a mark of `cls`: the tooltip shows its packet's row, next to the pointer. Returns
  // the page's reads of layout meanwhile.
  const hover = async (cls) => {
    const at = await pg.evaluate((c) => window.tcpscopeMarkAt(c), cls);
    assert.ok(at, `a ${cls} mark is drawn`);
    await pg.evaluate(() => (window.geometryReads = []));
    await pg.mouse.move(at[0], at[1]);
    await pg.waitForFunction((f) => document.querySelector("#tip table.pkt tr:nth-child(2) td")?.textContent === String(f), at[2], { timeout: 5000 });
    await nextFrame(pg);
    const reads = await pg.evaluate(() => window.geometryReads);
    const tip = await pg.evaluate(() => document.getElementById("tip").getBoundingClientRect().toJSON());
    const [vw, vh] = await pg.evaluate(() => [document.documentElement.clientWidth, document.documentElement.clientHeight]);
    assert.equal(tip.left, Math.min(at[0] + 14, vw - tip.width - 4), `the tooltip beside the pointer: ${JSON.stringify(tip)}`);
    assert.equal(tip.top, Math.min(at[1] + 14, vh - tip.height - 4));
    return reads;
  };
  // The plot's place may be read once; then a hovered mark, its outline and its tooltip (written
  // twice: at once, and when its packet's row comes) read nothing.
  assert.ok((await hover("seg")).length <= 1, "the plot's place read once at most");
  await pg.mouse.move(2, 2);
  await pg.waitForSelector("#tip", { state: "hidden" });
  assert.deepEqual(await hover("seg rexmit"), [], "no layout read while hovering");
  // The plot moved (the list widened): hover finds the marks where they now are.
  const n = await fetches(pg);
  await pg.evaluate(() => document.getElementById("side").style.setProperty("--side-w", "500px"));
  await afterFetch(pg, n);
  await hover("seg rexmit");
  assert.deepEqual(pg.errors, []);
  await pg.close();
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
  // The loss trace's connection (the one with retransmissions to hover).
  const loss = JSON.parse(execFileSync(bin, ["stats", "--json", ...TRACES])).connections.find((c) => c.a2b.rexmit_packets > 0);
  await pg.goto(`file://${file}#c=${loss.id}`);
  await pg.waitForFunction(() => window.tcpscopePerf.fetches.length > 0);
  await nextFrame(pg);
  assert.match(await pg.textContent(".plot .legend"), /data segment/);
  // Hover: the full packet-listing row and events, as the live viewer shows them (the oracle:
  // the live server's row for the same frame of the same traces).
  const plotted = Number(new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1)).get("c"));
  for (const prefix of ["seg rexmit", "ack"]) {
    const at = await pg.evaluate((p) => window.tcpscopeMarkAt(p), prefix);
    assert.ok(at, `a ${prefix} mark is drawn in the report`);
    const ink = await inkAt(pg, at[0], at[1]);
    assert.ok(ink.inked > 0 && ink.cornerWhite, `${prefix}: drawn where hovered in the report: ${JSON.stringify(ink)}`);
    await pg.mouse.move(10, 10);
    await pg.mouse.move(at[0], at[1]);
    await pg.waitForSelector("#tip table.pkt");
    const row = await (await fetch(`${url}api/packet?conn=${plotted}&frame=${at[2]}`)).json();
    const cells = await pg.locator("#tip table.pkt tr:nth-child(2) td").allTextContents();
    assert.deepEqual(cells, [String(row.frame), row.t.toFixed(6), row.dir, String(row.seq), String(row.ack ?? ""), String(row.win), String(row.len), row.flags], prefix);
    const items = await pg.locator("#tip li").allTextContents();
    assert.deepEqual(items, row.events.map((e) => `${e.kind} ${e.text}`), `${prefix}: the frame's events`);
    if (prefix === "seg rexmit") {
      assert.ok(items.some((t) => t.startsWith("retransmission")), "the retransmission's event");
      await pg.screenshot({ path: path.join(out, "5a-report-hover.png") });
    }
  }
  await pg.mouse.move(10, 10);
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
  await pg.context().close();
});

test("report: the table lists the most troubled rows, and says how many of how many", async () => {
  // The recorded traces three times over, listed 5 rows and plotted 2.
  const all = readdirSync(path.join(root, "tests/data")).filter((f) => f.endsWith(".pcap")).map(data);
  const files = [...all, ...all, ...all];
  const file = path.join(os.tmpdir(), `tcpscope-report-${process.pid}.html`);
  const said = execFileSync(bin, ["report", ...files, "--plots", "2", "--rows", "5", "-o", file]).toString();
  const screened = JSON.parse(execFileSync(bin, ["screen", "--json", "--all", ...files])).connections;
  assert.match(said, new RegExp(`${screened.length} connections \\(5 most troubled listed; --rows to list more\\)`));
  try {
    const pg = await page();
    await pg.goto(`file://${file}#boring=1&sort=id&desc=0`);
    await listSettled(pg);
    // `screen` ranks them: not boring, most severe first, ties by id.
    const ranked = [...screened].sort((a, b) => a.boring - b.boring || b.severity - a.severity || a.id - b.id).slice(0, 5).map((c) => c.id).sort((a, b) => a - b);
    const ids = await pg.locator("#conns tbody tr[data-id]").evaluateAll((rows) => rows.map((r) => Number(r.dataset.id)));
    assert.deepEqual(ids, ranked);
    assert.equal(await pg.textContent("#count"), `5 of ${screened.length}`);
    assert.match(await pg.textContent("#traces"), new RegExp(`the 5 most troubled of ${screened.length} connections listed`));
    assert.deepEqual(pg.errors, []);
    await pg.context().close();
  } finally {
    rmSync(file, { force: true });
  }
});
