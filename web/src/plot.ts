// The connection's plots: its time-sequence figure (the packets, from api.tsg) and under it the
// panels on the same time axis (throughput, RTT, bytes in flight, from api.panels); one plot per
// connection shown, two compared on one scale. Also the page's one frame loop (`requestFrame`:
// every plot drawn in one requestAnimationFrame, within a budget) and the fetching of answers for
// the view (`loadAll`), and the ranges all plots share (`ranges`).
//
// What is generic lives in layers.ts (data layers drawn at one view and moved by transforms,
// the worker, axis strips), and zoom.ts and tooltip.ts drive a plot only through `Surface` (its
// overlay, frame, hit, tip, and optionally viewY and toff): nothing there assumes packets.
// ConnPlot is the packet-specific plot; a `TimePlot` (timeline.ts: a monitor recording's
// timeline) shares only the view's time, its y its own. With a recording, `timeline` is shown
// above the capture's ConnPlot of the same connection, whose times are shifted by its `toff`
// (where its first packet is on the timeline); `ranges` then takes the time range from the
// timeline.

import * as api from "./api";
import type { Figure, Panels, PacketRow } from "./api";
import { AX, BOTTOM, LEFT, RIGHT, TOP, axes, drawFigure, highlight, hit, iy, panelAxes, panelData, panelFrame, panelLines, prepare, seriesMax } from "./draw";
import type { Frame, PanelLine } from "./draw";
import { $, escapeHtml, status } from "./dom";
import { AxisStrip, DataLayer, frameBox, painter, startPainter } from "./layers";
import type { Layered, Surface } from "./layers";
import { perf, timeRendering } from "./perf";
import { state, timeOnly, writeUrl } from "./state";

startPainter(() => allPlots(), () => requestFrame());

// A resize of the window, or any scroll (the plots' column, the window), may move a plot under
// the pointer: its place is read again at the next pointer event.
window.addEventListener("resize", () => allPlots().forEach((p) => p.moved()));
document.addEventListener("scroll", () => allPlots().forEach((p) => p.moved()), { capture: true, passive: true });

/**
 * A time-series plot on the page's time axis (timeline.ts: a monitor recording's timeline): its
 * y is its own, so it shares only the view's time; what the frame loop and `loadAll` call.
 */
export interface TimePlot extends Surface, Layered {
  el: HTMLElement;
  /** When the last answer arrived, until it is wholly drawn (0: drawn). */
  arrived: number;
  /** The end of its data, s (undefined: no answer yet): the whole view ends there. */
  last(): number | undefined;
  load(): void;
  /** Drawn before its first answer, in a task (as ConnPlot.warm). */
  warm(): void;
  /** Brings it to the view's times [x0, x1]; returns whether a layer was left for a later frame. */
  draw(x0: number, x1: number, mayDraw: () => boolean, force?: boolean): boolean;
  dispose(): void;
  moved(): void;
  /** For the tests (hooks.ts). */
  probe(lane?: string): unknown;
}

/** The time-series plot shown above the connections' plots (null: none). */
export let timeline: TimePlot | null = null;

/** Every plot shown: the time-series one, then the connections'. */
const allPlots = (): (ConnPlot | TimePlot)[] => (timeline ? [timeline, ...plots] : plots);

/** The packets' rows the tooltip showed, by connection and frame: emptied when other
 * connections are shown, and never more than PACKET_CACHE rows (the oldest go first). */
export const packetCache = new Map<string, Promise<PacketRow | null>>();
const PACKET_CACHE = 1000;

/** Ticks under a panel (no labels: the plot's time axis labels them): this tall. */
const PANEL_TICKS = 6;
/** A panel's title and legend, over its plot area: this tall. */
const PANEL_TITLE = TOP + 18;

const PANEL_TITLES = ["b/s", "RTT ms", "bytes"];

let plotSerial = 0;

export class ConnPlot implements Surface, Layered {
  el: HTMLElement;
  /** This plot, to the drawing worker (a connection may be plotted again after a rebuild). */
  key = `${this.id}#${++plotSerial}`;
  /** The time-sequence plot (its box: the plot's size is read from it). */
  tsg: HTMLElement;
  overlay: HTMLCanvasElement;
  /** The panels' boxes. */
  panels: HTMLElement[];
  marks: DataLayer;
  series: DataLayer[];
  /** The plot's axes: sequence labels, time labels; then per panel its labels, ticks and title. */
  axes: AxisStrip[];
  panelAxes: AxisStrip[][];
  fig?: Figure;
  pan?: Panels;
  /** The panels' series as drawn, from `pan`. */
  lines: PanelLine[][] = [];
  /** Counts the answers: layers drawn from an older one are redrawn. */
  gen = 0;
  /**
   * Its time minus the view's, s: under a recording's timeline (whose times count from the
   * connection's first sample), where the capture's first packet of it is on the timeline.
   */
  toff = 0;
  /** When the last answer arrived, until it is wholly drawn (0: drawn). */
  arrived = 0;
  ctl?: AbortController;
  frame?: Frame;
  /** The hovered mark of `fig` (-1: none). */
  hover = -1;
  /** Whether the overlay holds anything (else a new view need not clear it). */
  private inked = false;
  /**
   * The plot's and panels' sizes (css px) as last laid out, kept by a ResizeObserver: reading them from
   * the elements in a frame would have the browser lay the page out there and then (at load,
   * with thousands of events just listed, that took longer than the frame's drawing).
   */
  private sizes = new Map<Element, [number, number]>();
  /**
   * The one place a resize is handled (the window's, the splitter's, the compare layout's): the
   * plot is drawn again at its new size, and asked again at its new width once resizing pauses.
   */
  private resized = new ResizeObserver((es) => {
    // Any of its boxes resized: the plot may have moved too (the splitter, the compare layout).
    this.moved();
    for (const e of es) {
      const el = e.target as HTMLElement;
      const was = this.sizes.get(el);
      const [w, h] = [el.clientWidth, el.clientHeight];
      if (was && was[0] === w && was[1] === h) continue;
      this.sizes.set(el, [w, h]);
      requestFrame();
      // (Not at the first size, which the first answer is asked at.)
      if (was && el === this.tsg && was[0] !== w) loadAll(150);
    }
  });

  constructor(public id: number) {
    this.el = document.createElement("div");
    this.el.className = "plot";
    this.el.dataset.conn = String(id);
    const title = document.createElement("h2");
    this.el.append(title);
    const wrap = (this.tsg = document.createElement("div"));
    wrap.className = "tsg";
    this.overlay = document.createElement("canvas");
    this.overlay.className = "overlay";
    // The overlay first: the plot's first canvas is as wide as the plot (the benchmark reads it).
    wrap.append(this.overlay);
    this.marks = new DataLayer(wrap, this.key, 0);
    frameBox(wrap);
    this.axes = [new AxisStrip(wrap, (_, h) => [0, 0, LEFT, h]), new AxisStrip(wrap, (w, h) => [0, h - BOTTOM, w, BOTTOM])];
    this.el.append(wrap);
    this.series = [];
    this.panelAxes = [];
    this.panels = ["tput", "rtt", "flight"].map((k) => {
      const div = document.createElement("div");
      div.className = `panel ${k}`;
      this.series.push(new DataLayer(div, this.key, this.series.length + 1));
      frameBox(div);
      this.panelAxes.push([
        new AxisStrip(div, (_, h) => [0, 0, LEFT, h]),
        new AxisStrip(div, (w, h) => [0, h - BOTTOM, w, PANEL_TICKS]),
        new AxisStrip(div, (w) => [LEFT, 0, w - LEFT - RIGHT, PANEL_TITLE]),
      ]);
      this.el.append(div);
      return div;
    });
    for (const c of [wrap, ...this.panels]) this.resized.observe(c);
    const legend = document.createElement("div");
    legend.className = "legend";
    this.el.append(legend);
  }

  /** Its data layers: the figure's, then the panels'. */
  layers(): DataLayer[] {
    return [this.marks, ...this.series];
  }

  /**
   * The overlay's place in the window, read once and kept until something may have moved it (a
   * resize of the plot or the window, a scroll: `moved`): pointer events are placed with it, and
   * reading it in a handler after the page was written to had the browser lay the page out there.
   */
  private placed: DOMRect | null = null;

  box(): DOMRect {
    return (this.placed ??= this.overlay.getBoundingClientRect());
  }

  /** Forgets the overlay's place (read again at the next pointer event). */
  moved() {
    this.placed = null;
  }

  /** The size of one of its canvases (css px). */
  size(c: HTMLElement): [number, number] {
    let s = this.sizes.get(c);
    if (!s) this.sizes.set(c, (s = [c.clientWidth, c.clientHeight]));
    return s;
  }

  /** Aborted when the plot is removed (see Surface.gone). */
  private removed = new AbortController();
  readonly gone = this.removed.signal;

  dispose() {
    this.removed.abort();
    painter?.postMessage({ forget: this.key });
    this.resized.disconnect();
    this.ctl?.abort();
  }

  /** Forgets the figure (another direction): its layers are cleared at the next frame. */
  drop() {
    this.fig = undefined;
    this.pan = undefined;
    this.lines = [];
    this.gen++;
  }

  /**
   * Draws the plot as it is before its first answer (its axes at the view asked for), in a
   * task while the answers are on their way rather than in a frame: the first layout, the
   * canvases' contexts and font, and the drawing code's first runs made the first frames after
   * load take 55–126 ms. Frames leave a plot alone until its first answer.
   */
  warm() {
    const start = performance.now();
    const i = plots.indexOf(this);
    const { x0, x1, y } = ranges();
    this.draw(x0 - this.toff, x1 - this.toff, y[i][0], y[i][1], [0, 0, 0], () => true);
    timeRendering(start, perf.warm);
  }

  async load(off = 0) {
    this.ctl?.abort();
    const ctl = (this.ctl = new AbortController());
    const v = { ...state.view };
    if (v.s0 !== undefined && v.s1 !== undefined) [v.s0, v.s1] = [v.s0 + off, v.s1 + off];
    if (v.t0 !== undefined && v.t1 !== undefined) [v.t0, v.t1] = [v.t0 - this.toff, v.t1 - this.toff];
    const w = Math.max(1, this.size(this.tsg)[0] - LEFT - RIGHT);
    const start = performance.now();
    // A connection's first answer waits for a pass over its file (seconds for a big one): said
    // in its title meanwhile.
    const h2 = this.el.querySelector("h2")!;
    const waiting = this.fig || api.report ? 0 : window.setTimeout(() => {
      h2.textContent = h2.title = `connection ${this.id}: reading its packets from the trace…`;
      h2.classList.add("waiting");
    }, 250);
    try {
      // The ladder: both directions, time across, at the plot's pixel height (its labels are
      // placed, or left out, by pixels).
      const h = Math.max(1, this.size(this.tsg)[1] - TOP - BOTTOM);
      const [fig, pan] = await Promise.all([
        state.kind === "ladder"
          ? api.ladder(this.id, { t0: v.t0, t1: v.t1, w }, h, ctl.signal)
          : state.kind === "lifeline" || state.kind === "owd"
            ? api.lifeline(state.kind, this.id, state.dir, { t0: v.t0, t1: v.t1, w }, ctl.signal)
            : api.tsg(this.id, state.dir, { ...v, w }, ctl.signal),
        api.panels(this.id, state.dir, { t0: v.t0, t1: v.t1, w }, ctl.signal),
      ]);
      if (ctl.signal.aborted) return;
      perf.fetches.push(performance.now() - start);
      const before = ranges();
      this.fig = fig;
      this.pan = pan;
      this.lines = panelLines(pan);
      this.gen++;
      // The worker draws from its own copy (copied here, between frames).
      painter?.postMessage({ data: this.key, gen: this.gen, fig, lines: this.lines });
      this.askNow();
      this.arrived = performance.now();
      this.hover = -1;
      // Written only when changed: a write makes the browser lay the page out again.
      // Say when the direction was chosen for the user, and by what (as `tcpscope plot` does;
      // shorter, for two plots side by side; the hover text says it whole).
      const auto = state.dirAuto && !timeline;
      const title = auto ? `${fig.title} · most data` : fig.title;
      if (h2.textContent !== title) {
        h2.textContent = title;
        h2.title = auto ? `${fig.title} · the direction with the most data (a→b / b→a choose)` : fig.title;
      }
      if (waiting) h2.classList.remove("waiting");
      const legend = fig.legend
        .map((l) => `<span><i style="background:${l.color}"></i>${escapeHtml(l.text)}</span>`)
        .concat(fig.remarks.map((r) => `<span class="remark">${escapeHtml(r)}</span>`))
        .concat(fig.error ? [`<span class="error">${escapeHtml(fig.error)}</span>`] : [])
        .join("");
      const el = this.el.querySelector(".legend") as HTMLElement;
      if (el.dataset.html !== legend) {
        el.innerHTML = legend;
        el.dataset.html = legend;
      }
      requestFrame();
      // Where the view leaves the ranges to the figures (the union of their times, the largest
      // sequence span), an answer can change the other plot's: it would stay drawn at the old
      // ones, shown squeezed by its transform until the next zoom. It is asked again.
      const after = ranges();
      plots.forEach((q, j) => {
        const moved = after.x0 !== before.x0 || after.x1 !== before.x1 || after.y[j][0] !== before.y[j][0] || after.y[j][1] !== before.y[j][1];
        if (q !== this && q.gen && moved) q.load(offsetOf(j));
      });
    } catch (e) {
      if ((e as Error).name !== "AbortError") {
        status(`connection ${this.id}: ${(e as Error).message}`);
        if (h2.classList.contains("waiting")) h2.textContent = h2.title = "";
        h2.classList.remove("waiting");
      }
    } finally {
      clearTimeout(waiting);
    }
  }

  /**
   * Asks the worker for the new answer's layers at once, at the view as it is, rather than at
   * the next frame: it draws while the page waits for that frame. A frame asking the same (the
   * same answer, size and panel scales) asks nothing more.
   */
  askNow() {
    const i = plots.indexOf(this);
    if (!painter || !this.fig || i < 0) return;
    const { x0, x1, y } = ranges();
    const { f, pfs } = this.frames(x0 - this.toff, x1 - this.toff, y[i][0], y[i][1], panelMax(x0, x1));
    this.marks.ask(this.gen, f, false);
    if (this.lines.length) this.series.forEach((l, k) => l.ask(this.gen, pfs[k], true));
  }

  /**
   * The frames of the figure and of each panel at the view [x0, x1] × [y0, y1], each panel up
   * to `pmax[k]` (null: each panel at the scale it was last drawn at).
   */
  frames(x0: number, x1: number, y0: number, y1: number, pmax: number[] | null): { f: Frame; pfs: Frame[] } {
    const [w, h] = this.size(this.tsg);
    const pfs = this.series.map((layer, k) => {
      const pf = panelFrame(x0, x1, w, this.size(this.panels[k])[1], pmax ? pmax[k] : 0);
      return !pmax && layer.drawn ? { ...pf, y0: layer.drawn.f.y0, y1: layer.drawn.f.y1 } : pf;
    });
    return { f: { x0, x1, y0, y1, w, h }, pfs };
  }

  /** Whether a panel's data is to be drawn again (a new answer, a new size): the panels' scales are then worked out again. */
  panelsStale(): boolean {
    const [w] = this.size(this.tsg);
    return this.series.some((l, k) => l.stale(this.gen, { x0: 0, x1: 1, y0: 0, y1: 1, w, h: this.size(this.panels[k])[1] }));
  }

  /**
   * Brings the plot to the view [x0, x1] × [y0, y1], each panel up to `pmax[k]` (shared when
   * compared; null: no panel is to be redrawn, each keeps its scale). A layer whose data is
   * stale is drawn if `mayDraw()` allows, else shown moved until a later frame; returns whether
   * any was left for later. `force`: draw everything (the benchmark's full frame).
   */
  draw(x0: number, x1: number, y0: number, y1: number, pmax: number[] | null, mayDraw: () => boolean, force = false): boolean {
    const { f, pfs } = this.frames(x0, x1, y0, y1, pmax);
    const { w, h } = f;
    this.frame = f;
    let left = false;
    const fig = this.fig;
    for (const l of this.layers()) l.place();
    if (force || this.marks.stale(this.gen, f)) {
      if (!fig) this.marks.clear(this.gen, f);
      else if (painter) this.marks.ask(this.gen, f, false, force);
      else if (force || mayDraw()) this.marks.draw(this.gen, f, (ctx) => drawFigure(ctx, f, fig));
      else left = true;
    }
    this.marks.show(f);
    // Each strip only when its ticks move: a horizontal pan leaves the sequence labels be.
    const ladder = state.kind === "ladder";
    // The ladder's y is its two time lines: a at 1, b at 0.
    const yfmt = ladder ? (l: string) => (parseFloat(l) === 1 ? "a" : parseFloat(l) === 0 ? "b" : "") : undefined;
    const ylabel = ladder ? "endpoint" : state.kind === "owd" ? "one-way delay (ms)" : "relative sequence number";
    this.axes[0].draw(`${y0},${y1},${state.kind}`, [w, h], (ctx) => axes(ctx, f, ylabel, true, yfmt, AX.Y), force);
    this.axes[1].draw(`${x0},${x1}`, [w, h], (ctx) => axes(ctx, f, "", true, undefined, AX.X), force);
    const lines = this.lines;
    this.series.forEach((layer, k) => {
      let pf = pfs[k];
      const ph = pf.h;
      if (force || layer.stale(this.gen, pf, !!pmax)) {
        if (!lines.length) layer.clear(this.gen, pf);
        else if (painter) layer.ask(this.gen, pf, !!pmax, force);
        else if (force || mayDraw()) layer.draw(this.gen, pf, (ctx) => panelData(ctx, pf, lines[k]));
        else left = true;
      }
      // A panel not drawn again keeps the scale it was drawn at: its axes say so.
      if (layer.drawn) pf = { ...pf, y0: layer.drawn.f.y0, y1: layer.drawn.f.y1 };
      layer.show(pf);
      const labels = (lines[k] ?? []).map((l) => l.label).join();
      const [ya, xa, ta] = this.panelAxes[k];
      const paint = (parts: number) => (ctx: CanvasRenderingContext2D) => panelAxes(ctx, pf, PANEL_TITLES[k], lines[k] ?? [], parts);
      ya.draw(`${pf.y0},${pf.y1}`, [w, ph], paint(AX.Y), force);
      xa.draw(`${x0},${x1}`, [w, ph], paint(AX.X), force);
      ta.draw(labels, [w, ph], paint(AX.TITLE), force);
    });
    if (force || this.inked || this.hover >= 0 || state.focusFrame !== null) this.drawOverlay();
    return left;
  }

  /** The mark of its figure under overlay pixel (x, y) (-1: none; undefined: no figure). */
  hit(x: number, y: number): number | undefined {
    return this.frame && this.fig ? hit(this.frame, this.fig, x, y) : undefined;
  }

  /**
   * Mark `m`'s tooltip: its class and frame at once, then its packet's row and events once the
   * server answered (null if the figure was replaced meanwhile).
   */
  tip(m: number): { html: string; more: Promise<string | null> } | null {
    const fig = this.fig;
    if (m < 0 || !fig || Number.isNaN(fig.frame[m])) return null;
    const frame = fig.frame[m], n = fig.count[m], cls = fig.classes[fig.cls[m]];
    const agg = n > 1 ? `<div>${n} packets in this pixel column; first:</div>` : "";
    const key = `${this.id}:${frame}`;
    if (!packetCache.has(key)) {
      if (packetCache.size >= PACKET_CACHE) packetCache.delete(packetCache.keys().next().value!);
      packetCache.set(key, api.packet(this.id, frame).catch(() => null));
    }
    const more = packetCache.get(key)!.then((row) => {
      if (this.fig !== fig) return null;
      const evs = row ? row.events : state.events.filter((e) => e.frame === frame);
      const table = row
        ? `<table class="pkt"><tr><th>frame</th><th>time s</th><th>dir</th><th>seq</th><th>ack</th><th>win</th><th>len</th><th>flags</th></tr>
       <tr><td>${row.frame}</td><td>${row.t.toFixed(6)}</td><td>${row.dir}</td><td>${row.seq}</td><td>${row.ack ?? ""}</td><td>${row.win}</td><td>${row.len}</td><td>${row.flags}</td></tr></table>`
        : `<div>frame ${frame}</div>`;
      const evHtml = evs.map((e) => `<li>${escapeHtml(e.kind)} ${escapeHtml(e.text)}</li>`).join("");
      return `<b>${escapeHtml(cls)}</b>${agg}${table}${evHtml ? `<ul>${evHtml}</ul>` : ""}`;
    });
    return { html: `<b>${escapeHtml(cls)}</b>${agg}<div>frame ${frame}</div>`, more };
  }

  /**
   * The view's y at a pixel row (zoom.ts): the sequence numbers of the time-sequence plot and
   * the lifelines; none for the ladder, whose y (its two time lines) does not zoom, nor for
   * the one-way delays: those are zoomed and panned in time only.
   */
  get viewY(): ((f: Frame, py: number) => number) | undefined {
    return timeOnly(state.kind) ? undefined : (f, py) => this.seqAt(f, py);
  }

  /** Its sequence number at pixel row `py` of `f`, as the first plot's (the view's coordinates), as drawn now. */
  seqAt(f: Frame, py: number): number {
    const seq = iy(f, py);
    const { y } = ranges();
    const i = plots.indexOf(this);
    return i > 0 ? seq - (y[i][0] - y[0][0]) : seq;
  }

  drawOverlay(rect?: [number, number, number, number]) {
    const f = this.frame;
    const m = state.focusFrame !== null && this.fig ? this.fig.frame.indexOf(state.focusFrame) : -1;
    this.inked = !!f && !!this.fig && (m >= 0 || this.hover >= 0 || !!rect);
    if (!this.inked || !f || !this.fig) {
      // Empty: no pixels at all, rather than a transparent canvas over the whole plot, which
      // the compositor (in software here) blends over the plot in every frame.
      if (this.overlay.width) this.overlay.width = this.overlay.height = 0;
      return;
    }
    const [w, h] = this.size(this.tsg);
    const ctx = prepare(this.overlay, w, h);
    if (m >= 0) highlight(ctx, f, this.fig, m);
    if (this.hover >= 0) highlight(ctx, f, this.fig, this.hover);
    if (rect) {
      ctx.strokeStyle = "#2b6fd6";
      ctx.fillStyle = "rgba(43,111,214,0.1)";
      ctx.fillRect(rect[0], rect[1], rect[2] - rect[0], rect[3] - rect[1]);
      ctx.strokeRect(rect[0] + 0.5, rect[1] + 0.5, rect[2] - rect[0], rect[3] - rect[1]);
    }
  }
}

/** The plots shown: one per connection in state.ids. */
export let plots: ConnPlot[] = [];

/**
 * Builds the plots again: the connections' of state.ids, under `tl` when given (a recording's
 * timeline, the capture's plot of the same connection under it, its times shifted by `toff`).
 */
export function rebuildPlots(tl: TimePlot | null = null, toff = 0, note = "") {
  const cols = $("columns");
  for (const p of allPlots()) p.dispose();
  packetCache.clear();
  cols.innerHTML = "";
  timeline = tl;
  plots = state.ids.map((id) => new ConnPlot(id));
  for (const p of plots) p.toff = toff;
  if (!plots.length && !tl) cols.innerHTML = `<p class="empty">Select a connection (ctrl-click a second one to compare on one scale).</p>`;
  if (tl) cols.append(tl.el);
  if (note) {
    const p = document.createElement("p");
    p.className = "note";
    p.textContent = note;
    cols.append(p);
  }
  for (const p of plots) cols.append(p.el);
  cols.classList.toggle("two", plots.length === 2 && !tl);
  cols.classList.toggle("stack", !!tl);
}

/**
 * The ranges drawn: one time range for all plots, and for each plot a sequence range of the
 * same span (the same bytes per pixel, so two connections compare on one scale, thesis fig.
 * 3.7/3.8). Where the view does not set them: the time range is the union of the figures', and
 * each plot's sequence range starts at its own figure's lowest value and spans the largest of
 * the figures' spans; the view's sequence range is the first plot's, the second's is offset by
 * the view's `o`.
 */
export function ranges(): { x0: number; x1: number; y: [number, number][] } {
  const v = state.view;
  const figs = plots.map((p) => p.fig);
  const have = figs.filter((f): f is Figure => !!f);
  const x0 = v.t0 ?? 0;
  const ends = plots.flatMap((p) => (p.fig ? [(v.t0 === undefined ? p.fig.x[1] : p.fig.last) + p.toff] : []));
  const tl = timeline?.last();
  // Under a timeline, the whole view is the timeline's.
  const x1 = v.t1 ?? (tl !== undefined ? Math.max(1e-6, tl) : Math.max(1e-6, ...ends));
  if (v.s0 !== undefined && v.s1 !== undefined && !timeOnly(state.kind)) {
    const [s0, s1] = [v.s0, v.s1];
    return { x0, x1, y: plots.map((_, i) => { const o = offsetOf(i); return [s0 + o, s1 + o]; }) };
  }
  const span = have.length ? Math.max(...have.map((f) => f.y[1] - f.y[0])) : 1;
  const base = have.length ? Math.min(...have.map((f) => f.y[0])) : 0;
  return { x0, x1, y: figs.map((f) => { const y0 = f ? f.y[0] : base; return [y0, y0 + span]; }) };
}

/** Each panel's highest value over [x0, x1] across the plots: compared plots share the panels' scales too. */
export function panelMax(x0: number, x1: number): number[] {
  const out = [0, 0, 0];
  for (const p of plots) p.lines.forEach((lines, k) => (out[k] = Math.max(out[k], seriesMax(lines, x0 - p.toff, x1 - p.toff))));
  return out;
}

/** Offset of plot i's sequence range from the first plot's, in the view. */
export const offsetOf = (i: number) => (i === 0 ? 0 : (state.view.o ?? 0));

/**
 * Data drawn in one frame, at most (ms of the callback; at least one layer is drawn): a new
 * answer's layers beyond it wait for the next frame, shown moved meanwhile, so that one frame
 * with everything to draw does not miss its turn (the rasterization after the callback costs
 * about as much again).
 */
const BUDGET_MS = 6;

let frameRequested = false;
export function requestFrame() {
  // Until a plot has an answer, frames have nothing to draw (`warm` drew the plots).
  const all = allPlots();
  if (frameRequested || (all.length && all.every((p) => !p.gen))) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    const start = performance.now();
    const { x0, x1, y } = ranges();
    const pmax = plots.some((p) => p.gen && p.panelsStale()) ? panelMax(x0, x1) : null;
    let drew = false;
    const mayDraw = () => (drew && performance.now() - start > BUDGET_MS ? false : (drew = true));
    let left = false;
    // A plot before its first answer was drawn by `warm`.
    if (timeline?.gen) left = timeline.draw(x0, x1, mayDraw) || left;
    plots.forEach((p, i) => p.gen && (left = p.draw(x0 - p.toff, x1 - p.toff, y[i][0], y[i][1], pmax, mayDraw) || left));
    const end = performance.now();
    perf.frames.push(end - start);
    timeRendering(start);
    // An answer is on screen once the frame that drew its last layer is rendered.
    // (A layer awaited from the worker brings its own frame when it comes.)
    const awaited = allPlots().some((p) => p.layers().some((l) => l.awaited()));
    if (!left && !awaited) for (const p of allPlots()) if (p.arrived) timeRendering(p.arrived, perf.shown), (p.arrived = 0);
    if (left) requestFrame();
    const owd = state.kind === "owd";
    const ys = y.map(([a, b]) => (owd ? `${a.toFixed(3)}–${b.toFixed(3)} ms` : `${Math.round(a)}–${Math.round(b)}`)).join(" | ");
    $("where").textContent = `t ${x0.toFixed(6)}–${x1.toFixed(6)} s · ${owd ? "delay" : "seq"} ${ys} · zoom depth ${state.history.length}`;
  });
}

let loadTimer = 0;
/** Fetches for the current view: at once, or after input pauses (wheel, pan). */
export function loadAll(delay = 0) {
  clearTimeout(loadTimer);
  loadTimer = window.setTimeout(() => {
    if (delay) writeUrl();
    timeline?.load();
    plots.forEach((p, i) => p.load(offsetOf(i)));
    // New plots: drawn while their answers are computed, in a task of their own.
    if (allPlots().some((p) => !p.gen)) setTimeout(() => allPlots().forEach((p) => p.gen || p.warm()));
  }, delay);
}
