// Canvas drawing of the time-sequence figure (the marks `tcpscope plot` draws in SVG, same
// sizes and colours: crates/core/src/plot/svg.rs) and of the panels below it. Our own code
// because the primitives (arrowheads, stair steps, ticks) are not what a chart library draws.

import type { Figure, Panels, Series } from "./api";

/** Primitive kinds of a packed figure (`prim_op`; crates/view/src/pack.rs). */
export const OP = { LINE: 0, ARROW: 1, TICK: 2, DIAMOND: 3, BOX: 4, DOT: 5, POLYLINE: 6, RECT: 7, TEXT: 8 } as const;

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

/** Sizes the canvas (w × h css pixels) for the device pixel ratio, clears it and returns a context in css pixels. */
export function prepare(c: HTMLCanvasElement | OffscreenCanvas, w: number, h: number, opaque = false, dpr = window.devicePixelRatio || 1): CanvasRenderingContext2D {
  if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
  }
  // Opaque (white, the page's background): the compositor draws it without blending and skips
  // what it covers; it is the same picture as a transparent canvas over white.
  // (An OffscreenCanvas's context draws the same: one type for both.)
  const ctx = c.getContext("2d", { alpha: !opaque }) as CanvasRenderingContext2D;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  if (opaque) {
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, w, h);
  } else ctx.clearRect(0, 0, w, h);
  return ctx;
}

/** The axes' labels' font: a 2D context's own default, so set on none of the page's strips. */
const AXIS_FONT = "10px sans-serif";

/** Parts of the axes (`axes`, `panelAxes`), each drawn on a canvas strip of its own by the page. */
export const AX = { X: 1, Y: 2, TITLE: 4, ALL: 7 };

/**
 * The axes of `f` (its frame is a CSS box, main.ts): time ticks and labels under the plot area
 * (`AX.X`), sequence (or panel) ticks and labels left of it (`AX.Y`).
 */
export function axes(ctx: CanvasRenderingContext2D, f: Frame, ylabel: string, xlabels = true, yfmt = (l: string) => l, parts = AX.ALL, xtitle = "time (s since the connection's first packet)") {
  ctx.save();
  ctx.strokeStyle = "#888";
  ctx.fillStyle = "#333";
  // Set only if the context has another font: on a canvas in the page, setting a font has the
  // browser bring the page's style up to date first (a forced style recalc, after the frame's
  // transform writes), which took 0.3–2 ms per axis strip drawn, several strips a frame.
  if (ctx.font !== AXIS_FONT) ctx.font = AXIS_FONT;
  ctx.lineWidth = 1;
  ctx.beginPath();
  if (parts & AX.X) {
    ctx.textAlign = "center";
    for (const t of ticks(f.x0, f.x1, Math.max(2, Math.floor((f.w - LEFT - RIGHT) / 110)))) {
      const x = Math.round(sx(f, t.v)) + 0.5;
      ctx.moveTo(x, f.h - BOTTOM);
      ctx.lineTo(x, f.h - BOTTOM + 4);
      if (xlabels) ctx.fillText(t.label, x, f.h - BOTTOM + 14);
    }
    if (xlabels) ctx.fillText(xtitle, (LEFT + f.w - RIGHT) / 2, f.h - 6);
  }
  if (parts & AX.Y) {
    ctx.textAlign = "right";
    for (const t of ticks(f.y0, f.y1, Math.max(2, Math.floor((f.h - TOP - BOTTOM) / 40)))) {
      const y = Math.round(sy(f, t.v)) + 0.5;
      ctx.moveTo(LEFT - 4, y);
      ctx.lineTo(LEFT, y);
      ctx.fillText(yfmt(t.label), LEFT - 6, y + 3);
    }
    ctx.save();
    ctx.translate(12, (TOP + f.h - BOTTOM) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText(ylabel, 0, 0);
    ctx.restore();
  }
  ctx.stroke();
  ctx.restore();
}

function clip(ctx: CanvasRenderingContext2D, f: Frame) {
  ctx.beginPath();
  ctx.rect(LEFT, TOP, f.w - LEFT - RIGHT, f.h - TOP - BOTTOM);
  ctx.clip();
}

/** Maps a figure's packed coordinates (offsets from its origin) to css pixels of `f`. */
interface Map2 {
  ax: number;
  bx: number;
  ay: number;
  by: number;
}

function mapOf(f: Frame, fig: Figure): Map2 {
  const ax = (f.w - LEFT - RIGHT) / (f.x1 - f.x0 || 1);
  const hy = (f.h - TOP - BOTTOM) / (f.y1 - f.y0 || 1);
  return { ax, bx: LEFT + (fig.ox - f.x0) * ax, ay: -hy, by: f.h - BOTTOM - (fig.oy - f.y0) * hy };
}

/** Arrowhead size of mark i: shrinks on short segments (as the SVG) so stacks stay readable. */
function headOf(fig: Figure, m: Map2, i: number): number {
  const l = fig.segLen[i];
  return l < 0 ? ARROW_H : Math.min(ARROW_H, Math.max(2, (l * -m.ay) / 3));
}

/** Adds glyph primitive j (arrowhead, tick, diamond, box, dot) at (px, py) to the current path. */
function glyph(ctx: CanvasRenderingContext2D | Path2D, o: number, way: number, px: number, py: number, head: number) {
  if (o === OP.ARROW) {
    const back = way === 0 ? head : -head;
    const half = (ARROW_W * head) / ARROW_H;
    ctx.moveTo(px - half, py + back);
    ctx.lineTo(px, py);
    ctx.lineTo(px + half, py + back);
  } else if (o === OP.TICK) {
    if (way === 2) {
      ctx.moveTo(px - TICK / 2, py);
      ctx.lineTo(px + TICK / 2, py);
    } else {
      ctx.moveTo(px, py);
      ctx.lineTo(px, py + (way === 0 ? -TICK : TICK));
    }
  } else if (o === OP.DIAMOND) {
    ctx.moveTo(px, py - SYM);
    ctx.lineTo(px + SYM, py);
    ctx.lineTo(px, py + SYM);
    ctx.lineTo(px - SYM, py);
    ctx.closePath();
  } else if (o === OP.BOX) {
    ctx.rect(px - SYM, py - SYM, 2 * SYM, 2 * SYM);
  } else if (o === OP.DOT) {
    ctx.moveTo(px + 1.5, py);
    ctx.arc(px, py, 1.5, 0, 2 * Math.PI);
  }
}

/** Adds primitive j of mark i, whole, to `path` (the hover outline; text is left out). */
function traceAll(path: Path2D, fig: Figure, m: Map2, i: number, j: number) {
  const o = fig.op[j], k = fig.pxy[j], xy = fig.xy;
  const X = (n: number) => m.bx + m.ax * xy[k + n], Y = (n: number) => m.by + m.ay * xy[k + n];
  if (o === OP.LINE) {
    path.moveTo(X(0), Y(1));
    path.lineTo(X(2), Y(3));
  } else if (o === OP.POLYLINE) {
    path.moveTo(X(0), Y(1));
    for (let n = 2; n + 1 < fig.pxy[j + 1] - k; n += 2) path.lineTo(X(n), Y(n + 1));
  } else if (o === OP.RECT) {
    const [x1, y1, x2, y2] = [X(0), Y(1), X(2), Y(3)];
    path.rect(Math.min(x1, x2), Math.min(y1, y2), Math.abs(x2 - x1), Math.abs(y2 - y1));
  } else if (o !== OP.TEXT) glyph(path, o, fig.extra[j], X(0), Y(1), headOf(fig, m, i));
}

// Reused from frame to frame: drawing allocates nothing per primitive.
const seen = new Set<number>();

/**
 * Draws the figure's marks in `f`: one path per colour, stroked once. What would land on
 * pixels already drawn is left out, so the cost follows the pixels, not the packets: a run of
 * connected lines (the ack and window stair steps) adds a vertex only once it has moved half a
 * pixel, so steps whose treads and risers are under a pixel become one line within half a pixel
 * of them; a glyph (arrowhead, tick, ...) of the same kind, way and size as one already drawn in
 * the same pixel is drawn once; lines wholly outside the plot are skipped.
 */
export function drawFigure(ctx: CanvasRenderingContext2D, f: Frame, fig: Figure) {
  ctx.save();
  clip(ctx, f);
  ctx.lineWidth = 1;
  const m = mapOf(f, fig);
  const { ax, bx, ay, by } = m;
  const { op, pxy, xy, extra } = fig;
  const L = LEFT, R = f.w - RIGHT, T = TOP, B = f.h - BOTTOM, G = 10;
  // The primitive's mark, for the arrowhead size (only arrowheads need it: found by search).
  const markOf = (j: number) => {
    let lo = 0, hi = fig.n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (fig.mprim[mid] <= j) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  for (let c = 0; c < fig.byColor.length; c++) {
    const list = fig.byColor[c];
    if (!list.length) continue;
    ctx.beginPath();
    seen.clear();
    // (ex, ey): where the last line ended exactly; (px, py): where the path has got to;
    // open: whether the path's current point is (px, py).
    let ex = NaN, ey = NaN, px = NaN, py = NaN, open = false;
    for (let n = 0; n < list.length; n++) {
      const j = list[n], o = op[j], k = pxy[j];
      if (o === OP.LINE) {
        const x1 = bx + ax * xy[k], y1 = by + ay * xy[k + 1], x2 = bx + ax * xy[k + 2], y2 = by + ay * xy[k + 3];
        if ((x1 < L && x2 < L) || (x1 > R && x2 > R) || (y1 < T && y2 < T) || (y1 > B && y2 > B)) continue;
        if (x1 !== ex || y1 !== ey) {
          if (ex === ex && (ex !== px || ey !== py)) {
            if (!open) ctx.moveTo(px, py);
            ctx.lineTo(ex, ey);
          }
          ctx.moveTo(x1, y1);
          px = x1;
          py = y1;
          open = true;
        } else if (!open) {
          ctx.moveTo(px, py);
          open = true;
        }
        ex = x2;
        ey = y2;
        if (Math.abs(x2 - px) >= 0.5 || Math.abs(y2 - py) >= 0.5) {
          ctx.lineTo(x2, y2);
          px = x2;
          py = y2;
        }
      } else if (o === OP.POLYLINE || o === OP.RECT) {
        const p = new Path2D();
        traceAll(p, fig, m, markOf(j), j);
        ctx.stroke(p);
      } else {
        const gx = bx + ax * xy[k], gy = by + ay * xy[k + 1];
        if (gx < L - G || gx > R + G || gy < T - G || gy > B + G) continue;
        const head = o === OP.ARROW ? headOf(fig, m, markOf(j)) : 0;
        const key = (((o * 4 + extra[j]) * 8 + Math.round(head)) * 8192 + (gx | 0)) * 8192 + (gy | 0);
        if (seen.has(key)) continue;
        seen.add(key);
        glyph(ctx, o, extra[j], gx, gy, head);
        open = false;
      }
    }
    if (ex === ex && (ex !== px || ey !== py)) {
      if (!open) ctx.moveTo(px, py);
      ctx.lineTo(ex, ey);
    }
    ctx.strokeStyle = fig.colors[c];
    ctx.stroke();
  }
  ctx.font = "10px sans-serif";
  // Labels (R, O, P, 3, Z, ...) that would print over one another are drawn once per 8-pixel
  // cell: zoomed out, hundreds of R's in one spot read as a blot and cost a frame.
  seen.clear();
  for (let n = 0; n < fig.textPrims.length; n++) {
    const j = fig.textPrims[n], k = pxy[j];
    const tx0 = bx + ax * xy[k], ty0 = by + ay * xy[k + 1];
    if (tx0 < LEFT - 20 || tx0 > f.w + 20 || ty0 < -20 || ty0 > f.h + 20) continue;
    const cell = Math.floor(tx0 / 8) * 100003 + Math.floor(ty0 / 8);
    if (seen.has(cell)) continue;
    seen.add(cell);
    const a = extra[j];
    ctx.fillStyle = fig.colors[fig.color[j]];
    ctx.textAlign = a === 2 ? "right" : a === 3 ? "left" : "center";
    const tx = a === 2 ? tx0 - 4 : a === 3 ? tx0 + 4 : tx0;
    const ty = a === 0 ? ty0 - ARROW_H - 2 : a === 1 ? ty0 + ARROW_H + 11 : ty0 + 4;
    ctx.fillText(fig.texts[xy[k + 2]], tx, ty);
  }
  ctx.restore();
}

/** Distance in pixels from (mx, my) to primitive j (a line, or a point for the rest). */
function dist(fig: Figure, m: Map2, j: number, mx: number, my: number): number {
  const k = fig.pxy[j], xy = fig.xy;
  const x1 = m.bx + m.ax * xy[k], y1 = m.by + m.ay * xy[k + 1];
  if (fig.op[j] !== OP.LINE) return Math.hypot(mx - x1, my - y1);
  const x2 = m.bx + m.ax * xy[k + 2], y2 = m.by + m.ay * xy[k + 3];
  const dx = x2 - x1, dy = y2 - y1;
  const len2 = dx * dx + dy * dy;
  const t = len2 === 0 ? 0 : Math.max(0, Math.min(1, ((mx - x1) * dx + (my - y1) * dy) / len2));
  return Math.hypot(mx - (x1 + t * dx), my - (y1 + t * dy));
}

/**
 * The mark nearest to the pointer within `radius` pixels (its index, or -1). When several are
 * about as close, segments win over notes, notes over SACK blocks, those over the ack and window
 * lines: at full zoom out they overlap, and the segment is what a user points at.
 */
export function hit(f: Frame, fig: Figure, mx: number, my: number, radius = 6): number {
  const m = mapOf(f, fig);
  let best = -1;
  let bestD = radius;
  for (let i = 0; i < fig.n; i++) {
    if (Number.isNaN(fig.frame[i])) continue;
    const c = fig.cls[i], bias = fig.classBias[c], step = fig.classStep[c];
    if (bias >= bestD) continue;
    for (let j = fig.mprim[i]; j < fig.mprim[i + 1]; j++) {
      const k = fig.pxy[j];
      // Only the vertical part of a stair step is the packet; its tread is the time between.
      if (step && fig.op[j] === OP.LINE && fig.xy[k + 1] === fig.xy[k + 3]) continue;
      const d = dist(fig, m, j, mx, my) + bias;
      if (d < bestD) {
        bestD = d;
        best = i;
      }
    }
  }
  return best;
}

/** Outlines mark i on the overlay (hover). */
export function highlight(ctx: CanvasRenderingContext2D, f: Frame, fig: Figure, i: number) {
  ctx.save();
  clip(ctx, f);
  const path = new Path2D();
  const m = mapOf(f, fig);
  for (let j = fig.mprim[i]; j < fig.mprim[i + 1]; j++) traceAll(path, fig, m, i, j);
  ctx.strokeStyle = "rgba(30, 120, 255, 0.55)";
  ctx.lineWidth = 5;
  ctx.stroke(path);
  ctx.restore();
}

/** Where mark i is drawn (css pixels in `f`): its first vertical line's middle, else its first primitive's (a line's middle, as a ladder's sloped arrow). */
export function markPoint(f: Frame, fig: Figure, i: number): [number, number] {
  const m = mapOf(f, fig);
  let j = fig.mprim[i];
  for (let q = j; q < fig.mprim[i + 1]; q++) {
    const k = fig.pxy[q];
    if (fig.op[q] === OP.LINE && fig.xy[k] === fig.xy[k + 2]) {
      j = q;
      break;
    }
  }
  const k = fig.pxy[j], xy = fig.xy;
  const x = fig.op[j] === OP.LINE ? m.bx + (m.ax * (xy[k] + xy[k + 2])) / 2 : m.bx + m.ax * xy[k];
  const y = fig.op[j] === OP.LINE ? m.by + (m.ay * (xy[k + 1] + xy[k + 3])) / 2 : m.by + m.ay * xy[k + 1];
  return [x, y];
}

export interface PanelLine {
  s: Series;
  color: string;
  label: string;
  dots?: boolean;
  /** A step function (the value holds until the next point): drawn over and up. */
  step?: boolean;
  /** Filled down to 0 (the timeline's stacked triage shares). */
  fill?: boolean;
  /** Left out of a panel's legend (the timeline's lifelines: one line per guid). */
  unlabelled?: boolean;
  /** Does not set the panel's scale (unless nothing else has a value): it may leave the top,
   * where it does is marked with this text (the advertised window, often far above the bytes
   * in flight, flattened them). */
  overTop?: string;
}

/** The colours of the CLI's plots (core `plot::Color::svg`), so that a kind of sample has one
 * colour in both: Karn RTT samples green, timestamp ones blue. */
export const COLOR = { fg: "#000000", green: "#1a9a3a", red: "#e0181c", blue: "#2b6fd6", yellow: "#c99a00", purple: "#8a2be2", orange: "#f07800" } as const;

/** The panels' series (throughput, RTT, bytes), as drawn: built once per answer. */
export function panelLines(p: Panels): PanelLine[][] {
  return [
    [
      { s: p.tput_bps, color: COLOR.orange, label: "throughput", step: true },
      { s: p.goodput_bps, color: COLOR.blue, label: "goodput (new bytes)", step: true },
    ],
    [
      // Every sample blue (timestamp samples are most of them), the Karn ones green over them,
      // as `tcpscope plot -k rtt` colours them (it drew them red here).
      { s: p.rtt_ms, color: COLOR.blue, label: "timestamp + Karn", dots: true },
      { s: p.rtt_karn_ms, color: COLOR.green, label: "Karn", dots: true },
    ],
    [
      { s: p.flight_bytes, color: COLOR.fg, label: "in flight", step: true },
      { s: p.window_bytes, color: COLOR.yellow, label: p.window_scaled ? "advertised window" : "advertised window (raw: scale unknown)", step: true, overTop: "window ↑" },
      { s: p.cwnd_bytes, color: COLOR.purple, label: "cwnd estimate", dots: true },
    ],
  ];
}

/** Human units for an axis label (k, M, G). */
export function si(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toPrecision(3) + "G";
  if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
  if (a >= 1e3) return (v / 1e3).toPrecision(3) + "k";
  return String(Math.round(v * 1000) / 1000);
}

/** The highest value of the lines over [x0, x1]; lines that may leave the top (`overTop`) only
 * when the others have nothing above 0. */
export function seriesMax(lines: PanelLine[], x0: number, x1: number): number {
  const scaled = lines.filter((l) => !l.overTop);
  const own = lineMax(scaled, x0, x1);
  return own > 0 || scaled.length === lines.length ? own : lineMax(lines, x0, x1);
}

function lineMax(lines: PanelLine[], x0: number, x1: number): number {
  let ymax = 0;
  for (const l of lines) {
    const { ot, t, hi } = l.s;
    for (let i = 0; i < t.length; i++) {
      const x = ot + t[i];
      if (x >= x0 && x <= x1 && hi[i] > ymax) ymax = hi[i];
    }
  }
  return ymax;
}

/** The frame of a panel: the shared time axis, values from 0 up to `ymax` with headroom above for the title row. */
export const panelFrame = (x0: number, x1: number, w: number, h: number, ymax: number): Frame => ({ x0, x1, y0: 0, y1: ymax > 0 ? ymax * 1.3 : 1, w, h });

/** A panel's axes, title and legend (drawn over its data). */
export function panelAxes(ctx: CanvasRenderingContext2D, f: Frame, title: string, lines: PanelLine[], parts = AX.ALL) {
  axes(ctx, f, "", false, (l) => si(Number(l)), parts);
  if (!(parts & AX.TITLE)) return;
  ctx.save();
  ctx.font = "11px sans-serif";
  let x = LEFT + 6;
  ctx.fillStyle = "#333";
  ctx.fillText(title, x, TOP + 12);
  x += ctx.measureText(title).width + 10;
  for (const l of lines) {
    if (l.unlabelled) continue;
    ctx.fillStyle = l.color;
    ctx.fillText(l.label, x, TOP + 12);
    x += ctx.measureText(l.label).width + 10;
  }
  ctx.restore();
}

/**
 * A panel's series (under the time-sequence plot, on its time axis) in `f`: as lines (or dots
 * for samples); an aggregated series as a min-max band per column so that no spike vanishes.
 */
export function panelData(ctx: CanvasRenderingContext2D, f: Frame, lines: PanelLine[]) {
  ctx.save();
  clip(ctx, f);
  const { x0, x1, h } = f;
  const ax = (f.w - LEFT - RIGHT) / (x1 - x0 || 1);
  const hy = (h - TOP - BOTTOM) / (f.y1 - f.y0);
  const Y = (v: number) => h - BOTTOM - v * hy;
  for (const l of lines) {
    ctx.strokeStyle = l.color;
    ctx.fillStyle = l.color;
    ctx.lineWidth = 1;
    ctx.beginPath();
    const { ot, t, lo, hi } = l.s;
    const bx = LEFT + (ot - x0) * ax;
    for (let i = 0; i < t.length; i++) {
      const x = bx + t[i] * ax;
      if (l.dots) {
        ctx.rect(x - 1, Y(hi[i]) - 1, 2, 2);
        if (lo[i] !== hi[i]) ctx.rect(x - 1, Y(lo[i]) - 1, 2, 2);
        continue;
      }
      if (i === 0) ctx.moveTo(x, Y(hi[i]));
      else {
        if (l.step) ctx.lineTo(x, Y(hi[i - 1]));
        ctx.lineTo(x, Y(hi[i]));
      }
      if (l.s.agg && lo[i] !== hi[i]) {
        ctx.lineTo(x, Y(lo[i]));
        ctx.moveTo(x, Y(hi[i]));
      }
    }
    if (l.overTop) {
      // Where the line first leaves the top: an arrow and its text, at the top edge.
      const i = Array.from(t.keys()).find((i) => hi[i] > f.y1 && bx + t[i] * ax >= LEFT && ot + t[i] <= x1);
      if (i !== undefined) {
        const x = Math.max(LEFT, bx + t[i] * ax), top = h - BOTTOM - (f.y1 - f.y0) * hy;
        ctx.stroke();
        ctx.beginPath();
        ctx.font = "10px sans-serif";
        ctx.textAlign = x + 60 > f.w - RIGHT ? "right" : "left";
        ctx.fillText(l.overTop, x + (ctx.textAlign === "right" ? -4 : 4), top + 30);
        ctx.moveTo(x, top + 10);
        ctx.lineTo(x, top);
        ctx.moveTo(x - 3, top + 5);
        ctx.lineTo(x, top);
        ctx.lineTo(x + 3, top + 5);
      }
    }
    if (l.dots) ctx.fill();
    else if (l.fill && t.length) {
      ctx.lineTo(bx + t[t.length - 1] * ax, Y(0));
      ctx.lineTo(bx + t[0] * ax, Y(0));
      ctx.closePath();
      ctx.fill();
    } else ctx.stroke();
  }
  ctx.restore();
}
