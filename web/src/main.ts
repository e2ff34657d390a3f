// The viewer page: connection list, time-sequence plot with linked panels, events, zoom.
// Input handlers change state and ask for a frame; one requestAnimationFrame draws everything;
// hover draws on an overlay canvas and never repaints the plot (STYLE.md §6).

import "./style.css";
import * as api from "./api";
import type { Conn, Dir, EventRow, Figure, Panels, PacketRow } from "./api";
import { AX, BOTTOM, LEFT, OP, RIGHT, TOP, axes, drawFigure, highlight, hit, ix, iy, markPoint, panelAxes, panelData, panelFrame, panelLines, prepare, seriesMax, si } from "./draw";
import type { Frame, PanelLine } from "./draw";
import DrawWorker from "./drawworker?worker&inline";
import { $, escapeHtml, status } from "./dom";
import { perf, timeRendering } from "./perf";
import { VirtualList, VirtualRows } from "./windowed";
import { DEFAULT_SORT, changed, readUrl, routeChanges, state, writeUrl } from "./state";
import type { Change, View } from "./state";

(window as unknown as { tcpscopePerf: typeof perf }).tcpscopePerf = perf;

// ---------- connection list ----------

const endpoints = api.endpoints;
const sum = (c: Conn, k: string) => ((c.a2b[k] as number) ?? 0) + ((c.b2a[k] as number) ?? 0);

const COLUMNS: { key: string; label: string; cell: (c: Conn) => string }[] = [
  { key: "id", label: "id", cell: (c) => String(c.id) },
  { key: "endpoints", label: "endpoints", cell: endpoints },
  { key: "state", label: "state", cell: (c) => c.state },
  { key: "duration_s", label: "dur s", cell: (c) => c.duration_s.toFixed(2) },
  { key: "a2b.payload_bytes", label: "bytes a→b", cell: (c) => si((c.a2b.payload_bytes as number) ?? 0) },
  { key: "a2b.rexmit_packets", label: "rexmit", cell: (c) => String(sum(c, "rexmit_packets")) },
  { key: "b2a.zero_window_adverts", label: "zwin", cell: (c) => String(sum(c, "zero_window_adverts")) },
  { key: "a2b.rtt_avg_ms", label: "rtt ms", cell: (c) => (c.a2b.rtt_avg_ms === null ? "" : (c.a2b.rtt_avg_ms as number).toFixed(1)) },
  { key: "severity", label: "severity", cell: (c) => (c.severity === null ? "" : c.severity.toFixed(2)) },
  { key: "verdict", label: "verdict", cell: (c) => c.verdict ?? "" },
];

/** Text sort keys (ascending first); the rest are numbers (worst, i.e. largest, first). */
const TEXT_KEYS = new Set(["id", "endpoints", "state", "verdict", "file"]);

let connRows: VirtualRows<Conn | undefined> | undefined;

// The list as the server (or a report) filters and sorts it, fetched a page at a time as the
// rows come into sight: rows not yet here are blank. A load is one query's fetching: `shown`,
// the one `listRows` holds; `pending`, a query asked for and not answered yet (its rows replace
// these when its first page comes, so the list does not go blank meanwhile).
const LIST_PAGE = 200;
interface ListLoad {
  q: api.ListQuery;
  key: string;
  abort: AbortController;
  pages: Set<number>;
}
const listLoad = (): ListLoad => {
  const q = { sort: state.sort, desc: state.desc, q: state.filter, boring: state.boring, from: 0, n: LIST_PAGE };
  return { q, key: JSON.stringify(q), abort: new AbortController(), pages: new Set() };
};
let listRows: (Conn | undefined)[] = [];
let listTotal = 0;
let shown: ListLoad = listLoad();
let pending: ListLoad | undefined;

/** Asks for page `k` of `load`'s list; its rows are shown when they come. */
function fetchListPage(k: number, load: ListLoad) {
  if (load.pages.has(k)) return;
  load.pages.add(k);
  listBusy(+1);
  api
    .connPage({ ...load.q, from: k * LIST_PAGE }, load.abort.signal)
    .then(
      (p) => showListPage(p, load),
      (e) => {
        load.pages.delete(k);
        if ((e as Error).name !== "AbortError") status(`connection list: ${(e as Error).message}`);
      },
    )
    .finally(() => listBusy(-1));
}

/** The list is `aria-busy` while rows are asked for (the tests wait on it too). */
let listAsking = 0;
function listBusy(d: number) {
  listAsking += d;
  $("list").ariaBusy = String(listAsking > 0);
}

function showListPage(p: api.ListPage, load: ListLoad) {
  if (load === pending) {
    // The first answer to a new query: its rows replace the list's.
    [listRows, listTotal, shown, pending] = [new Array(p.matched), p.total, load, undefined];
  } else if (load !== shown) return;
  p.conns.forEach((c, j) => (listRows[p.from + j] = c));
  connRows!.set(listRows);
  showCount();
}

const showCount = () => ($("count").textContent = `${listRows.length} of ${listTotal}`);

function renderList() {
  const head = $("conns").querySelector("thead")!;
  head.innerHTML = "";
  const tr = document.createElement("tr");
  for (const col of COLUMNS) {
    const th = document.createElement("th");
    th.textContent = col.label + (state.sort === col.key ? (state.desc ? " ▼" : " ▲") : "");
    th.dataset.key = col.key;
    th.onclick = () => {
      if (state.sort === col.key) state.desc = !state.desc;
      else [state.sort, state.desc] = [col.key, !TEXT_KEYS.has(col.key)];
      changed({ list: true });
    };
    tr.append(th);
  }
  head.append(tr);
  connRows ??= new VirtualRows<Conn | undefined>($("list"), $("conns").querySelector("tbody")!, COLUMNS.length, (c, i) => {
    const r = document.createElement("tr");
    if (!c) {
      // Not here yet: a blank row of the same height, and its page asked for.
      r.className = "pending";
      for (let k = 0; k < COLUMNS.length; k++) r.insertCell().textContent = "\u00a0";
      fetchListPage(Math.floor(i / LIST_PAGE), shown);
      return r;
    }
    r.dataset.id = String(c.id);
    if (state.ids.includes(c.id)) r.classList.add("sel");
    if (!api.plottable(c.id)) r.classList.add("noplot");
    for (const col of COLUMNS) {
      const td = document.createElement("td");
      td.textContent = col.cell(c);
      if (col.key === "verdict" || col.key === "endpoints") {
        td.title = td.textContent;
        td.className = col.key;
      }
      r.append(td);
    }
    if (c.boring) r.classList.add("boring");
    r.onclick = (e) => select(c.id, e.ctrlKey || e.metaKey || e.shiftKey);
    return r;
  });
  const load = listLoad();
  if (load.key === shown.key) {
    connRows.set(listRows);
    showCount();
  } else if (pending?.key !== load.key) {
    // A new sort or filter: what was asked for the old one is of no use.
    pending?.abort.abort();
    shown.abort.abort();
    pending = load;
    fetchListPage(0, load);
  }
  ($("sort") as HTMLSelectElement).value = state.sort;
  $("sort-dir").textContent = state.desc ? "▼" : "▲";
}

function select(id: number, compare: boolean) {
  if (!api.plottable(id)) {
    status(`connection ${id} is not plotted in this report`);
    return;
  }
  if (compare && state.ids.length && !state.ids.includes(id)) state.ids = [state.ids[0], id];
  else state.ids = [id];
  state.view = {};
  state.history = [];
  changed({ list: true, plots: true, events: true });
}

// ---------- plots ----------

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

class DataLayer {
  /** The canvas shown. */
  canvas = dataCanvas();
  /** With the worker: the other one, which the worker draws the next answer on. */
  private back: HTMLCanvasElement | null = null;
  box = document.createElement("div");
  /** The answer (ConnPlot.gen) and the frame it was drawn from and at. */
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
 * The drawing worker (drawworker.ts): the data layers are drawn and rasterized there, on
 * canvases handed to it, and the page only swaps them. Null where it cannot run (no
 * OffscreenCanvas, or it failed to start): the layers are then drawn on this thread, a few per
 * frame (BUDGET_MS).
 */
let painter: Worker | null = null;
/** Called when the worker finished a drawing (the benchmark's full redraw waits on it). */
let wake: (v?: unknown) => void = () => {};
try {
  if (typeof OffscreenCanvas !== "undefined" && "transferControlToOffscreen" in HTMLCanvasElement.prototype) {
    painter = new DrawWorker();
    painter.onmessage = (e) => {
      const m = e.data as { key: string; layer: number; gen: number; f: Frame; ask: string };
      const p = plots.find((p) => p.key === m.key);
      const layer = p?.layers()[m.layer];
      if (!p || !layer || p.gen !== m.gen) return;
      layer.ready = m;
      requestFrame();
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
      for (const p of plots) for (const l of p.layers()) l.reset();
      requestFrame();
      wake();
    };
  }
} catch {
  painter = null;
}

/**
 * A strip of a plot's axes (the labels left of it, the ticks under it, a panel's title): a
 * canvas covering only that part of the plot (`place` gives its box in the plot's css pixels
 * for a plot of w × h), redrawn only when what it shows (`key`) changes. The browser
 * rasterizes (in software here) and hands over every canvas drawn in a frame, whole: one
 * canvas over the whole plot for a few labels at its edges cost most of a frame.
 */
class AxisStrip {
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
function frameBox(parent: HTMLElement) {
  const b = document.createElement("div");
  b.className = "frame";
  // The canvas drew it with 1-px lines on the plot area's first and last pixel rows and columns.
  Object.assign(b.style, { left: `${LEFT}px`, right: `${RIGHT - 1}px`, top: `${TOP}px`, bottom: `${BOTTOM - 1}px` });
  parent.append(b);
}

/** Ticks under a panel (no labels: the plot's time axis labels them): this tall. */
const PANEL_TICKS = 6;
/** A panel's title and legend, over its plot area: this tall. */
const PANEL_TITLE = TOP + 18;

const PANEL_TITLES = ["b/s", "RTT ms", "bytes"];

let plotSerial = 0;

class ConnPlot {
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
    bindInput(this);
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

  dispose() {
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
    this.draw(x0, x1, y[i][0], y[i][1], [0, 0, 0], () => true);
    timeRendering(start, perf.warm);
  }

  async load(off = 0) {
    this.ctl?.abort();
    const ctl = (this.ctl = new AbortController());
    const v = { ...state.view };
    if (v.s0 !== undefined && v.s1 !== undefined) [v.s0, v.s1] = [v.s0 + off, v.s1 + off];
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
      const [fig, pan] = await Promise.all([
        api.tsg(this.id, state.dir, { ...v, w }, ctl.signal),
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
      if (h2.textContent !== fig.title) h2.textContent = h2.title = fig.title;
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
    const { f, pfs } = this.frames(x0, x1, y[i][0], y[i][1], panelMax(x0, x1));
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
    this.axes[0].draw(`${y0},${y1}`, [w, h], (ctx) => axes(ctx, f, "relative sequence number", true, undefined, AX.Y), force);
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

let plots: ConnPlot[] = [];

function rebuildPlots() {
  const cols = $("columns");
  for (const p of plots) p.dispose();
  cols.innerHTML = "";
  plots = state.ids.map((id) => new ConnPlot(id));
  if (!plots.length) cols.innerHTML = `<p class="empty">Select a connection (ctrl-click a second one to compare on one scale).</p>`;
  for (const p of plots) cols.append(p.el);
  cols.classList.toggle("two", plots.length === 2);
}

/**
 * The ranges drawn: one time range for all plots, and for each plot a sequence range of the
 * same span (the same bytes per pixel, so two connections compare on one scale, thesis fig.
 * 3.7/3.8). Where the view does not set them: the time range is the union of the figures', and
 * each plot's sequence range starts at its own figure's lowest value and spans the largest of
 * the figures' spans; the view's sequence range is the first plot's, the second's is offset by
 * the view's `o`.
 */
function ranges(): { x0: number; x1: number; y: [number, number][] } {
  const v = state.view;
  const figs = plots.map((p) => p.fig);
  const have = figs.filter((f): f is Figure => !!f);
  const x0 = v.t0 ?? 0;
  const x1 = v.t1 ?? Math.max(1e-6, ...have.map((f) => (v.t0 === undefined ? f.x[1] : f.last)));
  if (v.s0 !== undefined && v.s1 !== undefined) {
    const [s0, s1] = [v.s0, v.s1];
    return { x0, x1, y: plots.map((_, i) => { const o = offsetOf(i); return [s0 + o, s1 + o]; }) };
  }
  const span = have.length ? Math.max(...have.map((f) => f.y[1] - f.y[0])) : 1;
  const base = have.length ? Math.min(...have.map((f) => f.y[0])) : 0;
  return { x0, x1, y: figs.map((f) => { const y0 = f ? f.y[0] : base; return [y0, y0 + span]; }) };
}

/** Each panel's highest value over [x0, x1] across the plots: compared plots share the panels' scales too. */
function panelMax(x0: number, x1: number): number[] {
  const out = [0, 0, 0];
  for (const p of plots) p.lines.forEach((lines, k) => (out[k] = Math.max(out[k], seriesMax(lines, x0, x1))));
  return out;
}

/** Offset of plot i's sequence range from the first plot's, in the view. */
const offsetOf = (i: number) => (i === 0 ? 0 : (state.view.o ?? 0));

/**
 * Data drawn in one frame, at most (ms of the callback; at least one layer is drawn): a new
 * answer's layers beyond it wait for the next frame, shown moved meanwhile, so that one frame
 * with everything to draw does not miss its turn (the rasterization after the callback costs
 * about as much again).
 */
const BUDGET_MS = 6;

let frameRequested = false;
function requestFrame() {
  // Until a plot has an answer, frames have nothing to draw (`warm` drew the plots).
  if (frameRequested || (plots.length && plots.every((p) => !p.gen))) return;
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
    plots.forEach((p, i) => p.gen && (left = p.draw(x0, x1, y[i][0], y[i][1], pmax, mayDraw) || left));
    const end = performance.now();
    perf.frames.push(end - start);
    timeRendering(start);
    // An answer is on screen once the frame that drew its last layer is rendered.
    // (A layer awaited from the worker brings its own frame when it comes.)
    const awaited = plots.some((p) => p.layers().some((l) => l.awaited()));
    if (!left && !awaited) for (const p of plots) if (p.arrived) timeRendering(p.arrived, perf.shown), (p.arrived = 0);
    if (left) requestFrame();
    const seq = y.map(([a, b]) => `${Math.round(a)}–${Math.round(b)}`).join(" | ");
    $("where").textContent = `t ${x0.toFixed(6)}–${x1.toFixed(6)} s · seq ${seq} · zoom depth ${state.history.length}`;
  });
}

let loadTimer = 0;
/** Fetches for the current view: at once, or after input pauses (wheel, pan). */
function loadAll(delay = 0) {
  clearTimeout(loadTimer);
  loadTimer = window.setTimeout(() => {
    if (delay) writeUrl();
    plots.forEach((p, i) => p.load(offsetOf(i)));
    // New plots: drawn while their answers are computed, in a task of their own.
    if (plots.some((p) => !p.gen)) setTimeout(() => plots.forEach((p) => p.gen || p.warm()));
  }, delay);
}

// ---------- zoom, pan, history ----------

/** Shows view `v` (`push`: the one left goes on the history); `also`: what else changed with it. */
function setView(v: View, push = true, delay = 0, also: Change = {}) {
  if (push) state.history.push({ ...state.view });
  state.view = v;
  changed({ ...also, view: true, delay });
}

/** The view as drawn, explicit: the first plot's sequence range and the second's offset. */
function currentBox(): View {
  const { x0, x1, y } = ranges();
  const b: View = { t0: x0, t1: x1, s0: y[0]?.[0] ?? 0, s1: y[0]?.[1] ?? 1 };
  if (y.length > 1) b.o = y[1][0] - y[0][0];
  return b;
}

/** Plot p's sequence number as the first plot's (the view's coordinates), as drawn now. */
function toFirst(p: ConnPlot, seq: number): number {
  const { y } = ranges();
  const i = plots.indexOf(p);
  return i > 0 ? seq - (y[i][0] - y[0][0]) : seq;
}

function back() {
  const v = state.history.pop();
  if (v !== undefined) {
    state.view = v;
    changed({ view: true });
  }
}

function reset() {
  if (state.view.t0 === undefined && state.view.s0 === undefined) return;
  setView({});
}

function zoomAt(p: ConnPlot, f: Frame, px: number, py: number, factor: number, push: boolean) {
  const b = currentBox();
  const x = ix(f, px), y = toFirst(p, iy(f, py));
  setView({ t0: x - (x - b.t0!) * factor, t1: x + (b.t1! - x) * factor, s0: y - (y - b.s0!) * factor, s1: y + (b.s1! - y) * factor, o: b.o }, push, 80);
}

function panBy(dxFrac: number, dyFrac: number, push: boolean) {
  const b = currentBox();
  const dx = (b.t1! - b.t0!) * dxFrac, dy = (b.s1! - b.s0!) * dyFrac;
  setView({ t0: b.t0! + dx, t1: b.t1! + dx, s0: b.s0! + dy, s1: b.s1! + dy, o: b.o }, push, 80);
}

let lastWheel = 0;

function bindInput(p: ConnPlot) {
  const o = p.overlay;
  let drag: { x: number; y: number; pan: boolean; box: View } | null = null;
  const pos = (e: MouseEvent) => {
    const r = p.box();
    return [e.clientX - r.left, e.clientY - r.top];
  };
  o.addEventListener("mousedown", (e) => {
    if (e.button !== 0 && e.button !== 1) return;
    const [x, y] = pos(e);
    drag = { x, y, pan: e.shiftKey || e.button === 1, box: currentBox() };
    if (drag.pan) state.history.push({ ...state.view });
    e.preventDefault();
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag || !p.frame) return;
    const [x, y] = pos(e);
    if (drag.pan) {
      const f = p.frame;
      const dt = ((x - drag.x) / (f.w - LEFT - RIGHT)) * (drag.box.t1! - drag.box.t0!);
      const ds = ((y - drag.y) / (f.h - TOP - BOTTOM)) * (drag.box.s1! - drag.box.s0!);
      setView({ t0: drag.box.t0! - dt, t1: drag.box.t1! - dt, s0: drag.box.s0! + ds, s1: drag.box.s1! + ds, o: drag.box.o }, false, 60);
    } else {
      p.drawOverlay([Math.min(drag.x, x), Math.min(drag.y, y), Math.max(drag.x, x), Math.max(drag.y, y)]);
    }
  });
  window.addEventListener("mouseup", (e) => {
    if (!drag || !p.frame) return;
    const d = drag;
    drag = null;
    if (d.pan) return;
    const [x, y] = pos(e);
    p.drawOverlay();
    if (Math.abs(x - d.x) < 5 || Math.abs(y - d.y) < 5) return;
    const f = p.frame;
    const [ta, tb] = [ix(f, d.x), ix(f, x)].sort((a, b) => a - b);
    const [sa, sb] = [toFirst(p, iy(f, d.y)), toFirst(p, iy(f, y))].sort((a, b) => a - b);
    setView({ t0: ta, t1: tb, s0: sa, s1: sb, o: currentBox().o });
  });
  o.addEventListener("wheel", (e) => {
    if (!p.frame) return;
    e.preventDefault();
    const [x, y] = pos(e);
    const now = performance.now();
    // One history step per wheel gesture, not per notch.
    zoomAt(p, p.frame, x, y, e.deltaY < 0 ? 0.8 : 1.25, now - lastWheel > 400);
    lastWheel = now;
  }, { passive: false });
  o.addEventListener("contextmenu", (e) => {
    e.preventDefault();
    back();
  });
  o.addEventListener("mousemove", (e) => {
    if (drag || !p.frame || !p.fig) return;
    const [x, y] = pos(e);
    const m = hit(p.frame, p.fig, x, y);
    if (m !== p.hover) {
      p.hover = m;
      p.drawOverlay();
      showTip(p, m, e.clientX, e.clientY);
    } else if (m) moveTip(e.clientX, e.clientY);
  });
  o.addEventListener("mouseleave", () => {
    p.hover = -1;
    p.drawOverlay();
    $("tip").hidden = true;
  });
}

// ---------- hover tooltip ----------

const packetCache = new Map<string, Promise<PacketRow | null>>();

/**
 * The tooltip is placed by a transform from what is known without asking the browser: the
 * pointer, the window's size (kept from its resize events) and the tip's own size, which a
 * ResizeObserver reports once the browser has laid it out (before it paints that frame, when
 * the tip is placed again). Reading its size or the window's after writing its content had the
 * browser lay the page out in the hover handler, twice per hovered mark (23 ms on the first).
 */
const tipAt = { cx: 0, cy: 0, w: 0, h: 0 };
// The window's size ("view" is the plot's viewport everywhere else).
let win = { w: window.innerWidth, h: window.innerHeight };
window.addEventListener("resize", () => {
  win = { w: window.innerWidth, h: window.innerHeight };
  plots.forEach((p) => p.moved());
});
// Any scroll (the plots' column, the window) may move a plot under the pointer.
document.addEventListener("scroll", () => plots.forEach((p) => p.moved()), { capture: true, passive: true });
new ResizeObserver((es) => {
  const b = es[es.length - 1].borderBoxSize?.[0];
  if (!b) return;
  [tipAt.w, tipAt.h] = [b.inlineSize, b.blockSize];
  placeTip();
}).observe($("tip"));

function placeTip() {
  const x = Math.max(0, Math.min(tipAt.cx + 14, win.w - tipAt.w - 4));
  const y = Math.max(0, Math.min(tipAt.cy + 14, win.h - tipAt.h - 4));
  $("tip").style.transform = `translate(${x}px, ${y}px)`;
}

function moveTip(cx: number, cy: number) {
  [tipAt.cx, tipAt.cy] = [cx, cy];
  placeTip();
}

async function showTip(p: ConnPlot, m: number, cx: number, cy: number) {
  const tip = $("tip");
  const fig = p.fig;
  if (m < 0 || !fig || Number.isNaN(fig.frame[m])) {
    tip.hidden = true;
    return;
  }
  const frame = fig.frame[m], n = fig.count[m], cls = fig.classes[fig.cls[m]];
  const agg = n > 1 ? `<div>${n} packets in this pixel column; first:</div>` : "";
  tip.innerHTML = `<b>${escapeHtml(cls)}</b>${agg}<div>frame ${frame}</div>`;
  tip.hidden = false;
  moveTip(cx, cy);
  const key = `${p.id}:${frame}`;
  if (!packetCache.has(key)) packetCache.set(key, api.packet(p.id, frame).catch(() => null));
  const row = await packetCache.get(key)!;
  if (p.hover !== m || p.fig !== fig) return;
  const evs = row ? row.events : state.events.filter((e) => e.frame === frame);
  const table = row
    ? `<table class="pkt"><tr><th>frame</th><th>time s</th><th>dir</th><th>seq</th><th>ack</th><th>win</th><th>len</th><th>flags</th></tr>
       <tr><td>${row.frame}</td><td>${row.t.toFixed(6)}</td><td>${row.dir}</td><td>${row.seq}</td><td>${row.ack ?? ""}</td><td>${row.win}</td><td>${row.len}</td><td>${row.flags}</td></tr></table>`
    : `<div>frame ${frame}</div>`;
  const evHtml = evs.map((e) => `<li>${escapeHtml(e.kind)} ${escapeHtml(e.text)}</li>`).join("");
  tip.innerHTML = `<b>${escapeHtml(cls)}</b>${agg}${table}${evHtml ? `<ul>${evHtml}</ul>` : ""}`;
  moveTip(cx, cy);
}

// ---------- events ----------

let eventList: VirtualList<EventRow> | undefined;

async function loadEvents() {
  eventList ??= new VirtualList<EventRow>($("events"), (e) => {
    const li = document.createElement("li");
    li.textContent = `${e.t.toFixed(6)} ${e.dir} ${e.kind} ${e.text}`;
    li.onclick = () => jumpTo(e);
    return li;
  });
  eventList.set([]);
  state.events = [];
  $("ev-count").textContent = "";
  if (!state.ids.length) return;
  try {
    const r = await api.events(state.ids[0]);
    state.events = r.events;
    $("ev-count").textContent = `(${r.events.length}${r.more ? ` + ${r.more} more` : ""})`;
    eventList.set(r.events);
  } catch (e) {
    status(`events: ${(e as Error).message}`);
  }
}

/** Shows an event: its data direction's plot, a time window around it, its packet marked. */
function jumpTo(e: EventRow) {
  const dir = e.data_dir;
  const { x0, x1 } = ranges();
  const last = Math.max(...plots.map((p) => p.fig?.last ?? 0), x1);
  const span = Math.max(1e-4, Math.min(x1 - x0, last / 20));
  state.focusFrame = e.frame;
  const turned = dir !== state.dir;
  state.dir = dir;
  setView({ t0: e.t - span / 2, t1: e.t + span / 2 }, true, 0, { dir: turned });
}

// ---------- wiring ----------

/** What a change of the state redoes (state.changed): the panels concerned. */
function onChange(what: Change) {
  // Another direction: the figures shown are not its.
  if (what.dir) plots.forEach((p) => p.drop());
  if (what.list) renderList();
  if (what.plots) rebuildPlots();
  if (what.events) loadEvents();
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-dir]")) b.classList.toggle("on", b.dataset.dir === state.dir);
  if (what.plots || what.view) {
    requestFrame();
    loadAll(what.delay ?? 0);
  }
}

/** The splitter between the list and the plots: drag to resize the list; the width is kept. */
function bindSplitter() {
  const side = $("side"), split = $("split");
  const KEY = "tcpscope.side-width";
  const apply = (w: number | null) => {
    if (w === null) side.style.removeProperty("--side-w");
    else side.style.setProperty("--side-w", `${Math.round(w)}px`);
    // The plots follow (ConnPlot.resized).
  };
  try {
    const w = Number(localStorage.getItem(KEY));
    if (w > 0) side.style.setProperty("--side-w", `${w}px`);
  } catch {
    // No storage (a report opened from a file in some browsers): the default width.
  }
  split.addEventListener("mousedown", (e) => {
    e.preventDefault();
    const x0 = e.clientX, w0 = side.getBoundingClientRect().width;
    split.classList.add("drag");
    const move = (m: MouseEvent) => apply(Math.max(260, Math.min(window.innerWidth * 0.85, w0 + m.clientX - x0)));
    const up = () => {
      split.classList.remove("drag");
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      try {
        localStorage.setItem(KEY, String(Math.round(side.getBoundingClientRect().width)));
      } catch {
        // As above.
      }
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  });
  split.addEventListener("dblclick", () => {
    try {
      localStorage.removeItem(KEY);
    } catch {
      // As above.
    }
    apply(null);
  });
}

async function main() {
  routeChanges(onChange);
  readUrl();
  bindSplitter();
  let keys: string[];
  try {
    let list: api.ListPage;
    try {
      list = await api.connPage((shown = listLoad()).q);
    } catch (e) {
      // A link naming a sort key these traces do not have: the default order instead.
      if (state.sort === DEFAULT_SORT) throw e;
      [state.sort, state.desc] = [DEFAULT_SORT, true];
      list = await api.connPage((shown = listLoad()).q);
    }
    [listRows, listTotal] = [new Array(list.matched), list.total];
    list.conns.forEach((c, j) => (listRows[j] = c));
    shown.pages.add(0);
    keys = list.keys;
    $("traces").textContent = list.traces.map((t) => `${t.name ?? "?"} (${t.packets} packets${t.error ? `, error: ${t.error}` : ""})`).join(" · ");
    if (api.report) {
      const { plotted, listed, total } = api.report.report;
      $("traces").textContent += ` · report: plots of connections ${plotted.join(", ")}`;
      if (listed < total) $("traces").textContent += `; the ${listed} most troubled of ${total} connections listed`;
    }
  } catch (e) {
    status(`connection list: ${(e as Error).message}`);
    return;
  }
  const sort = $("sort") as HTMLSelectElement;
  sort.innerHTML = keys.map((k) => `<option>${k}</option>`).join("");
  sort.onchange = () => {
    state.sort = sort.value;
    state.desc = !TEXT_KEYS.has(sort.value);
    changed({ list: true });
  };
  $("sort-dir").onclick = () => {
    state.desc = !state.desc;
    changed({ list: true });
  };
  const filter = $("filter") as HTMLInputElement;
  filter.value = state.filter;
  filter.oninput = () => {
    state.filter = filter.value;
    changed({ list: true });
  };
  const boring = $("show-boring") as HTMLInputElement;
  boring.checked = state.boring;
  boring.onchange = () => {
    state.boring = boring.checked;
    changed({ list: true });
  };
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-dir]"))
    b.onclick = () => {
      state.dir = b.dataset.dir as Dir;
      changed({ dir: true, view: true });
    };
  $("back").onclick = back;
  $("reset").onclick = reset;
  window.addEventListener("keydown", (e) => {
    if ((e.target as HTMLElement).tagName === "INPUT") return;
    const keys: Record<string, () => void> = {
      Backspace: back,
      Home: reset,
      ArrowLeft: () => panBy(-0.1, 0, true),
      ArrowRight: () => panBy(0.1, 0, true),
      ArrowUp: () => panBy(0, 0.1, true),
      ArrowDown: () => panBy(0, -0.1, true),
    };
    const k = keys[e.key];
    if (k && plots.length) {
      e.preventDefault();
      k();
    }
  });
  window.addEventListener("hashchange", () => {
    readUrl();
    changed({ list: true, plots: true, events: true });
  });
  if (!state.ids.length) {
    const first = api.report ? api.report.report.plotted[0] : listRows[0]?.id;
    if (first !== undefined) state.ids = [first];
  }
  changed({ list: true, plots: true, events: true });
}

// For the browser tests and the benchmark: where a mark of a class (prefix) is drawn that the
// pointer would hover there, in client pixels, and its frame.
(window as unknown as { tcpscopeMarkAt: unknown }).tcpscopeMarkAt = (prefix: string, plot = 0): [number, number, number | null] | null => {
  const p = plots[plot];
  if (!p?.frame || !p.fig) return null;
  const f = p.frame;
  const r = p.overlay.getBoundingClientRect();
  const fig = p.fig;
  for (let i = 0; i < fig.n; i++) {
    if (!fig.classes[fig.cls[i]].startsWith(prefix)) continue;
    const [mx, my] = markPoint(f, fig, i);
    // Whole client pixels, as a pointer has them; one the pointer would hover there (not a
    // segment drawn over it).
    const [cx, cy] = [Math.round(r.left + mx), Math.round(r.top + my)];
    const [x, y] = [cx - r.left, cy - r.top];
    if (x > LEFT && x < f.w - RIGHT && y > TOP && y < f.h - BOTTOM && hit(f, fig, x, y) === i) return [cx, cy, Number.isNaN(fig.frame[i]) ? null : fig.frame[i]];
  }
  return null;
};

// For the tests: the page's reading of a packed figure, back in the JSON answer's shape
// (docs/viewer.md), to compare with the JSON answer of the same view.
(window as unknown as { tcpscopeMarksOf: unknown }).tcpscopeMarksOf = async (conn: number, dir: Dir, v: api.Viewport) => {
  const f = await api.tsg(conn, dir, v);
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
  return { x: f.x, y: f.y, title: f.title, marks };
};

// For the tests: who draws the data layers ("worker": drawworker.ts; "page": this thread).
(window as unknown as { tcpscopeDrawnBy: unknown }).tcpscopeDrawnBy = () => (painter ? "worker" : "page");

// For the tests: each plot's drawn ranges and pixel box.
(window as unknown as { tcpscopeFrames: unknown }).tcpscopeFrames = () => plots.map((p) => p.frame);

// For the benchmark: draws the current view `n` times in a row, every layer (data, axes,
// overlay) as if all were new, each frame read back from its canvases so that it is rasterized
// then (the browser would otherwise defer and merge the work); returns each frame's ms. With
// the drawing worker, a frame ends once the worker's drawings are swapped in (the data layers
// are rasterized there).
(window as unknown as { tcpscopeRedraw: unknown }).tcpscopeRedraw = async (n: number): Promise<number[]> => {
  const out = [];
  for (let k = 0; k < n; k++) {
    const start = performance.now();
    const { x0, x1, y } = ranges();
    const pmax = panelMax(x0, x1);
    plots.forEach((p, i) => p.draw(x0, x1, y[i][0], y[i][1], pmax, () => true, true));
    while (plots.some((p) => p.layers().some((l) => l.awaited()))) {
      await new Promise((r) => (wake = r));
      plots.forEach((p) => p.layers().forEach((l) => l.place()));
    }
    // (The worker's canvases are rasterized there, before it reports them drawn; they cannot be read here.)
    for (const p of plots) for (const c of p.el.querySelectorAll<HTMLCanvasElement>(painter ? "canvas:not(.data)" : "canvas")) c.getContext("2d")?.getImageData(0, 0, 1, 1);
    out.push(performance.now() - start);
  }
  return out;
};

main();
