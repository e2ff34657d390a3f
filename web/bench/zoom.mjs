// Viewer benchmark (make bench-view): zoom latency of the server and frame time of the page on
// one five-million-packet connection. Prints a summary and writes bench/results/view-zoom.json
// with the machine, versions, input hash and raw timings.
//
// TCPSCOPE_BIN: the release binary; BIGTRACE: the trace (default bench/out/view-5m.pcap, made
// by `cargo run --release -p tcpscope-view --example bigtrace`); CHROMIUM: the browser;
// OLD_PAGE: optionally, another build of the page (an index.html, e.g. the previous version's,
// which reads the JSON answers) to measure its frames the same way, side by side (the zoom
// sequence SEQ_ROUNDS times each, default 2, alternately); PAGE: a built page to measure in
// place of the one the binary embeds; FRAME_CPU=0: skip the frames-in-CPU-time part;
// POLL=ms: the zoom sequence waits for each answer by looking every POLL ms rather than in
// every animation frame (Playwright's default, which makes the page run a frame each vsync
// while it waits: frames of the benchmark's, on the cores the page's frames need).

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startView } from "./serve.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.TCPSCOPE_BIN ?? path.join(root, "target/release/tcpscope");
const trace = process.env.BIGTRACE ?? path.join(root, "bench/out/view-5m.pcap");
const W = 1200; // plot width in pixels, as on a laptop screen

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, median: +q(0.5).toFixed(2), p95: +q(0.95).toFixed(2), max: +s[s.length - 1].toFixed(2) };
};

async function sha256(file) {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(file)) h.update(chunk);
  return h.digest("hex");
}

const loadAtStart = os.loadavg().map((l) => +l.toFixed(2));
// The one-minute load average every two seconds: on a shared machine, what the others ran.
const loadSeen = [];
const loadTimer = setInterval(() => loadSeen.push(+os.loadavg()[0].toFixed(2)), 2000).unref();
const t0 = performance.now();
const { server, url } = await startView(bin, [trace]);
const loadS = (performance.now() - t0) / 1000;

// CPU time of a process (all its threads, ms, from the scheduler's /proc/PID/task/*/schedstat;
// Linux): on a shared machine the wall clock of a step is mostly waiting for a core.
function cpuMs(pid) {
  try {
    const dir = `/proc/${pid}/task`;
    return readdirSync(dir).reduce((a, t) => a + Number(readFileSync(`${dir}/${t}/schedstat`, "utf8").split(" ")[0]), 0) / 1e6;
  } catch {
    return NaN;
  }
}
const serverCpuMs = () => cpuMs(server.pid);

async function get(p) {
  const s = performance.now();
  const r = await fetch(url + p);
  const body = await r.text();
  if (!r.ok) throw new Error(`${p}: ${body}`);
  return { ms: performance.now() - s, bytes: body.length, json: JSON.parse(body) };
}

// A packed answer (fmt=bin), as the page asks for it.
async function getBin(p) {
  const s = performance.now();
  const r = await fetch(url + p + "&fmt=bin");
  const body = await r.arrayBuffer();
  if (!r.ok) throw new Error(`${p}: ${new TextDecoder().decode(body)}`);
  return { ms: performance.now() - s, bytes: body.byteLength };
}

const conns = (await get("api/conns")).json.conns;
const conn = conns.reduce((a, b) => (a.a2b.packets + a.b2a.packets >= b.a2b.packets + b.b2a.packets ? a : b));
const packets = conn.a2b.packets + conn.b2a.packets;

// First open: the second pass that builds the connection's series.
const first = await get(`api/tsg?conn=${conn.id}&dir=a2b&w=${W}`);
const last = first.json.last;

// Zoom in by halves around the middle (20 steps: from the whole 5M packets down to a few), then
// pan at the deepest level: each step is one tsg and one panels request, in parallel as the page
// sends them.
const steps = [];
const views = [];
for (let k = 0; k <= 20; k++) {
  const span = last / 2 ** k;
  views.push([last / 2 - span / 2, last / 2 + span / 2]);
}
for (let k = 1; k <= 10; k++) {
  const [a, b] = views[20];
  views.push([a + (b - a) * k * 0.5, b + (b - a) * k * 0.5]);
}
for (let k = 12; k >= 0; k -= 3) views.push(views[k]); // back out
for (const [a, b] of views) {
  const s = performance.now();
  const cpu0 = serverCpuMs();
  const q = `conn=${conn.id}&dir=a2b&t0=${a}&t1=${b}&w=${W}`;
  const [tsg, pan] = await Promise.all([getBin(`api/tsg?${q}`), getBin(`api/panels?${q}`)]);
  const step = { span_s: b - a, ms: performance.now() - s, server_cpu_ms: serverCpuMs() - cpu0, tsg_ms: tsg.ms, panels_ms: pan.ms, bytes: tsg.bytes + pan.bytes };
  // The JSON answers of the same view, for their size (not timed).
  const [tj, pj] = await Promise.all([get(`api/tsg?${q}`), get(`api/panels?${q}`)]);
  steps.push({ ...step, json_bytes: tj.bytes + pj.bytes, marks: tj.json.marks.length });
}

// The page: wheel zooms in and out, each answered before the next, then a pan by dragging; the
// page's own timings (frames, frames until rendered, answers). With OLD_PAGE the same sequence
// runs on that page too, alternately with ours (SEQ_ROUNDS rounds each, which goes first
// alternating): on a shared machine the load moves between runs, so only pages measured in the
// same minutes compare.
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox", "--headless=new"] });
const context = await browser.newContext({ viewport: { width: 1700, height: 1000 } });
// The connection list as wide as the previous page's (440 px), so that both pages draw plots of
// the same width: the page's list is resizable, and its default is wider.
await context.addInitScript(() => localStorage.setItem("tcpscope.side-width", "440"));
const errors = [];
const oldHtml = process.env.OLD_PAGE && existsSync(process.env.OLD_PAGE) ? readFileSync(process.env.OLD_PAGE, "utf8") : null;
// PAGE: a built page to measure in place of the one the binary embeds (no rebuild needed).
const newHtml = process.env.PAGE ? readFileSync(process.env.PAGE, "utf8") : null;
const poll = process.env.POLL ? Number(process.env.POLL) : "raf";
async function zoomSequence(html, shot) {
  const pg = await context.newPage();
  pg.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  pg.on("pageerror", (e) => errors.push(String(e)));
  if (html) await pg.route(url, (r) => r.fulfill({ contentType: "text/html", body: html }));
  await pg.goto(`${url}#c=${conn.id}`);
  await pg.waitForFunction(() => window.tcpscopePerf.fetches.length > 0, null, { timeout: 120000 });
  const box = await pg.locator(".plot .overlay").boundingBox();
  await pg.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  for (let k = 0; k < 30; k++) {
    const n = await pg.evaluate(() => window.tcpscopePerf.fetches.length);
    await pg.mouse.wheel(0, k < 20 ? -300 : 300);
    await pg.waitForFunction((n) => window.tcpscopePerf.fetches.length > n, n, { timeout: 30000, polling: poll });
  }
  // Pan by dragging (each move draws the retained data before the answer comes).
  await pg.keyboard.down("Shift");
  await pg.mouse.down();
  for (let k = 0; k < 40; k++) await pg.mouse.move(box.x + box.width / 2 - k * 10, box.y + box.height / 2, { steps: 1 });
  await pg.mouse.up();
  await pg.keyboard.up("Shift");
  await pg.waitForTimeout(500);
  const perf = await pg.evaluate(() => window.tcpscopePerf);
  const px = await pg.evaluate(() => document.querySelector(".plot canvas").clientWidth);
  if (shot) await pg.screenshot({ path: shot });
  await pg.close();
  return { perf, px, load_1min: +os.loadavg()[0].toFixed(2) };
}
const seqRounds = Number(process.env.SEQ_ROUNDS ?? (oldHtml ? 2 : 1));
const seqNew = [], seqOld = [];
for (let r = 0; r < seqRounds; r++)
  for (const k of r % 2 ? [1, 0] : [0, 1]) {
    if (k === 0) seqNew.push(await zoomSequence(newHtml, r === 0 ? path.join(root, "bench/out/view-5m.png") : null));
    else if (oldHtml) seqOld.push(await zoomSequence(oldHtml, null));
  }
const perf = seqNew[0].perf;
const plotPx = seqNew[0].px;
// Per round: frames (callback and until rendered), long frames, answers until on screen.
const seqSummary = (runs) =>
  runs.map(({ perf: p, load_1min }) => ({
    load_1min,
    frame_ms: stats(p.frames),
    painted_ms: stats(p.painted),
    shown_ms: p.shown?.length ? stats(p.shown) : null,
    long_frames_ms: p.long.map((x) => +x.toFixed(1)),
    first_frames_painted_ms: p.painted.slice(0, 5).map((x) => +x.toFixed(1)),
    // A new plot's drawing before its answers, outside frames (pages since view5), until rendered.
    warm_ms: p.warm ? p.warm.map((x) => +x.toFixed(1)) : null,
  }));

// Frames in CPU terms: for a few views, the page redraws the view 20 times in a row (each
// frame read back, so rasterized then) while the CPU time of every chromium process is read
// (renderer, GPU, browser: where the canvas is rasterized depends on the build), as well as
// the wall clock per frame. With OLD_PAGE, the same for that page, served in place of ours, in
// alternate rounds (five each): on a shared machine the other load changes CPU time too (the
// two cores share caches), so each page's figure is its best round.
const cdp = await browser.newBrowserCDPSession();
const chromiumCpuMs = async () => {
  const { processInfo } = await cdp.send("SystemInfo.getProcessInfo");
  return processInfo.reduce((a, p) => a + cpuMs(p.id), 0);
};
const FRAME_VIEWS = [1, 1 / 4, 1 / 16, 1 / 512, 1 / 4096].map((f) => [last / 2 - (last * f) / 2, last / 2 + (last * f) / 2]);
async function openAt(html, a, b) {
  const pg = await context.newPage();
  if (html) await pg.route(url, (r) => r.fulfill({ contentType: "text/html", body: html }));
  await pg.goto(`${url}#c=${conn.id}&t=${a},${b}`);
  await pg.waitForFunction(() => window.tcpscopePerf.fetches.length > 0, null, { timeout: 120000 });
  await pg.evaluate(() => window.tcpscopeRedraw(3)); // warm up
  return pg;
}
async function redraw(pg) {
  const c0 = await chromiumCpuMs();
  const wall = await pg.evaluate(() => window.tcpscopeRedraw(20));
  return { cpu: ((await chromiumCpuMs()) - c0) / 20, wall, px: await pg.evaluate(() => document.querySelector(".plot canvas").clientWidth) };
}
const frameCpuNew = [], frameCpuOld = [];
for (const [a, b] of process.env.FRAME_CPU === "0" ? [] : FRAME_VIEWS) {
  const pages = [await openAt(newHtml, a, b), oldHtml ? await openAt(oldHtml, a, b) : null];
  const runs = [[], []];
  // Five rounds, which page goes first alternating.
  for (let r = 0; r < 5; r++) for (const k of r % 2 ? [1, 0] : [0, 1]) if (pages[k]) runs[k].push(await redraw(pages[k]));
  for (const k of [0, 1]) {
    if (!pages[k]) continue;
    const cpu = runs[k].map((x) => +x.cpu.toFixed(2));
    (k ? frameCpuOld : frameCpuNew).push({ span_s: b - a, cpu_ms_per_frame: Math.min(...cpu), cpu_ms_per_frame_rounds: cpu, canvas_px: runs[k][0].px, wall_ms: stats(runs[k].flatMap((x) => x.wall)) });
    await pages[k].close();
  }
}
const chromiumVersion = await browser.version();
await browser.close();
server.kill();

const result = {
  date: new Date().toISOString(),
  machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, mem_gb: Math.round(os.totalmem() / 2 ** 30), os: `${os.type()} ${os.release()}` },
  versions: { tcpscope: execFileSync(bin, ["--version"]).toString().trim(), node: process.version, chromium: chromiumVersion },
  input: { file: path.relative(root, trace), sha256: await sha256(trace), packets, connection: conn.id },
  plot_width_px: W,
  page_canvas_px: plotPx,
  load_s: +loadS.toFixed(2),
  first_open_ms: +first.ms.toFixed(1),
  server_zoom_ms: stats(steps.map((s) => s.ms)),
  server_zoom_cpu_ms: stats(steps.map((s) => s.server_cpu_ms)),
  page_fetch_ms: stats(perf.fetches.slice(1)),
  page_frame_ms: stats(perf.frames),
  page_frame_painted_ms: stats(perf.painted),
  page_answer_shown_ms: perf.shown?.length ? stats(perf.shown) : null,
  page_long_frames_ms: perf.long.length ? { ...stats(perf.long), all: perf.long.map((x) => +x.toFixed(1)) } : { n: 0 },
  max_answer_bytes: Math.max(...steps.map((s) => s.bytes)),
  max_answer_bytes_json: Math.max(...steps.map((s) => s.json_bytes)),
  zoom_wait_polling: poll,
  zoom_rounds: seqSummary(seqNew),
  zoom_rounds_old_page: oldHtml ? seqSummary(seqOld) : null,
  frame_cpu: frameCpuNew,
  frame_cpu_old_page: oldHtml ? frameCpuOld : null,
  console_errors: errors,
  load_avg_start: loadAtStart,
  load_avg: os.loadavg().map((l) => +l.toFixed(2)),
  load_avg_1min_seen: { min: Math.min(...loadSeen), max: Math.max(...loadSeen) },
  page_frames_ms: perf.frames.map((x) => +x.toFixed(2)),
  page_frames_painted_ms: perf.painted.map((x) => +x.toFixed(2)),
  page_fetches_ms: perf.fetches.map((x) => +x.toFixed(2)),
  steps,
};
mkdirSync(path.join(root, "bench/results"), { recursive: true });
writeFileSync(path.join(root, "bench/results/view-zoom.json"), JSON.stringify(result, null, 1) + "\n");
clearInterval(loadTimer);
const { steps: _, page_frames_ms: _f, page_frames_painted_ms: _p, page_fetches_ms: _g, ...summary } = result;
console.log(JSON.stringify(summary, null, 1));
if (errors.length) process.exitCode = 1;
