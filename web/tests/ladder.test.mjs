// Browser test of the ladder view (`#k=ladder`, api/ladder) on a recorded trace, driven in
// Debian's chromium as viewer.test.mjs is. The oracle is `tcpscope print --json`: the packet
// listing, which reads the trace on its own path (no series, no figure).
//
// TCPSCOPE_BIN: the binary (default ../target/release/tcpscope); CHROMIUM: the browser.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { chromium } from "playwright-core";
import { fetches, figureAfter, inkAt, newPage, startViewer } from "./util.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.TCPSCOPE_BIN ?? path.join(root, "target/release/tcpscope");
const out = path.join(root, "web/test-results");
mkdirSync(out, { recursive: true });
const TRACE = path.join(root, "tests/data/loss-snd.pcap");

let server, url, browser;

before(async () => {
  assert.ok(existsSync(bin), `${bin} missing: build it first (make build)`);
  [server, url] = await startViewer(bin, [TRACE]);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox", "--headless=new"] });
});

after(async () => {
  await browser?.close();
  server?.kill();
});

const page = () => newPage(browser);

const texts = (m) => m.p.filter((p) => p[0] === "x").map((p) => p[p.length - 1]);
const segs = (fig) => fig.marks.filter((m) => m.c.startsWith("seg"));

test("ladder: one labelled arrow per segment of both directions, the states, zoom in time, back to time-sequence", async () => {
  const rows = execFileSync(bin, ["print", "--json", "-q", "-c", "1", TRACE], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  const t0 = rows[0].time;
  const byFrame = new Map(rows.map((r) => [r.frame, r]));
  // Each side's ISN (its SYN's number): the ladder's offsets count from after it.
  const isn = new Map(rows.filter((r) => r.flags.includes("S")).map((r) => [r.src, r.seq]));
  const rel = (v, src) => (v - isn.get(src) - 1 + 2 ** 32) % 2 ** 32;

  const pg = await page();
  // Around the first retransmission (0.082 s).
  let n = 0;
  await pg.goto(`${url}#c=1&k=ladder&t=0.078,0.084`);
  let fig = await figureAfter(pg, n);
  assert.deepEqual(fig.x, [0.078, 0.084]);
  assert.match(fig.title, /\(ladder\)$/);
  const drawn = segs(fig);
  // Every packet the capture saw in the window is an arrow (a frame of its own), and no more
  // than those within the arrows' reach of it.
  const inside = rows.filter((r) => r.time - t0 >= 0.078 && r.time - t0 <= 0.084).map((r) => r.frame);
  const frames = new Set(drawn.map((m) => m.f));
  assert.ok(inside.length > 10, `${inside.length} packets in the window`);
  for (const f of inside) assert.ok(frames.has(f), `frame ${f} drawn`);
  assert.ok(drawn.every((m) => m.n === 1));
  assert.equal(drawn.filter((m) => m.c === "seg rexmit").length, 1);
  // Each label says what the listing says: flags, the relative range or seq, ack, window.
  let labelled = 0;
  for (const m of drawn) {
    const r = byFrame.get(m.f);
    const [label] = texts(m);
    // a→b arrows go down from a's line (y 1) to b's (y 0).
    const [x1, y1, x2, y2] = m.p[0].slice(2, 6);
    assert.equal(y1 > y2, r.src === rows[0].src, `frame ${m.f}: arrow from its sender's line`);
    assert.ok(x2 >= x1, `frame ${m.f}: arrives no earlier than it left`);
    if (!label) continue;
    labelled++;
    const seq = rel(r.seq, r.src);
    assert.ok(label.includes(r.len ? ` ${seq}:${seq + r.len} ` : ` seq ${seq} `), `${label} vs ${JSON.stringify(r)}`);
    if (r.flags.includes("A")) assert.ok(label.includes(` ack ${rel(r.ack, r.dst)} `), `${label} vs ${JSON.stringify(r)}`);
    const letters = label.split(" ")[0].split(",").map((f) => f[0]).sort().join("");
    assert.equal(letters, [...r.flags].sort().join(""), `${label} vs ${JSON.stringify(r)}`);
  }
  assert.ok(labelled * 2 >= drawn.length, `${labelled} of ${drawn.length} arrows labelled`);
  // The states at the window's start: both ESTABLISHED, written beside their lines.
  const states = fig.marks.filter((m) => m.c === "state").flatMap(texts);
  assert.deepEqual(states, ["ESTABLISHED", "ESTABLISHED"]);
  // Drawn: the retransmission's arrow is inked where the pointer hovers it, and hovering it
  // gives its packet-listing row.
  const rx = await pg.evaluate(() => window.tcpscopeMarkAt("seg rexmit"));
  assert.ok(rx, "the retransmission is drawn where it can be hovered");
  const ink = await inkAt(pg, rx[0], rx[1]);
  assert.ok(ink.inked > 0 && ink.cornerWhite, `inked where hovered: ${JSON.stringify(ink)}`);
  await pg.mouse.move(rx[0], rx[1]);
  await pg.waitForSelector("#tip table.pkt");
  const cells = await pg.locator("#tip table.pkt tr:nth-child(2) td").allTextContents();
  assert.equal(cells[0], String(rx[2]));
  assert.equal(cells[3], String(rel(byFrame.get(rx[2]).seq, rows[0].src)));
  await pg.screenshot({ path: path.join(out, "ladder-1-window.png") });

  // A wheel notch in: the time range narrows about the pointer, and the ladder is asked again.
  await pg.mouse.move(rx[0], rx[1]);
  n = await fetches(pg);
  await pg.mouse.wheel(0, -300);
  fig = await figureAfter(pg, n);
  const q = new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1));
  assert.equal(q.get("k"), "ladder");
  assert.ok(fig.x[1] - fig.x[0] < 0.006 - 1e-9, `zoomed in: ${fig.x}`);
  assert.ok(fig.x[0] <= 0.082 && fig.x[1] >= 0.082, `about the pointer: ${fig.x}`);
  assert.equal(q.get("s"), null, "the ladder zooms in time only");

  // The whole connection, zoomed out: one arrow per pixel column, direction and kind, every
  // packet counted, none labelled; the states from the handshake to the close.
  n = await fetches(pg);
  await pg.click("#reset");
  fig = await figureAfter(pg, n);
  const all = segs(fig);
  assert.equal(all.reduce((s, m) => s + m.n, 0), rows.length);
  assert.ok(all.some((m) => m.n > 1) && all.every((m) => texts(m).length === 0));
  assert.match(await pg.textContent(".plot .legend"), /one arrow per column, direction and kind/);
  const path_ = fig.marks.filter((m) => m.c === "state").flatMap(texts);
  for (const s of ["CLOSED (assumed)", "LISTEN (assumed)", "SYN_SENT", "SYN_RCVD", "ESTABLISHED"]) assert.ok(path_.includes(s), `${s} in ${path_}`);
  await pg.screenshot({ path: path.join(out, "ladder-2-whole.png") });

  // Back to the time-sequence plot: its figure, the kind gone from the URL.
  n = await fetches(pg);
  await pg.click("#kind-tsg");
  fig = await figureAfter(pg, n);
  assert.doesNotMatch(fig.title, /ladder/);
  assert.ok(fig.marks.some((m) => m.c.startsWith("ack")), "the time-sequence figure");
  assert.equal(new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1)).get("k"), null);
  assert.deepEqual(pg.errors, []);
});

test("ladder: a report has none; a link to one opens the time-sequence plot, without the switch", async () => {
  const file = path.join(out, "ladder-report.html");
  execFileSync(bin, ["report", TRACE, "-o", file]);
  const pg = await page();
  await pg.goto(`file://${file}#c=1&k=ladder`);
  const fig = await figureAfter(pg, 0);
  assert.doesNotMatch(fig.title, /ladder/);
  assert.ok(fig.marks.some((m) => m.c.startsWith("ack")), "the time-sequence figure");
  assert.equal(await pg.isVisible("#kind-ladder"), false);
  assert.deepEqual(pg.errors, []);
});
