// Viewer benchmark, the connection list (make bench-list): `tcpscope view` and `tcpscope report`
// on a trace of many connections (bench/out/many.pcap, 200,000). Prints a summary and writes
// bench/results/view-list.json.
//
// Measured: the server's start (its statistics pass), its answers for the list (a first page,
// a new sort, a filter, a page at the end), in chromium the time from opening the page to its
// first rows and from each action to its rows drawn, the page's JS heap, the server's peak
// memory; then the report: its time, peak memory and size.
//
// TCPSCOPE_BIN: the release binary; MANY: the trace; CHROMIUM: the browser.

import { spawnSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync, mkdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startView } from "./serve.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.TCPSCOPE_BIN ?? path.join(root, "target/release/tcpscope");
const trace = process.env.MANY ?? path.join(root, "bench/out/many.pcap");
const peakKb = (pid) => Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmHWM:\s+(\d+)/)[1]);
const ms = (t) => +(performance.now() - t).toFixed(1);

let t = performance.now();
const { server, url } = await startView(bin, [trace]);
const result = { date: new Date().toISOString(), machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length }, input: path.relative(root, trace), server_start_ms: ms(t) };

// The server's answers, as the page asks for them (200 rows a page).
const answers = {};
for (let [name, q] of [
  ["first page (severity)", "sort=severity&desc=1&n=200"],
  ["next page", "sort=severity&desc=1&n=200&from=200"],
  ["new sort (b2a.rtt_avg_ms)", "sort=b2a.rtt_avg_ms&desc=1&n=200"],
  ["text sort (endpoints)", "sort=endpoints&desc=0&n=200"],
  ["first filter (10.1.)", "sort=endpoints&desc=0&n=200&q=10.1."],
  ["another filter (:443)", "sort=endpoints&desc=0&n=200&q=:443"],
  ["last page", "sort=endpoints&desc=0&n=200&q=:443&from=LAST"],
]) {
  if (q.includes("LAST")) {
    const { matched } = await (await fetch(`${url}api/conns?${q.replace("LAST", "0")}&n=0`)).json();
    q = q.replace("LAST", String(Math.max(0, matched - 200)));
  }
  t = performance.now();
  const body = await (await fetch(`${url}api/conns?${q}`)).arrayBuffer();
  answers[name] = { ms: ms(t), bytes: body.byteLength };
}
result.server_answers = answers;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox", "--headless=new"] });
const pg = await browser.newPage({ viewport: { width: 1700, height: 1000 } });
const errors = [];
pg.on("console", (m) => m.type() === "error" && errors.push(m.text()));
pg.on("pageerror", (e) => errors.push(String(e)));
const settled = () => pg.waitForFunction(() => document.getElementById("list").ariaBusy !== "true" && document.querySelectorAll("#conns tbody tr[data-id]").length > 0, null, { timeout: 120000 });
const page = {};
t = performance.now();
await pg.goto(url);
await settled();
page.first_rows_ms = ms(t);
for (const [name, act] of [
  ["sort by b2a.rexmit_packets", () => pg.selectOption("#sort", "b2a.rexmit_packets")],
  ["filter 10.1.", () => pg.fill("#filter", "10.1.")],
  ["filter cleared", () => pg.fill("#filter", "")],
  ["scroll to the end", () => pg.evaluate(() => { const l = document.getElementById("list"); l.scrollTop = l.scrollHeight; })],
]) {
  t = performance.now();
  await act();
  await pg.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await settled();
  page[`${name}_ms`] = ms(t);
}
page.count = await pg.textContent("#count");
page.js_heap_mb = +((await pg.evaluate(() => performance.memory?.usedJSHeapSize ?? 0)) / 2 ** 20).toFixed(1);
result.page = page;
result.server_peak_rss_mb = +(peakKb(server.pid) / 1024).toFixed(0);
await browser.close();
server.kill();

// The report: its whole run (statistics pass, the plotted connections' pass, writing).
const out = path.join(os.tmpdir(), `tcpscope-bench-report-${process.pid}.html`);
t = performance.now();
const run = spawnSync("/usr/bin/time", ["-f", "%M", bin, "report", trace, "-o", out], { encoding: "utf8" });
if (run.status !== 0) throw new Error(`report: ${run.stderr}`);
result.report = { ms: ms(t), bytes: statSync(out).size, peak_rss_mb: Math.round(Number(run.stderr.trim().split("\n").at(-1)) / 1024), said: run.stdout.trim() };
rmSync(out, { force: true });
result.errors = errors;
mkdirSync(path.join(root, "bench/results"), { recursive: true });
writeFileSync(path.join(root, "bench/results/view-list.json"), JSON.stringify(result, null, 1) + "\n");
console.log(JSON.stringify(result, null, 1));
if (errors.length) process.exitCode = 1;
