// Browser test of a monitor recording's timeline (`tcpscope view run.tsm [capture]`): the real
// `tcpscope` records a paced loopback transfer made here (with application events sent over
// UDP, and, as root, a capture of it), serves it, and chromium (playwright-core) shows it.
// Screenshots go to web/test-results/.
//
// TCPSCOPE_BIN: the binary (default ../target/release/tcpscope); CHROMIUM: the browser
// (default /usr/bin/chromium).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, existsSync, rmSync } from "node:fs";
import net from "node:net";
import dgram from "node:dgram";
import os from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { chromium } from "playwright-core";
import { startViewer } from "./util.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.TCPSCOPE_BIN ?? path.join(root, "target/release/tcpscope");
const out = path.join(root, "web/test-results");
mkdirSync(out, { recursive: true });

let dir, rec, server, url, browser, captured = false;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const exited = (p) => new Promise((r) => (p.exitCode !== null ? r(p.exitCode) : p.on("exit", (c) => r(c))));

/** A free port on loopback. */
function freePort(type = "tcp") {
  return new Promise((resolve) => {
    if (type === "udp") {
      const s = dgram.createSocket("udp4");
      s.bind(0, "127.0.0.1", () => {
        const p = s.address().port;
        s.close(() => resolve(p));
      });
      return;
    }
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

/**
 * A loopback transfer in bursts: per burst `xfer.start` and `xfer.end` events with its guid; the
 * writer pauses between bursts (sender-limited), and the reader stops reading for a while in
 * the middle (receiver-limited).
 */
async function transfer(port, events) {
  const ev = dgram.createSocket("udp4");
  const send = (line) => new Promise((r) => ev.send(line, events, "127.0.0.1", () => r()));
  const srv = net.createServer((s) => {
    setTimeout(() => {
      s.pause();
      setTimeout(() => s.resume(), 300);
    }, 700);
    s.on("data", () => {});
  });
  await new Promise((r) => srv.listen(port, "127.0.0.1", r));
  const c = net.connect(port, "127.0.0.1");
  await new Promise((r) => c.on("connect", r));
  // The connection's first sample comes at the monitor's next 10 ms dump: the first event after it.
  await sleep(50);
  const chunk = Buffer.alloc(1 << 20, 7);
  for (let k = 0; k < 8; k++) {
    await send(`event=xfer.start guid=${k} bytes=${8 << 20}`);
    for (let i = 0; i < 8; i++) if (!c.write(chunk)) await new Promise((r) => c.once("drain", r));
    // Until the burst is with the kernel.
    await new Promise((r) => c.write(Buffer.alloc(0), r));
    await send(`event=xfer.end guid=${k} status=0`);
    await sleep(120);
  }
  c.end();
  await new Promise((r) => c.on("close", r));
  srv.close();
  ev.close();
}

before(async () => {
  assert.ok(existsSync(bin), `${bin} missing: build it first (make build)`);
  dir = mkdtempSync(path.join(os.tmpdir(), "tcpscope-timeline-"));
  const [port, evPort] = [await freePort(), await freePort("udp")];
  rec = path.join(dir, "run.tsm");
  const mon = spawn(bin, ["monitor", "-f", `port ${port}`, "-i", "10ms", "--for", "3s", "-q", "--events", `udp:127.0.0.1:${evPort}`, "-w", rec], { stdio: "inherit" });
  // As root, a capture of the same transfer (it exits 77 without the privilege: no capture then).
  const ring = path.join(dir, "ring");
  // `--min-free 0`: the machine's free disk space must not decide what the ring keeps (under
  // 10 % free, the default keeps nothing but the file being written, deleted when it closes).
  const cap = spawn(bin, ["capture", "-i", "lo", "-f", `tcp port ${port}`, "-w", ring, "--min-free", "0"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  // Until both listen: the capture says so (or exits: no privilege); under load its start took
  // longer than a fixed 400 ms, and a capture that missed the transfer wrote no file.
  await new Promise((r) => {
    let said = "";
    cap.stderr.on("data", (d) => (said += d) && /capturing on/.test(said) && r());
    cap.on("exit", r);
  });
  await sleep(100);
  await transfer(port, evPort);
  await sleep(200);
  captured = cap.exitCode === null;
  cap.kill("SIGTERM");
  await exited(cap);
  assert.equal(await exited(mon), 0, "the monitor ran");
  [server, url] = await startViewer(bin, captured ? [rec, ring] : [rec]);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox", "--headless=new"] });
});

after(async () => {
  await browser?.close();
  server?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The timeline as drawn (hooks.ts), once every lane shows the answer of a view at least `gen`. */
async function drawn(pg, gen = 1, lane) {
  await pg.waitForFunction(([g]) => {
    const t = window.tcpscopeTimeline();
    return t && t.gen >= g && t.lanes.every((l) => l.drawn);
  }, [gen], { timeout: 10000 }).catch(async (e) => {
    throw new Error(`${e.message}: ${JSON.stringify(await pg.evaluate(() => window.tcpscopeTimeline()))} ${await pg.textContent("#status")}`);
  });
  return pg.evaluate((lane) => window.tcpscopeTimeline(lane), lane);
}

test("timeline of a recording: lanes, the capture under it, zoom, hover", async () => {
  const ctx = await browser.newContext({ viewport: { width: 1500, height: 1300 } });
  const pg = await ctx.newPage();
  const errors = [];
  pg.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  pg.on("pageerror", (e) => errors.push(String(e)));
  await pg.goto(url);

  // The list: both ends of the transfer, with their diagnosis; the first shown.
  await pg.waitForSelector("#conns tbody tr[data-mon]");
  const rows = await pg.$$eval("#conns tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.equal(rows.length, 2, JSON.stringify(rows));
  assert.ok(rows.every((r) => /mostly |sent no data/.test(r[r.length - 1])), JSON.stringify(rows));
  // The sender: the end whose diagnosis is a triage.
  const sender = rows.findIndex((r) => r[r.length - 1].startsWith("mostly "));
  assert.ok(sender >= 0, JSON.stringify(rows));
  await pg.click(`#conns tbody tr:nth-child(${sender + 1})`);
  const id = Number(rows[sender][0]);
  await pg.waitForFunction((id) => location.hash.includes(`m=${id}`), id);

  // Every lane drawn, with data: events and their lifelines, the triage, the tcp_info series, CPU.
  let t = await drawn(pg, 1);
  const points = Object.fromEntries(t.lanes.map((l) => [l.key, l.points]));
  for (const k of ["events", "limits", "cwnd", "rtt", "rate", "retrans", "cpu"]) assert.ok(points[k] > 0, `lane ${k}: ${JSON.stringify(points)}`);
  // 16 events and 8 lifelines of two points each.
  assert.equal(points.events, 16 + 8 * 2);
  // The lanes' pixels: the cwnd lane's canvas has ink (the worker draws on canvases the page
  // cannot read: copied onto one it can).
  const ink = await pg.evaluate(() => {
    const c = [...document.querySelectorAll(".lane.cwnd canvas.data")].find((c) => c.style.visibility !== "hidden");
    const t = document.createElement("canvas");
    [t.width, t.height] = [c.width, c.height];
    const g = t.getContext("2d");
    g.drawImage(c, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 600) n++;
    return n;
  });
  assert.ok(ink > 100, `${ink} inked pixels in the cwnd lane`);
  if (captured) {
    // The capture's time-sequence plot of the same connection, on the same time axis.
    await pg.waitForFunction(() => window.tcpscopeFrames().length === 1 && window.tcpscopeFrames()[0]);
    assert.equal(await pg.$$eval("#columns .note", (n) => n.length), 0, "the capture has the connection");
  }
  await pg.screenshot({ path: path.join(out, "timeline.png"), fullPage: true });
  const whole = t.frame;

  // Zoom: the wheel about the middle of the plot; the view narrows in time, and the lanes are
  // drawn from a new answer of the narrower view.
  const box = await pg.$eval(".lanes > canvas.overlay", (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.left, y: r.top, w: r.width, h: r.height };
  });
  await pg.mouse.move(box.x + box.w / 2, box.y + 40);
  for (let i = 0; i < 3; i++) await pg.mouse.wheel(0, -100);
  await pg.waitForFunction((g) => window.tcpscopeTimeline().gen > g, t.gen);
  t = await drawn(pg, t.gen + 1);
  assert.ok(t.frame.x1 - t.frame.x0 < (whole.x1 - whole.x0) * 0.8, `zoomed: ${JSON.stringify([whole, t.frame])}`);
  const hash = new URLSearchParams((await pg.evaluate(() => location.hash)).slice(1));
  assert.ok(hash.get("t"), "the view is in the URL");
  assert.equal(hash.get("s"), null, "the timeline zooms in time only");
  if (captured) {
    // The capture's plot follows the time axis: its time range is the timeline's, shifted by
    // where its first packet is on the timeline.
    const span = t.frame.x1 - t.frame.x0;
    await pg.waitForFunction((span) => {
      const f = window.tcpscopeFrames()[0];
      return f && Math.abs(f.x1 - f.x0 - span) < 1e-9;
    }, span, { timeout: 5000 }).catch(() => {});
    const f = (await pg.evaluate(() => window.tcpscopeFrames()))[0];
    assert.ok(Math.abs(f.x1 - f.x0 - span) < 1e-9, `same span: ${JSON.stringify([f, t.frame])}`);
    // Shifted by where the capture's first packet of the connection is on the timeline (its SYN:
    // just before the connection's first sample).
    const mon = await pg.evaluate(() => fetch("api/monitor").then((r) => r.json()));
    const off = mon.conns.find((c) => c.id === id).capture_offset_s;
    assert.ok(off <= 0 && off > -0.5, `capture offset ${off} s`);
    assert.ok(Math.abs(f.x0 - (t.frame.x0 - off)) < 1e-6, `shifted: ${JSON.stringify([f, t.frame, off])}`);
  }

  // Drag a time range on the timeline: zoomed to it (time only).
  const before = t.frame;
  await pg.mouse.move(box.x + 300, box.y + 60);
  await pg.mouse.down();
  await pg.mouse.move(box.x + 500, box.y + 62, { steps: 4 });
  await pg.mouse.up();
  t = await drawn(pg, t.gen + 1);
  assert.ok(t.frame.x1 - t.frame.x0 < (before.x1 - before.x0) * 0.5, `dragged: ${JSON.stringify([before, t.frame])}`);
  // Back out: the view before the drag.
  await pg.keyboard.press("Backspace");
  t = await drawn(pg, t.gen + 1);
  assert.ok(Math.abs(t.frame.x0 - before.x0) < 1e-9 && Math.abs(t.frame.x1 - before.x1) < 1e-9);

  // Hover a sample of the cwnd lane: its tooltip names it, its time and value.
  await pg.keyboard.press("Home");
  t = await drawn(pg, t.gen + 1, "cwnd");
  assert.ok(t.at, "a cwnd sample to hover");
  await pg.mouse.move(t.at[0], t.at[1]);
  await pg.waitForSelector("#tip:not([hidden])");
  const tip = await pg.textContent("#tip");
  assert.match(tip, /^(cwnd|ssthresh|in flight)t \d+\.\d{6} s.*B/, tip);
  // And an application event: its name and fields.
  t = await pg.evaluate(() => window.tcpscopeTimeline("events"));
  assert.ok(t.at, "an event to hover");
  await pg.mouse.move(t.at[0], t.at[1]);
  await pg.waitForFunction(() => /^xfer\.(start|end)/.test(document.getElementById("tip").textContent));
  assert.match(await pg.textContent("#tip"), /guid=\d/);
  await pg.screenshot({ path: path.join(out, "timeline-hover.png") });
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("a capture without the recorded connection: said under the timeline", async () => {
  const [other, otherUrl] = await startViewer(bin, [rec, path.join(root, "tests/data/loss-snd.pcap")]);
  try {
    const ctx = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
    const pg = await ctx.newPage();
    await pg.goto(otherUrl);
    await drawn(pg, 1);
    assert.match(await pg.textContent("#columns .note"), /is not in the capture/);
    assert.deepEqual(await pg.$$eval("#conns tbody tr", (trs) => trs.map((tr) => tr.cells[4].textContent)), ["not in it", "not in it"]);
    assert.equal(await pg.evaluate(() => window.tcpscopeFrames().length), 0, "no packet plot");
    await ctx.close();
  } finally {
    other.kill();
  }
});
