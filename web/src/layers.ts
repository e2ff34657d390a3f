// The parts a plot on the page's time axis is made of, none of them about packets: data layers
// (`DataLayer`: drawn at one view, shown moved by a CSS transform until drawn again, by the
// drawing worker or on the page), axis strips (`AxisStrip`), the frame around a plot area
// (`frameBox`), and what input needs of a plot (`Surface`: zoom.ts and tooltip.ts drive any
// plot through it). plot.ts builds the connection's plots from them; a time-series plot on the
// same time axis would be built from them too (see plot.ts).

import { BOTTOM, LEFT, RIGHT, TOP, prepare } from "./draw";
import type { Frame } from "./draw";
import DrawWorker from "./drawworker?worker&inline";

/**
 * What zoom.ts and tooltip.ts need of a plot. Its x is the view's time (state.view t0..t1); its
 * y is its own (a sequence number, a rate, a sample's value), mapped to the view's by `viewY`.
 */
export interface Surface {
  /** The canvas over the plot that takes the pointer, and draws hover and the zoom rectangle. */
  overlay: HTMLCanvasElement;
  /** The ranges and size it was last drawn at (unset: not drawn yet). */
  frame?: Frame;
  /** The hovered item (`hit`'s numbering; -1: none). */
  hover: number;
  /** Aborted when the plot is removed: the listeners input adds outside the plot (on the window) go with it. */
  gone: AbortSignal;
  /** The overlay's place in the window (kept: reading it lays the page out). */
  box(): DOMRect;
  /** The item under overlay pixel (x, y) (-1: none; undefined: nothing drawn to hover). */
  hit(x: number, y: number): number | undefined;
  /** The tooltip's HTML for item `m` (null: none), and a fuller one when `more` resolves (null: keep). */
  tip(m: number): { html: string; more?: Promise<string | null> } | null;
  /**
   * The view's y (state.view s0..s1) at the overlay's pixel row `py`, at frame `f`. None: its y
   * is its own (a timeline's lanes), and zooming or panning it changes the view's time only.
   */
  viewY?(f: Frame, py: number): number;
  /** Its time minus the view's, s (a capture's plot under a recording's timeline; default 0). */
  toff?: number;
  /** Draws the overlay again: hover, the focused item, and `rect` (a zoom rectangle dragged). */
  drawOverlay(rect?: [number, number, number, number]): void;
}

/**
 * The drawing worker (drawworker.ts): the data layers are drawn and rasterized there, on
 * canvases handed to it, and the page only swaps them. Null where it cannot run (no
 * OffscreenCanvas, or it failed to start): the layers are then drawn on this thread, a few per
 * frame (BUDGET_MS).
 */
export let painter: Worker | null = null;
/** Called when the worker finished a drawing (the benchmark's full redraw waits on it). */
let wake: (v?: unknown) => void = () => {};

/** Resolves when the worker next finishes a drawing (or fails). */
export const painterDrew = () => new Promise((r) => (wake = r));

/** A plot as the worker's answers find it: by its key, its answer's number and its layers. */
export interface Layered {
  key: string;
  gen: number;
  layers(): DataLayer[];
}

/** Where pointer event `e` is on plot `p`'s overlay (css px). */
export function pointerAt(p: Surface, e: MouseEvent): [number, number] {
  const r = p.box();
  return [e.clientX - r.left, e.clientY - r.top];
}

/**
 * Starts the worker, if it can run. Its drawings go to the layers of `plots()` (the plots
 * shown); `drew` is called when one is ready to show, or when the page must draw (it failed).
 */
export function startPainter(plots: () => Layered[], drew: () => void) {
  try {
    if (typeof OffscreenCanvas !== "undefined" && "transferControlToOffscreen" in HTMLCanvasElement.prototype) {
      painter = new DrawWorker();
      painter.onmessage = (e) => {
        const m = e.data as { key: string; layer: number; gen: number; f: Frame; ask: string };
        const p = plots().find((p) => p.key === m.key);
        const layer = p?.layers()[m.layer];
        if (!p || !layer || p.gen !== m.gen) return;
        layer.ready = m;
        drew();
        wake();
      };
      // A worker that cannot start (a page's security policy, say), or fails later (its script
      // does not load, it throws), reports it here: the page draws from then on. Handled, so
      // not reported as uncaught.
      painter.onerror = (e) => {
        e.preventDefault();
        console.warn(`drawing on the page: the drawing worker failed (${e.message || "it did not load"})`);
        painter?.terminate();
        painter = null;
        for (const p of plots()) for (const l of p.layers()) l.reset();
        drew();
        wake();
      };
    }
  } catch {
    painter = null;
  }
}

/**
 * A canvas over the plot area holding data (the figure's marks, or a panel's series) drawn at
 * one view. Until it is drawn again, a later view shows it moved and scaled by a CSS transform:
 * the compositor's work, so a wheel notch or a drag step redraws no data, and the new answer
 * replaces the stretched picture when it comes.
 *
 * With the drawing worker, two canvases whose control is handed to it
 * (`transferControlToOffscreen`): it draws on the hidden one, which it shows straight to the
 * compositor, and the page only swaps them, in the frame that also sets the new one's transform.
 * (On one canvas, its new drawing would show for a frame or more under the old drawing's
 * transform: the worker's frames do not wait for the page's.)
 */
let asks = 0;

export class DataLayer {
  /** The canvas shown. */
  canvas = dataCanvas();
  /** With the worker: the other one, which the worker draws the next answer on. */
  private back: HTMLCanvasElement | null = null;
  box = document.createElement("div");
  /** The answer (the plot's `gen`) and the frame it was drawn from and at. */
  drawn: { gen: number; f: Frame } | null = null;
  private shown = "";
  /** With the worker: the last drawing asked of it, and the one shown (equal: none awaited). */
  private asked = "";
  private answered = "";
  /** A drawing the worker finished (on `back`), shown at the next frame. */
  ready: { gen: number; f: Frame; ask: string } | null = null;

  /** `key`, `index`: the plot's and the layer's, as the worker knows them. */
  constructor(parent: HTMLElement, private key: string, private index: number) {
    this.box.className = "clip";
    Object.assign(this.box.style, { left: `${LEFT}px`, right: `${RIGHT}px`, top: `${TOP}px`, bottom: `${BOTTOM}px` });
    this.box.append(this.canvas);
    if (painter) {
      this.back = dataCanvas();
      this.back.style.visibility = "hidden";
      this.box.append(this.back);
      [this.canvas, this.back].forEach((c, slot) => {
        const off = c.transferControlToOffscreen();
        painter!.postMessage({ canvas: `${key}:${index}:${slot}`, off }, [off]);
        c.dataset.slot = String(slot);
      });
    }
    parent.append(this.box);
  }

  /** Whether it must be drawn for answer `gen` at frame `f` (`y`: a panel's scale must match too). */
  stale(gen: number, f: Frame, y = false): boolean {
    const d = this.drawn;
    return !d || d.gen !== gen || d.f.w !== f.w || d.f.h !== f.h || (y && (d.f.y0 !== f.y0 || d.f.y1 !== f.y1));
  }

  draw(gen: number, f: Frame, paint: (ctx: CanvasRenderingContext2D) => void) {
    const ctx = prepare(this.canvas, f.w - LEFT - RIGHT, f.h - TOP - BOTTOM, true);
    ctx.translate(-LEFT, -TOP);
    paint(ctx);
    this.drawn = { gen, f };
    this.show(f);
  }

  /** Asks the worker to draw it for answer `gen` at `f`, once per answer, size (and `y`: scale). */
  ask(gen: number, f: Frame, y: boolean, again = false) {
    let ask = `${gen},${f.w},${f.h}` + (y ? `,${f.y0},${f.y1}` : "");
    if (ask === this.asked && !again) return;
    // Asked again (the benchmark's full redraw): awaited until this one comes.
    if (again) ask += `#${++asks}`;
    this.asked = ask;
    painter!.postMessage({ draw: this.key, layer: this.index, slot: Number(this.back!.dataset.slot), gen, f, ask, dpr: window.devicePixelRatio || 1 });
  }

  /** Whether a drawing asked of the worker has not been shown yet. */
  awaited(): boolean {
    return this.asked !== this.answered;
  }

  /** Shows the worker's drawing, if the one last asked is done: the canvases swap. */
  place() {
    const r = this.ready;
    if (!r || !this.back) return;
    this.ready = null;
    // An older ask, drawn on the same canvas: the latest is on its way (or was drawn over it).
    if (r.ask !== this.asked) return;
    [this.canvas, this.back] = [this.back, this.canvas];
    this.canvas.style.visibility = "";
    this.back.style.visibility = "hidden";
    // Its transform, the one it had when last shown, is written again by `show`.
    this.shown = "";
    this.drawn = { gen: r.gen, f: r.f };
    this.answered = r.ask;
  }

  /** Empties it: nothing to draw for answer `gen` (none yet, or another direction's). */
  clear(gen: number, f: Frame) {
    // The worker's canvas hidden: the page's white shows, as an empty opaque canvas would.
    if (this.back) this.canvas.style.visibility = "hidden";
    else prepare(this.canvas, f.w - LEFT - RIGHT, f.h - TOP - BOTTOM, true);
    this.drawn = { gen, f };
    this.ready = null;
    this.asked = this.answered = "";
  }

  /** One new canvas, to draw on here: the worker failed, and the canvases handed to it cannot draw. */
  reset() {
    this.canvas = dataCanvas();
    this.back = null;
    this.box.replaceChildren(this.canvas);
    this.ready = null;
    this.drawn = null;
    this.shown = this.asked = this.answered = "";
  }

  /** Maps the picture drawn at `drawn.f` onto `f` (identity when they are the same view). */
  show(f: Frame) {
    const d = this.drawn?.f;
    let t = "none";
    if (d && (d.x0 !== f.x0 || d.x1 !== f.x1 || d.y0 !== f.y0 || d.y1 !== f.y1)) {
      const pw = f.w - LEFT - RIGHT, ph = f.h - TOP - BOTTOM;
      const sx = (d.x1 - d.x0) / (f.x1 - f.x0 || 1), sy = (d.y1 - d.y0) / (f.y1 - f.y0 || 1);
      const tx = ((d.x0 - f.x0) / (f.x1 - f.x0 || 1)) * pw;
      const ty = ph * (1 - sy) - ((d.y0 - f.y0) / (f.y1 - f.y0 || 1)) * ph;
      t = `matrix(${sx},0,0,${sy},${tx},${ty})`;
    }
    if (t !== this.shown) this.canvas.style.transform = this.shown = t;
  }
}

function dataCanvas(): HTMLCanvasElement {
  const c = document.createElement("canvas");
  c.className = "data";
  return c;
}

/**
 * A strip of a plot's axes (the labels left of it, the ticks under it, a panel's title): a
 * canvas covering only that part of the plot (`place` gives its box in the plot's css pixels
 * for a plot of w × h), redrawn only when what it shows (`key`) changes. The browser
 * rasterizes (in software here) and hands over every canvas drawn in a frame, whole: one
 * canvas over the whole plot for a few labels at its edges cost most of a frame.
 */
export class AxisStrip {
  key = "";
  canvas = document.createElement("canvas");
  private placed = "";

  constructor(parent: HTMLElement, private place: (w: number, h: number) => [number, number, number, number]) {
    this.canvas.className = "axes";
    parent.append(this.canvas);
  }

  draw(key: string, [w, h]: [number, number], paint: (ctx: CanvasRenderingContext2D) => void, force = false) {
    key += `,${w},${h}`;
    if (key === this.key && !force) return;
    this.key = key;
    const [x, y, cw, ch] = this.place(w, h);
    const placed = `${x},${y},${cw},${ch}`;
    // Written only when changed: a write makes the browser lay the plot out again.
    if (placed !== this.placed) {
      this.placed = placed;
      Object.assign(this.canvas.style, { left: `${x}px`, top: `${y}px`, width: `${cw}px`, height: `${ch}px` });
    }
    const ctx = prepare(this.canvas, cw, ch);
    ctx.translate(-x, -y);
    paint(ctx);
  }
}

/** The frame around a plot area: a CSS box, never repainted. */
export function frameBox(parent: HTMLElement) {
  const b = document.createElement("div");
  b.className = "frame";
  // The canvas drew it with 1-px lines on the plot area's first and last pixel rows and columns.
  Object.assign(b.style, { left: `${LEFT}px`, right: `${RIGHT - 1}px`, top: `${TOP}px`, bottom: `${BOTTOM - 1}px` });
  parent.append(b);
}
