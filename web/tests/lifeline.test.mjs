// Browser test of the correlated views (`view --correlate`, `#k=lifeline` / `#k=owd`, api/lifeline
// and api/owd) on the recorded sender/receiver pair, driven in Debian's chromium as
// viewer.test.mjs is. The oracle is `tcpscope correlate --packets --json`: one row per packet
// with its time at each point, its one-way delay and its fate, written by the CLI's own path
// (no figure).
//
// TCPSCOPE_BIN: the binary (default ../target/release/tcpscope); CHROMIUM: the browser.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { chromium } from "playwright-core";
import { fetches, figureAfter, newPage, startViewer } from "./util.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.TCPSCOPE_BIN ?? path.join(root, "target/release/tcpscope");
const out = path.join(root, "web/test-results");
mkdirSync(out, { recursive: true });
const SND = path.join(root, "tests/data/loss-snd.pcap");
const RCV = path.join(root, "tests/data/loss-rcv.pcap");

let server, url, plain, plainUrl, browser;

before(async () => {
  assert.ok(existsSync(bin), `${bin} missing: build it first (make build)`);
  [server, url] = await startViewer(bin, ["--correlate", SND, RCV]);
  [plain, plainUrl] = await startViewer(bin, [SND]);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox", "--headless=new"] });
});

after(async () => {
  await browser?.close();
  server?.kill();
  plain?.kill();
});

const near = (a, b, what) => assert.ok(Math.abs(a - b) <= 2e-6, `${what}: ${a} vs ${b}`);

test("lifelines: each packet at both points where correlate has it, losses where they vanished; one-way delays", async () => {
  const rows = JSON.parse(execFileSync(bin, ["correlate", "--packets", "--json", SND, RCV], { encoding: "utf8" })).packets;
  // The viewer's time 0 is the connection's first packet at the sender's capture (point 1).
  const origin = Math.min(...rows.filter((r) => r.conn === 1 && r.at_s[0] !== null).map((r) => r.at_s[0]));
  const [t0, t1] = [0.07, 0.2];
  const want = rows.filter((r) => r.conn === 1 && r.dir === "a2b" && r.at_s[0] !== null && r.at_s[0] - origin >= t0 && r.at_s[0] - origin <= t1);
  const lost = want.filter((r) => r.fate === "lost");
  assert.ok(want.length > 50 && lost.length > 0, `${want.length} packets, ${lost.length} lost in the window`);

  const pg = await newPage(browser);
  let n = 0;
  await pg.goto(`${url}#c=1&d=a2b&k=lifeline&t=${t0},${t1}`);
  let fig = await figureAfter(pg, n);
  assert.match(fig.title, /^connection 1 a2b: .*\(lifelines, points 1-2\)$/);
  assert.deepEqual(fig.x, [t0, t1]);
  assert.equal(await pg.isVisible("#kind-lifeline"), true);
  const lines = fig.marks.filter((m) => m.c.startsWith("lifeline"));
  assert.equal(lines.length, want.length, "one lifeline per packet that left the sender in the window");
  const byFrame = new Map(lines.map((m) => [m.f, m]));
  for (const r of want) {
    const m = byFrame.get(r.frames[0]);
    assert.ok(m, `frame ${r.frames[0]} drawn`);
    assert.equal(m.c === "lifeline lost", r.fate === "lost", `frame ${r.frames[0]}: ${m.c} vs ${r.fate}`);
    // The polyline through its sightings: at the sender, then (if it arrived) at the receiver.
    const [op, , ...xy] = m.p[0];
    assert.equal(op, "p");
    const seen = r.at_s.filter((t) => t !== null);
    assert.equal(xy.length, 2 * seen.length, `frame ${r.frames[0]}: a point per sighting`);
    seen.forEach((t, i) => near(xy[2 * i], t - origin, `frame ${r.frames[0]} point ${i + 1}`));
    // At its sequence number as the time-sequence plot counts it (from the first payload byte,
    // correlate from the SYN: one less). (The packed figure carries numbers as f32 about an
    // origin: within a byte.)
    assert.ok(xy.every((v, i) => i % 2 === 0 || Math.abs(v - (r.seq - 1)) < 0.5), `frame ${r.frames[0]} at its sequence number: ${xy} vs ${r.seq}`);
    // A lost one ends in a diamond where it was last seen.
    if (r.fate === "lost") assert.ok(m.p.some((p) => p[0] === "d" && Math.abs(p[2] - (seen.at(-1) - origin)) <= 2e-6));
  }
  assert.match(await pg.textContent(".plot .legend"), /lost after here/);
  await pg.screenshot({ path: path.join(out, "lifeline-1-window.png") });
  // Hovering a lost packet's lifeline gives its row of the sender's packet listing.
  const at = await pg.evaluate(() => window.tcpscopeMarkAt("lifeline lost"));
  assert.ok(at && at[2] !== null, `a lost lifeline drawn with its frame: ${at}`);
  await pg.mouse.move(at[0], at[1]);
  await pg.waitForSelector("#tip table.pkt");
  const cells = await pg.locator("#tip table.pkt tr:nth-child(2) td").allTextContents();
  assert.equal(cells[0], String(at[2]));
  assert.equal(cells[3], String(lost.find((r) => r.frames[0] === at[2]).seq - 1), "its relative sequence number");
  await pg.mouse.move(0, 0);

  // The one-way delays over the same window: a dot per delivered packet, at its delay.
  n = await fetches(pg);
  await pg.click("#kind-owd");
  fig = await figureAfter(pg, n);
  assert.match(fig.title, /\(one-way delay, points 1-2\)$/);
  assert.deepEqual(fig.x, [t0, t1], "the time range carries over");
  const dots = fig.marks.filter((m) => m.c === "owd");
  const delivered = want.filter((r) => r.one_way_delay_ms !== null);
  assert.equal(dots.length, delivered.length);
  const dotAt = new Map(dots.map((m) => [m.f, m.p[0]]));
  for (const r of delivered) {
    const p = dotAt.get(r.frames[0]);
    assert.ok(p, `frame ${r.frames[0]}'s delay drawn`);
    near(p[2], r.at_s[0] - origin, `frame ${r.frames[0]} time`);
    assert.ok(Math.abs(p[3] - r.one_way_delay_ms) <= 1e-3, `frame ${r.frames[0]} delay ${p[3]} vs ${r.one_way_delay_ms}`);
  }
  assert.equal(new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1)).get("k"), "owd");
  await pg.screenshot({ path: path.join(out, "lifeline-2-owd.png") });

  // The whole connection at a few pixel columns: per column the lowest, the highest and a
  // lost packet, every loss still marked, and the remark says how many were drawn.
  n = await fetches(pg);
  await pg.click("#kind-lifeline");
  await figureAfter(pg, n);
  n = await fetches(pg);
  await pg.setViewportSize({ width: 420, height: 700 });
  await pg.click("#reset");
  fig = await figureAfter(pg, n);
  const all = rows.filter((r) => r.conn === 1 && r.dir === "a2b");
  const shown = fig.marks.filter((m) => m.c.startsWith("lifeline"));
  assert.ok(shown.length < all.length, `${shown.length} of ${all.length} drawn`);
  assert.ok(fig.remarks.some((r) => r.startsWith(`${shown.length} of ${all.length} packets drawn`)), fig.remarks.join("; "));
  assert.ok(shown.filter((m) => m.c === "lifeline lost").length >= 1);
  assert.ok(fig.remarks.some((r) => r.startsWith(`${all.filter((r) => r.fate === "lost").length} lost on the path`)), fig.remarks.join("; "));
  assert.deepEqual(pg.errors, []);
});

test("lifelines: traces that are not correlated have no such view; a link to one opens the time-sequence plot", async () => {
  const pg = await newPage(browser);
  await pg.goto(`${plainUrl}#c=1&k=lifeline`);
  const fig = await figureAfter(pg, 0);
  assert.doesNotMatch(fig.title, /lifelines/);
  assert.ok(fig.marks.some((m) => m.c.startsWith("ack")), "the time-sequence figure");
  assert.equal(await pg.isVisible("#kind-lifeline"), false);
  assert.equal(await pg.isVisible("#kind-owd"), false);
  assert.deepEqual(pg.errors, []);
});
