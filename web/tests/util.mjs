// What the browser tests share (not a test file itself: node's runner takes `*.test.mjs`).

import { spawn } from "node:child_process";

/** Starts `bin view --no-open ARGS` and resolves with the process and the URL it prints. */
export function startViewer(bin, args) {
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

/**
 * Pixels of the first plot's data layer as shown: of the 7 × 7 around client point (x, y), how
 * many are inked (darker than light grey); and whether its top-left corner is white.
 */
const inkNow = (pg, x, y) =>
  pg.evaluate(([x, y]) => {
    // The one shown: with the drawing worker, each layer has two, the other hidden.
    const c = [...document.querySelectorAll(".plot .tsg canvas.data")].find((c) => c.style.visibility !== "hidden");
    const r = c.getBoundingClientRect();
    // Copied onto a 2D canvas: the worker draws on canvases the page cannot read.
    const t = document.createElement("canvas");
    [t.width, t.height] = [c.width, c.height];
    const g = t.getContext("2d");
    g.drawImage(c, 0, 0);
    const k = c.width / r.width;
    const d = g.getImageData(Math.round((x - r.left) * k) - 3, Math.round((y - r.top) * k) - 3, 7, 7).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] + d[i + 1] + d[i + 2] < 600) n++;
    const w = g.getImageData(2, 2, 1, 1).data;
    return { inked: n, cornerWhite: w[0] === 255 && w[1] === 255 && w[2] === 255 && w[3] === 255 };
  }, [x, y]);

/**
 * [`inkNow`] once the drawing worker has painted there: read each frame until the point is
 * inked on white, for at most 5 s (the figure can be ready a frame or more before the worker's
 * picture is shown, longer on a loaded machine); the last reading otherwise.
 */
export async function inkAt(pg, x, y) {
  const until = Date.now() + 5000;
  for (;;) {
    const ink = await inkNow(pg, x, y);
    if ((ink.inked > 0 && ink.cornerWhite) || Date.now() > until) return ink;
    await nextFrame(pg);
  }
}

/** A page of `browser` that records console errors and uncaught exceptions in `pg.errors`
 * (the tests assert it stays empty). */
export async function newPage(browser) {
  const ctx = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
  const pg = await ctx.newPage();
  pg.errors = [];
  pg.on("console", (m) => m.type() === "error" && pg.errors.push(m.text()));
  pg.on("pageerror", (e) => pg.errors.push(String(e)));
  return pg;
}

/** Resolves after the page has rendered two more frames. */
export const nextFrame = (pg) => pg.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/** The answers the page has fetched so far. */
export const fetches = (pg) => pg.evaluate(() => window.tcpscopePerf.fetches.length);

/** The first plot's figure once the fetches number more than `n` and a frame has drawn it. */
export async function figureAfter(pg, n) {
  await pg.waitForFunction((n) => window.tcpscopePerf.fetches.length > n, n);
  await nextFrame(pg);
  return pg.evaluate(() => window.tcpscopeFigure());
}
