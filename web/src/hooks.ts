// The page's hooks for the browser tests (web/tests) and the benchmark (web/bench), as
// `window.tcpscope*`: its timings, where a mark is drawn, its reading of a packed figure, who
// draws the data layers, each plot's drawn ranges, and a full redraw timed. Kept apart so that
// the panels carry no test code; they read the plots as plot.ts keeps them.

import * as api from "./api";
import type { Dir } from "./api";
import { BOTTOM, LEFT, OP, RIGHT, TOP, hit, markPoint } from "./draw";
import { painter, painterDrew } from "./layers";
import { perf } from "./perf";
import { packetCache, panelMax, plots, ranges, timeline } from "./plot";
import { state } from "./state";

type Hooks = {
  tcpscopePerf: typeof perf;
  tcpscopeMarkAt: (prefix: string, plot?: number) => [number, number, number | null] | null;
  tcpscopeMarksOf: (conn: number, dir: Dir, v: api.Viewport) => Promise<unknown>;
  tcpscopeFigure: (plot?: number) => unknown;
  tcpscopeDrawnBy: () => "worker" | "page";
  tcpscopeFrames: () => unknown[];
  tcpscopeRedraw: (n: number) => Promise<number[]>;
  tcpscopeTimeline: (lane?: string) => unknown;
  tcpscopePanels: (plot?: number) => unknown;
  tcpscopeMarkIndexAt: (i: number, plot?: number) => [number, number] | null;
  tcpscopeHit: (cx: number, cy: number, plot?: number) => number | null;
  tcpscopeState: () => unknown;
};

/** Sets the hooks on `window`. */
export function installHooks() {
  const w = window as unknown as Hooks;
  w.tcpscopePerf = perf;

  // For the tests: a plot's panels as last drawn: the top of each panel's scale, and each line's
  // label, colour, whether it may leave the top, and its highest value in the view.
  w.tcpscopePanels = (plot = 0) => {
    const p = plots[plot];
    if (!p) return null;
    const { x0, x1 } = ranges();
    return p.lines.map((ls, k) => ({
      y1: p.series[k]?.drawn?.f.y1 ?? null,
      lines: ls.map((l) => {
        let max = 0;
        for (let i = 0; i < l.s.t.length; i++) if (l.s.ot + l.s.t[i] >= x0 - p.toff && l.s.ot + l.s.t[i] <= x1 - p.toff) max = Math.max(max, l.s.hi[i]);
        return { label: l.label, color: l.color, overTop: l.overTop ?? null, max };
      }),
    }));
  };

  // For the tests: the state the panels share (direction, connections, the packet marked) and
  // the tooltip's cache of packet rows.
  w.tcpscopeState = () => ({ dir: state.dir, dirAuto: state.dirAuto, ids: state.ids, focusFrame: state.focusFrame, packetCache: packetCache.size, titles: plots.map((p) => p.el.querySelector("h2")?.textContent ?? "") });

  // For the tests: a recording's timeline as drawn (each lane's points, whether its layer shows
  // the last answer, its frame) and, given a lane, a sample of it the pointer would hover there,
  // in client pixels (null: no timeline).
  w.tcpscopeTimeline = (lane?: string) => timeline?.probe(lane) ?? null;

  // For the browser tests and the benchmark: where a mark of a class (prefix) is drawn that the
  // pointer would hover there, in client pixels, and its frame.
  w.tcpscopeMarkAt = (prefix: string, plot = 0): [number, number, number | null] | null => {
    const p = plots[plot];
    if (!p?.frame || !p.fig) return null;
    const f = p.frame;
    const r = p.overlay.getBoundingClientRect();
    const fig = p.fig;
    for (let i = 0; i < fig.n; i++) {
      if (!fig.classes[fig.cls[i]].startsWith(prefix)) continue;
      // Its point, else (a ladder's arrows cross others at their middles) points along its
      // first line.
      const [mx, my] = markPoint(f, fig, i);
      const pts: [number, number][] = [[mx, my]];
      const j = fig.mprim[i], k = fig.pxy[j];
      if (fig.op[j] === OP.LINE) {
        const [ex, ey] = [mx - (fig.xy[k + 2] - fig.xy[k]) * ((f.w - LEFT - RIGHT) / (f.x1 - f.x0)) / 2, my + (fig.xy[k + 3] - fig.xy[k + 1]) * ((f.h - TOP - BOTTOM) / (f.y1 - f.y0)) / 2];
        for (const q of [0.25, 0.75, 0.15, 0.85]) pts.push([ex + (mx - ex) * 2 * q, ey + (my - ey) * 2 * q]);
      }
      for (const [px, py] of pts) {
        // Whole client pixels, as a pointer has them; one the pointer would hover there (not a
        // segment drawn over it).
        const [cx, cy] = [Math.round(r.left + px), Math.round(r.top + py)];
        const [x, y] = [cx - r.left, cy - r.top];
        if (x > LEFT && x < f.w - RIGHT && y > TOP && y < f.h - BOTTOM && hit(f, fig, x, y) === i) return [cx, cy, Number.isNaN(fig.frame[i]) ? null : fig.frame[i]];
      }
    }
    return null;
  };

  // For the tests: where mark `i` (hit's numbering) is drawn that the pointer would hover it
  // there, in client pixels (null: nowhere).
  w.tcpscopeMarkIndexAt = (i: number, plot = 0): [number, number] | null => {
    const p = plots[plot];
    if (!p?.frame || !p.fig || i >= p.fig.n) return null;
    const f = p.frame, r = p.overlay.getBoundingClientRect();
    const [mx, my] = markPoint(f, p.fig, i);
    const [cx, cy] = [Math.round(r.left + mx), Math.round(r.top + my)];
    for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1]]) {
      const [x, y] = [cx + dx - r.left, cy + dy - r.top];
      if (x > LEFT && x < f.w - RIGHT && y > TOP && y < f.h - BOTTOM && hit(f, p.fig, x, y) === i) return [cx + dx, cy + dy];
    }
    return null;
  };

  // For the tests: the mark the pointer at client pixel (cx, cy) hovers (-1: none; null: no plot).
  w.tcpscopeHit = (cx: number, cy: number, plot = 0): number | null => {
    const p = plots[plot];
    if (!p?.frame || !p.fig) return null;
    const r = p.overlay.getBoundingClientRect();
    return hit(p.frame, p.fig, cx - r.left, cy - r.top) ?? null;
  };

  // For the tests: the page's reading of a packed figure, back in the JSON answer's shape
  // (docs/viewer.md), to compare with the JSON answer of the same view.
  w.tcpscopeMarksOf = async (conn: number, dir: Dir, v: api.Viewport) => asJson(await api.tsg(conn, dir, v));

  // For the tests: the figure a plot shows (time-sequence or ladder), in the JSON answer's shape.
  w.tcpscopeFigure = (plot = 0) => {
    const f = plots[plot]?.fig;
    return f ? asJson(f) : null;
  };

  /** A packed figure as the JSON answer has it. */
  function asJson(f: api.Figure) {
    const OPS = "latdbopr";
    const WAYS = "udh", ANCHORS = "ablrc";
    const marks = [];
    for (let i = 0; i < f.n; i++) {
      const p = [];
      for (let j = f.mprim[i]; j < f.mprim[i + 1]; j++) {
        const k = f.pxy[j], n = f.pxy[j + 1] - k, o = f.op[j];
        const nums = Array.from(f.xy.subarray(k, k + (o === OP.TEXT ? 2 : n)), (v, q) => v + (q % 2 ? f.oy : f.ox));
        const word = o === OP.ARROW || o === OP.TICK ? [WAYS[f.extra[j]]] : o === OP.TEXT ? [ANCHORS[f.extra[j]], f.texts[f.xy[k + 2]]] : [];
        p.push([o === OP.TEXT ? "x" : OPS[o], f.colors[f.color[j]], ...nums, ...word]);
      }
      marks.push({ c: f.classes[f.cls[i]], f: Number.isNaN(f.frame[i]) ? null : f.frame[i], n: f.count[i], p });
    }
    return { x: f.x, y: f.y, title: f.title, remarks: f.remarks, marks };
  }

  // For the tests: who draws the data layers ("worker": drawworker.ts; "page": this thread).
  w.tcpscopeDrawnBy = () => (painter ? "worker" : "page");

  // For the tests: each plot's drawn ranges and pixel box.
  w.tcpscopeFrames = () => plots.map((p) => p.frame);

  // For the benchmark: draws the current view `n` times in a row, every layer (data, axes,
  // overlay) as if all were new, each frame read back from its canvases so that it is rasterized
  // then (the browser would otherwise defer and merge the work); returns each frame's ms. With
  // the drawing worker, a frame ends once the worker's drawings are swapped in (the data layers
  // are rasterized there).
  w.tcpscopeRedraw = async (n: number): Promise<number[]> => {
    const out = [];
    for (let k = 0; k < n; k++) {
      const start = performance.now();
      const { x0, x1, y } = ranges();
      const pmax = panelMax(x0, x1);
      plots.forEach((p, i) => p.draw(x0, x1, y[i][0], y[i][1], pmax, () => true, true));
      while (plots.some((p) => p.layers().some((l) => l.awaited()))) {
        await painterDrew();
        plots.forEach((p) => p.layers().forEach((l) => l.place()));
      }
      // (The worker's canvases are rasterized there, before it reports them drawn; they cannot be read here.)
      for (const p of plots) for (const c of p.el.querySelectorAll<HTMLCanvasElement>(painter ? "canvas:not(.data)" : "canvas")) c.getContext("2d")?.getImageData(0, 0, 1, 1);
      out.push(performance.now() - start);
    }
    return out;
  };
}
