// Issue 17, "The first hour of a new user", in the viewer: the direction shown by default, the
// RTT panel's colours as the CLI's, the bytes panel not flattened by the advertised window, and
// the small bugs (the tooltip of mark 0, the packet cache, the marked packet, the list's
// both-direction columns). The real binary serves the project's loss trace and a download
// written here; chromium through playwright-core, as viewer.test.mjs.
//
// TCPSCOPE_BIN: the binary (default ../target/release/tcpscope); CHROMIUM: the browser.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { chromium } from "playwright-core";
import { nextFrame, startViewer } from "./util.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.TCPSCOPE_BIN ?? path.join(root, "target/release/tcpscope");
const tmp = mkdtempSync(path.join(os.tmpdir(), "tcpscope-first-hour-"));
const LOSS = path.join(root, "tests/data/loss-snd.pcap");
const DOWNLOAD = path.join(tmp, "download.pcap");

/**
 * A pcap (link type 101, raw IPv4) of `pkts`: {ms, fromA, flags, seq, ack, len}. Between
 * 10.3.0.1:40000 (a, the client) and 10.3.0.2:80 (b).
 */
function pcapOf(pkts) {
  const head = Buffer.alloc(24);
  head.writeUInt32LE(0xa1b2c3d4, 0);
  head.writeUInt16LE(2, 4);
  head.writeUInt16LE(4, 6);
  head.writeUInt32LE(65535, 16);
  head.writeUInt32LE(101, 20);
  const parts = [head];
  for (const p of pkts) {
    const ip = Buffer.alloc(40 + p.len);
    ip[0] = 0x45;
    ip.writeUInt16BE(40 + p.len, 2);
    ip[8] = 64;
    ip[9] = 6;
    const [a, b] = [[10, 3, 0, 1], [10, 3, 0, 2]];
    Buffer.from(p.fromA ? a : b).copy(ip, 12);
    Buffer.from(p.fromA ? b : a).copy(ip, 16);
    ip.writeUInt16BE(p.fromA ? 40000 : 80, 20);
    ip.writeUInt16BE(p.fromA ? 80 : 40000, 22);
    ip.writeUInt32BE(p.seq >>> 0, 24);
    ip.writeUInt32BE(p.ack >>> 0, 28);
    ip[32] = 5 << 4;
    ip[33] = p.flags;
    ip.writeUInt16BE(65535, 34);
    const rec = Buffer.alloc(16);
    const us = 1_700_000_000_000_000 + p.ms * 1000;
    rec.writeUInt32LE(Math.floor(us / 1e6), 0);
    rec.writeUInt32LE(us % 1e6, 4);
    rec.writeUInt32LE(ip.length, 8);
    rec.writeUInt32LE(ip.length, 12);
    parts.push(rec, ip);
  }
  return Buffer.concat(parts);
}

/** A download: a 100-byte request, 40 segments of 1000 bytes back, acked every other one. */
function download() {
  const [SYN, ACK, PSH, FIN] = [0x02, 0x10, 0x08, 0x01];
  const p = [
    { ms: 0, fromA: true, flags: SYN, seq: 100, ack: 0, len: 0 },
    { ms: 10, fromA: false, flags: SYN | ACK, seq: 500, ack: 101, len: 0 },
    { ms: 20, fromA: true, flags: ACK, seq: 101, ack: 501, len: 0 },
    { ms: 21, fromA: true, flags: ACK | PSH, seq: 101, ack: 501, len: 100 },
  ];
  for (let i = 0; i < 40; i++) {
    p.push({ ms: 31 + i, fromA: false, flags: ACK, seq: 501 + i * 1000, ack: 201, len: 1000 });
    if (i % 2) p.push({ ms: 41 + i, fromA: true, flags: ACK, seq: 201, ack: 501 + (i + 1) * 1000, len: 0 });
  }
  p.push({ ms: 90, fromA: false, flags: FIN | ACK, seq: 40501, ack: 201, len: 0 });
  p.push({ ms: 100, fromA: true, flags: FIN | ACK, seq: 201, ack: 40502, len: 0 });
  p.push({ ms: 110, fromA: false, flags: ACK, seq: 40502, ack: 202, len: 0 });
  return pcapOf(p);
}

let server, url, browser;

async function page(hash = "") {
  const ctx = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
  const pg = await ctx.newPage();
  pg.errors = [];
  pg.on("console", (m) => m.type() === "error" && pg.errors.push(m.text()));
  pg.on("pageerror", (e) => pg.errors.push(String(e)));
  await pg.goto(url + hash);
  return pg;
}

const st = (pg) => pg.evaluate(() => window.tcpscopeState());
const hash = async (pg) => new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1));
/** Once the first plot shows its figure (its title written) and its panels are drawn. */
async function drawn(pg) {
  await pg.waitForFunction(() => {
    const s = window.tcpscopeState();
    const p = window.tcpscopePanels();
    return s.titles[0]?.startsWith("connection") && !s.titles[0].includes("reading") && p && p.every((x) => x.y1 !== null) && window.tcpscopeFrames()[0];
  });
  await nextFrame(pg);
}

before(async () => {
  assert.ok(existsSync(bin), `${bin} missing: build it first (make build)`);
  writeFileSync(DOWNLOAD, download());
  [server, url] = await startViewer(bin, [LOSS, DOWNLOAD]);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox", "--headless=new"] });
});

after(async () => {
  await browser?.close();
  server?.kill();
  rmSync(tmp, { recursive: true, force: true });
});

test("a connection opens in the direction with the most data, said in its title, until one is chosen", async () => {
  // The oracle: `tcpscope stats`, which counts each direction's payload bytes.
  const conns = JSON.parse(execFileSync(bin, ["stats", "--json", LOSS, DOWNLOAD])).connections;
  const busier = (c) => (c.b2a.payload_bytes > c.a2b.payload_bytes ? "b2a" : "a2b");
  const dl = conns.find((c) => c.b.port === 80);
  assert.equal(busier(dl), "b2a", "the download's data is b's");
  // Opened on the download without a direction.
  let pg = await page(`#c=${dl.id}`);
  await drawn(pg);
  let s = await st(pg);
  assert.equal(s.dir, "b2a");
  assert.ok(s.dirAuto);
  assert.match(s.titles[0], /^connection \d+ b2a: .* · most data$/);
  assert.match(await pg.getAttribute(".plot h2", "title"), / · the direction with the most data/);
  assert.equal((await hash(pg)).get("d"), null, "an unchosen direction is not in the link");
  // The a→b button chooses: the link says so, the title no longer claims a choice.
  await pg.click('[data-dir="a2b"]');
  await pg.waitForFunction(() => window.tcpscopeState().titles[0]?.includes(" a2b: "));
  s = await st(pg);
  assert.ok(!s.dirAuto && s.dir === "a2b");
  assert.equal((await hash(pg)).get("d"), "a2b");
  assert.ok(!s.titles[0].includes("most data"));
  // A link with a direction keeps it.
  pg = await page(`#c=${dl.id}&d=a2b`);
  await drawn(pg);
  assert.equal((await st(pg)).dir, "a2b");
  // From the list: the loss connection (a sends), then the download (b sends).
  pg = await page("");
  await pg.check("#show-boring");
  await pg.waitForSelector(`#conns tbody tr[data-id="${dl.id}"]`);
  const loss = conns.find((c) => c.b.port !== 80);
  await pg.click(`#conns tbody tr[data-id="${loss.id}"]`);
  await drawn(pg);
  assert.equal((await st(pg)).dir, busier(loss));
  await pg.click(`#conns tbody tr[data-id="${dl.id}"]`);
  await pg.waitForFunction(() => window.tcpscopeState().titles[0]?.includes(" b2a: "));
  assert.equal((await st(pg)).dir, "b2a");
  assert.deepEqual(pg.errors, []);
});

test("the RTT panel colours Karn samples as `tcpscope plot -k rtt` does", async () => {
  const svgPath = path.join(tmp, "rtt.svg");
  execFileSync(bin, ["plot", LOSS, "-c", "1", "-k", "rtt", "-o", svgPath], { stdio: "ignore" });
  const svg = readFileSync(svgPath, "utf8");
  const colourOf = (cls) => svg.slice(svg.indexOf(`<g class="${cls}"`)).match(/stroke="(#[0-9a-f]{6})"/)[1];
  const pg = await page("#c=1");
  await drawn(pg);
  const rtt = (await pg.evaluate(() => window.tcpscopePanels()))[1].lines;
  assert.equal(rtt.find((l) => l.label === "Karn").color, colourOf("rtt karn"));
  assert.equal(rtt.find((l) => l.label === "timestamp + Karn").color, colourOf("rtt ts"));
});

test("the bytes panel follows the bytes in flight; the advertised window leaves its top", async () => {
  const pg = await page("#c=1");
  await drawn(pg);
  // The panels redraw when their series arrive, after the plot: wait for the bytes panel's.
  await pg.waitForFunction(() => (window.tcpscopePanels()[2]?.y1 ?? 0) > 1, null, { timeout: 10000 });
  const bytes = (await pg.evaluate(() => window.tcpscopePanels()))[2];
  const line = (label) => bytes.lines.find((l) => l.label.startsWith(label));
  const [flight, win, cwnd] = [line("in flight"), line("advertised window"), line("cwnd")];
  // loss-snd: about 100 kB in flight under a window that grows to 2.5 MB.
  assert.ok(win.max > 5 * flight.max, `window ${win.max} vs in flight ${flight.max}`);
  assert.equal(win.overTop, "window ↑");
  assert.ok(bytes.y1 >= Math.max(flight.max, cwnd.max), `the scale (${bytes.y1}) holds the bytes in flight and the cwnd`);
  assert.ok(bytes.y1 < win.max, `the scale (${bytes.y1}) is not the window's (${win.max})`);
});

test("the tooltip follows the pointer over mark 0 too", async () => {
  const pg = await page("#c=1");
  await drawn(pg);
  const at = await pg.evaluate(() => window.tcpscopeMarkIndexAt(0));
  assert.ok(at, "mark 0 can be hovered");
  // Another point over mark 0 (a pixel or two along it).
  const near = await pg.evaluate(([x, y]) => {
    for (const [dx, dy] of [[0, 1], [0, -1], [1, 0], [-1, 0], [0, 2], [0, -2], [2, 0], [-2, 0]])
      if (window.tcpscopeHit(x + dx, y + dy) === 0) return [x + dx, y + dy];
    return null;
  }, at);
  assert.ok(near, "mark 0 is more than a pixel");
  await pg.mouse.move(at[0], at[1]);
  await pg.waitForSelector("#tip", { state: "visible" });
  await nextFrame(pg);
  const before = await pg.evaluate(() => document.getElementById("tip").style.transform);
  await pg.mouse.move(near[0], near[1]);
  // Until the tip moves (a frame or two; more on a loaded machine), or 5 s: it never did.
  const moved = await pg
    .waitForFunction((b) => document.getElementById("tip").style.transform !== b, before, { timeout: 5000 })
    .then(() => true, () => false);
  const after = await pg.evaluate(() => document.getElementById("tip").style.transform);
  assert.ok(moved && after !== before, `the tip moved with the pointer: ${before} → ${after}`);
  assert.ok(await pg.isVisible("#tip"));
});

test("another connection clears the packet marked and the tooltip's packet cache", async () => {
  const pg = await page("#c=1");
  await drawn(pg);
  const rx = await pg.evaluate(() => window.tcpscopeMarkAt("seg rexmit"));
  await pg.mouse.move(rx[0], rx[1]);
  await pg.waitForSelector("#tip table.pkt");
  assert.ok((await st(pg)).packetCache > 0, "the hovered packet's row is cached");
  // Jump to an event: its packet is marked.
  await pg.waitForSelector("#events li:not(.spacer)");
  await pg.click("#events li:not(.spacer) >> nth=0");
  await pg.waitForFunction(() => window.tcpscopeState().focusFrame !== null);
  await pg.check("#show-boring");
  await pg.waitForSelector('#conns tbody tr[data-id="2"]');
  await pg.click('#conns tbody tr[data-id="2"]');
  await pg.waitForFunction(() => window.tcpscopeState().ids[0] === 2);
  const s = await st(pg);
  assert.equal(s.focusFrame, null, "the other connection's packet is not marked");
  assert.equal(s.packetCache, 0, "the rows of the other connection's packets are dropped");
});

test("the rexmit and zwin columns show and sort by both directions", async () => {
  const conns = JSON.parse(execFileSync(bin, ["stats", "--json", LOSS, DOWNLOAD])).connections;
  const pg = await page("");
  await pg.check("#show-boring");
  await pg.waitForSelector('#conns tbody tr[data-id="2"]');
  for (const [key, stat] of [["both.rexmit_packets", "rexmit_packets"], ["both.zero_window_adverts", "zero_window_adverts"]]) {
    await pg.click(`#conns thead th[data-key="${key}"]`);
    await pg.waitForFunction((k) => document.querySelector("#sort").value === k, key);
    await pg.waitForFunction(() => document.getElementById("list").ariaBusy !== "true");
    await nextFrame(pg);
    const ids = await pg.locator("#conns tbody tr[data-id]").evaluateAll((rows) => rows.map((r) => Number(r.dataset.id)));
    const sum = (c) => c.a2b[stat] + c.b2a[stat];
    const want = [...conns].sort((a, b) => sum(b) - sum(a) || a.id - b.id).map((c) => c.id);
    assert.deepEqual(ids, want, key);
    // The cell shows the sum it sorts by.
    const col = await pg.locator(`#conns thead th`).evaluateAll((ths, k) => ths.findIndex((t) => t.dataset.key === k), key);
    for (const c of conns) {
      const cell = await pg.textContent(`#conns tbody tr[data-id="${c.id}"] td:nth-child(${col + 1})`);
      assert.equal(cell, String(sum(c)), `${key} of ${c.id}`);
    }
  }
});
