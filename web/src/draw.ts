// Canvas drawing of the time-sequence figure (the marks `tcpscope plot` draws in SVG, same
// sizes and colours: crates/core/src/plot/svg.rs) and of the panels below it. Our own code
// because the primitives (arrowheads, stair steps, ticks) are not what a chart library draws.

import type { Figure, Mark, Series } from "./api";

export const LEFT = 84;
export const RIGHT = 16;
export const TOP = 10;
export const BOTTOM = 34;
const ARROW_W = 3;
const ARROW_H = 5;
const TICK = 5;
const SYM = 3.5;

/** Data range shown and the pixel box it maps to. */
export interface Frame {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
  w: number; // css pixels of the canvas
  h: number;
}

export const sx = (f: Frame, x: number) => LEFT + ((x - f.x0) / (f.x1 - f.x0 || 1)) * (f.w - LEFT - RIGHT);
export const sy = (f: Frame, y: number) => f.h - BOTTOM - ((y - f.y0) / (f.y1 - f.y0 || 1)) * (f.h - TOP - BOTTOM);
export const ix = (f: Frame, px: number) => f.x0 + ((px - LEFT) / (f.w - LEFT - RIGHT)) * (f.x1 - f.x0);
export const iy = (f: Frame, py: number) => f.y0 + ((f.h - BOTTOM - py) / (f.h - TOP - BOTTOM)) * (f.y1 - f.y0);

/** About `n` round tick values (1, 2, 5 × 10^k) over [a, b], as the SVG axes. */
export function ticks(a: number, b: number, n: number): { v: number; label: string }[] {
  if (!(b > a)) return [];
  const raw = (b - a) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const dec = step >= 1 ? 0 : Math.min(9, -Math.floor(Math.log10(step)));
  const out = [];
  for (let v = Math.ceil(a / step) * step; v <= b + step * 1e-9; v += step) {
    out.push({ v, label: (Math.abs(v) < step * 1e-9 ? 0 : v).toFixed(dec) });
  }
  return out;
}

/** Sizes the canvas for the device pixel ratio and returns a context in css pixels. */
export function prepare(c: HTMLCanvasElement): CanvasRenderingContext2D {
  const dpr = window.devicePixelRatio || 1;
  const w = c.clientWidth, h = c.clientHeight;
  if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
  }
  const ctx = c.getContext("2d")!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  return ctx;
}

export function axes(ctx: CanvasRenderingContext2D, f: Frame, ylabel: string, xlabels = true, yfmt = (l: string) => l) {
  ctx.save();
  ctx.strokeStyle = "#888";
  ctx.fillStyle = "#333";
  ctx.font = "10px sans-serif";
  ctx.lineWidth = 1;
  ctx.strokeRect(LEFT + 0.5, TOP + 0.5, f.w - LEFT - RIGHT, f.h - TOP - BOTTOM);
  ctx.textAlign = "center";
  ctx.beginPath();
  for (const t of ticks(f.x0, f.x1, Math.max(2, Math.floor((f.w - LEFT - RIGHT) / 110)))) {
    const x = Math.round(sx(f, t.v)) + 0.5;
    ctx.moveTo(x, f.h - BOTTOM);
    ctx.lineTo(x, f.h - BOTTOM + 4);
    if (xlabels) ctx.fillText(t.label, x, f.h - BOTTOM + 14);
  }
  ctx.textAlign = "right";
  for (const t of ticks(f.y0, f.y1, Math.max(2, Math.floor((f.h - TOP - BOTTOM) / 40)))) {
    const y = Math.round(sy(f, t.v)) + 0.5;
    ctx.moveTo(LEFT - 4, y);
    ctx.lineTo(LEFT, y);
    ctx.fillText(yfmt(t.label), LEFT - 6, y + 3);
  }
  ctx.stroke();
  ctx.save();
  ctx.translate(12, (TOP + f.h - BOTTOM) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillText(ylabel, 0, 0);
  ctx.restore();
  if (xlabels) {
    ctx.textAlign = "center";
    ctx.fillText("time (s since the connection's first packet)", (LEFT + f.w - RIGHT) / 2, f.h - 6);
  }
  ctx.restore();
}

function clip(ctx: CanvasRenderingContext2D, f: Frame) {
  ctx.beginPath();
  ctx.rect(LEFT, TOP, f.w - LEFT - RIGHT, f.h - TOP - BOTTOM);
  ctx.clip();
}

/** Arrowhead size of a mark: shrinks on short segments (as the SVG) so stacks stay readable. */
function headOf(f: Frame, m: Mark): number {
  for (const p of m.p) {
    if (p[0] === "l" && p[2] === p[4] && p[3] !== p[5]) {
      const l = Math.abs(sy(f, p[3] as number) - sy(f, p[5] as number));
      return Math.min(ARROW_H, Math.max(2, l / 3));
    }
  }
  return ARROW_H;
}

/** Adds one primitive's path to `path` (text is drawn separately). */
function trace(path: Path2D, f: Frame, p: (number | string)[], head: number) {
  const op = p[0];
  if (op === "l") {
    path.moveTo(sx(f, p[2] as number), sy(f, p[3] as number));
    path.lineTo(sx(f, p[4] as number), sy(f, p[5] as number));
    return;
  }
  const px = sx(f, p[2] as number), py = sy(f, p[3] as number);
  if (op === "a") {
    const back = p[4] === "u" ? head : -head;
    const half = (ARROW_W * head) / ARROW_H;
    path.moveTo(px - half, py + back);
    path.lineTo(px, py);
    path.lineTo(px + half, py + back);
  } else if (op === "t") {
    if (p[4] === "h") {
      path.moveTo(px - TICK / 2, py);
      path.lineTo(px + TICK / 2, py);
    } else {
      path.moveTo(px, py);
      path.lineTo(px, py + (p[4] === "u" ? -TICK : TICK));
    }
  } else if (op === "d") {
    path.moveTo(px, py - SYM);
    path.lineTo(px + SYM, py);
    path.lineTo(px, py + SYM);
    path.lineTo(px - SYM, py);
    path.closePath();
  } else if (op === "b") {
    path.rect(px - SYM, py - SYM, 2 * SYM, 2 * SYM);
  } else if (op === "o") {
    path.moveTo(px + 1.5, py);
    path.arc(px, py, 1.5, 0, 2 * Math.PI);
  } else if (op === "p") {
    for (let i = 2; i + 1 < p.length; i += 2) {
      const [x, y] = [sx(f, p[i] as number), sy(f, p[i + 1] as number)];
      if (i === 2) path.moveTo(x, y);
      else path.lineTo(x, y);
    }
  } else if (op === "r") {
    const x2 = sx(f, p[4] as number), y2 = sy(f, p[5] as number);
    path.rect(Math.min(px, x2), Math.min(py, y2), Math.abs(x2 - px), Math.abs(y2 - py));
  }
}

/**
 * Draws the figure's marks in `f`. One path per colour, stroked once: a frame with thousands
 * of marks costs a few strokes, not thousands.
 */
export function drawFigure(ctx: CanvasRenderingContext2D, f: Frame, fig: Figure) {
  ctx.save();
  clip(ctx, f);
  const paths = new Map<string, Path2D>();
  const texts: (number | string)[][] = [];
  for (const m of fig.marks) {
    const head = headOf(f, m);
    for (const p of m.p) {
      if (p[0] === "x") {
        texts.push(p);
        continue;
      }
      let path = paths.get(p[1]);
      if (!path) paths.set(p[1], (path = new Path2D()));
      trace(path, f, p, head);
    }
  }
  ctx.lineWidth = 1;
  for (const [color, path] of paths) {
    ctx.strokeStyle = color;
    ctx.stroke(path);
  }
  ctx.font = "10px sans-serif";
  // Labels (R, O, P, 3, Z, ...) that would print over one another are drawn once per 8-pixel
  // cell: zoomed out, hundreds of R's in one spot read as a blot and cost a frame.
  const taken = new Set<number>();
  for (const p of texts) {
    const px = sx(f, p[2] as number), py = sy(f, p[3] as number);
    if (px < LEFT - 20 || px > f.w + 20 || py < -20 || py > f.h + 20) continue;
    const cell = Math.floor(px / 8) * 100003 + Math.floor(py / 8);
    if (taken.has(cell)) continue;
    taken.add(cell);
    const a = p[4];
    ctx.fillStyle = p[1] as string;
    ctx.textAlign = a === "l" ? "right" : a === "r" ? "left" : "center";
    const [tx, ty] =
      a === "a" ? [px, py - ARROW_H - 2] : a === "b" ? [px, py + ARROW_H + 11] : a === "l" ? [px - 4, py + 4] : a === "r" ? [px + 4, py + 4] : [px, py + 4];
    ctx.fillText(p[5] as string, tx, ty);
  }
  ctx.restore();
}

/** Distance in pixels from (mx, my) to a primitive. */
function dist(f: Frame, p: (number | string)[], mx: number, my: number): number {
  const x1 = sx(f, p[2] as number), y1 = sy(f, p[3] as number);
  if (p[0] !== "l") return Math.hypot(mx - x1, my - y1);
  const x2 = sx(f, p[4] as number), y2 = sy(f, p[5] as number);
  const dx = x2 - x1, dy = y2 - y1;
  const len2 = dx * dx + dy * dy;
  const t = len2 === 0 ? 0 : Math.max(0, Math.min(1, ((mx - x1) * dx + (my - y1) * dy) / len2));
  return Math.hypot(mx - (x1 + t * dx), my - (y1 + t * dy));
}

/**
 * The mark nearest to the pointer within `radius` pixels. When several are about as close,
 * segments win over notes, notes over SACK blocks, those over the ack and window lines: at
 * full zoom out they overlap, and the segment is what a user points at.
 */
export function hit(f: Frame, fig: Figure, mx: number, my: number, radius = 6): Mark | null {
  let best: Mark | null = null;
  let bestD = radius;
  for (const m of fig.marks) {
    if (m.f === null) continue;
    const bias = m.c.startsWith("seg") ? 0 : m.c.startsWith("note") ? 0.5 : m.c.includes("sack") ? 1 : 1.5;
    for (const p of m.p) {
      // Only the vertical part of a stair step is the packet; its tread is the time between.
      if ((m.c.startsWith("ack step") || m.c.startsWith("win step")) && p[0] === "l" && p[3] === p[5]) continue;
      const d = dist(f, p, mx, my) + bias;
      if (d < bestD) {
        bestD = d;
        best = m;
      }
    }
  }
  return best;
}

/** Outlines a mark on the overlay (hover). */
export function highlight(ctx: CanvasRenderingContext2D, f: Frame, m: Mark) {
  ctx.save();
  clip(ctx, f);
  const path = new Path2D();
  const head = headOf(f, m);
  for (const p of m.p) if (p[0] !== "x") trace(path, f, p, head);
  ctx.strokeStyle = "rgba(30, 120, 255, 0.55)";
  ctx.lineWidth = 5;
  ctx.stroke(path);
  ctx.restore();
}

export interface PanelLine {
  s: Series;
  color: string;
  label: string;
  dots?: boolean;
  /** A step function (the value holds until the next point): drawn over and up. */
  step?: boolean;
}

/** Human units for an axis label (k, M, G). */
export function si(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toPrecision(3) + "G";
  if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
  if (a >= 1e3) return (v / 1e3).toPrecision(3) + "k";
  return String(Math.round(v * 1000) / 1000);
}

/**
 * A panel under the time-sequence plot: series on the shared time axis, as lines (or dots for
 * samples); an aggregated series as a min-max band per column so that no spike vanishes.
 */
export function drawPanel(ctx: CanvasRenderingContext2D, x0: number, x1: number, w: number, h: number, title: string, lines: PanelLine[]) {
  let ymax = 0;
  for (const l of lines) for (let i = 0; i < l.s.t.length; i++) if (l.s.t[i] >= x0 && l.s.t[i] <= x1) ymax = Math.max(ymax, l.s.hi[i]);
  // Headroom above the highest value for the title row.
  const f: Frame = { x0, x1, y0: 0, y1: ymax > 0 ? ymax * 1.3 : 1, w, h };
  axes(ctx, f, "", false, (l) => si(Number(l)));
  ctx.save();
  clip(ctx, f);
  for (const l of lines) {
    ctx.strokeStyle = l.color;
    ctx.fillStyle = l.color;
    ctx.lineWidth = 1;
    const path = new Path2D();
    const { t, lo, hi } = l.s;
    for (let i = 0; i < t.length; i++) {
      const x = sx(f, t[i]);
      if (l.dots) {
        path.rect(x - 1, sy(f, hi[i]) - 1, 2, 2);
        if (lo[i] !== hi[i]) path.rect(x - 1, sy(f, lo[i]) - 1, 2, 2);
        continue;
      }
      if (i === 0) path.moveTo(x, sy(f, hi[i]));
      else {
        if (l.step) path.lineTo(x, sy(f, hi[i - 1]));
        path.lineTo(x, sy(f, hi[i]));
      }
      if (l.s.agg && lo[i] !== hi[i]) {
        path.lineTo(x, sy(f, lo[i]));
        path.moveTo(x, sy(f, hi[i]));
      }
    }
    if (l.dots) ctx.fill(path);
    else ctx.stroke(path);
  }
  ctx.restore();
  ctx.save();
  ctx.font = "11px sans-serif";
  let x = LEFT + 6;
  ctx.fillStyle = "#333";
  ctx.fillText(title, x, TOP + 12);
  x += ctx.measureText(title).width + 10;
  for (const l of lines) {
    ctx.fillStyle = l.color;
    ctx.fillText(l.label, x, TOP + 12);
    x += ctx.measureText(l.label).width + 10;
  }
  ctx.restore();
}
