// The timeline of a monitor recording (`tcpscope view run.tsm [trace.pcap]`; docs/monitor.md):
// for one monitored connection, lanes on the page's time axis (seconds since its first sample),
// from the top: the application events with NetLogger lifelines (one lane per event name, a line
// per guid through its stages, the first stage at the bottom), what limited the sender per interval (network blue, receiver
// yellow, sender red, stacked shares), cwnd / ssthresh / bytes in flight, RTT, delivery rate and
// interval bandwidth, retransmits per sample, host and process CPU. Each lane is a panel as the
// packet plots' are (a DataLayer drawn by the worker with draw.ts's panelData, AxisStrips, a
// frame box); one overlay over all lanes is the plot's `Surface`, so zoom.ts and tooltip.ts drive
// it as they drive the packet plots (its y is its own: zooming it changes time only). The
// series come from api/timeline, reduced by the server to the pixel columns.

import * as api from "./api";
import type { RawSeries, Timeline } from "./api";
import { AX, BOTTOM, LEFT, RIGHT, TOP, axes, panelAxes, panelFrame, panelData, prepare, seriesMax, si, sx, sy } from "./draw";
import type { Frame, PanelLine } from "./draw";
import { escapeHtml, status } from "./dom";
import { AxisStrip, DataLayer, frameBox, painter } from "./layers";
import { perf, timeRendering } from "./perf";
import { loadAll, requestFrame } from "./plot";
import type { TimePlot } from "./plot";
import { state } from "./state";

/** Plot-area height of a series lane (css px); the events lane grows with its names. */
const LANE_PLOT = 56;
/** Lanes overlap by this much: a lane's bottom margin (BOTTOM) holds only its ticks. */
const OVERLAP = BOTTOM - 8;
/** Height of one event name's row in the events lane. */
const EVENT_ROW = 16;
/** Pointer distance (px) within which a sample is hovered. */
const RADIUS = 8;

const XTITLE = "time (s since the connection's first sample)";

/** A lane: its title, and how its lines are made from an answer. */
interface LaneDef {
  key: string;
  title: string;
  lines: (d: Timeline) => PanelLine[];
  /** The unit of its values in the tooltip ("%", "B", "b/s", "ms", "" for a count or share). */
  unit: string;
}

/** A series of the answer as draw.ts draws it (times as offsets from the first). */
function series(r: RawSeries): api.Series {
  const ot = r.t.length ? r.t[0] : 0;
  return { ot, t: Float32Array.from(r.t, (x) => x - ot), lo: Float32Array.from(r.lo), hi: Float32Array.from(r.hi), agg: r.agg };
}

/** The triage as three stacked step areas (drawn sender first, so network is on top). */
function limitLines(d: Timeline): PanelLine[] {
  const t: number[] = [], n: number[] = [], nr: number[] = [], nrs: number[] = [];
  d.limits.forEach((l, i) => {
    t.push(l.t0);
    n.push(l.network);
    nr.push(l.network + l.receiver);
    nrs.push(l.network + l.receiver + l.sender);
    // A gap (intervals without a triage) or the end: back to 0 until the next.
    const next = d.limits[i + 1];
    if (!next || next.t0 > l.t1 + 1e-9) {
      t.push(l.t1);
      n.push(0);
      nr.push(0);
      nrs.push(0);
    }
  });
  const s = (v: number[]): RawSeries => ({ t, lo: v, hi: v, agg: false });
  return [
    { s: series(s(nrs)), color: "#e0181c", label: "sender", step: true, fill: true },
    { s: series(s(nr)), color: "#c99a00", label: "receiver", step: true, fill: true },
    { s: series(s(n)), color: "#2b6fd6", label: "network", step: true, fill: true },
  ];
}

/** The events lane: a lifeline per guid (events of one guid joined in time order), then the events as dots. */
function eventLines(d: Timeline): PanelLine[] {
  // The first stage at the bottom (the server orders the names by stage).
  const y = (lane: number) => lane + 0.5;
  const byGuid = new Map<string, { t: number[]; v: number[] }>();
  for (const e of d.events) {
    if (e.guid === null) continue;
    let g = byGuid.get(e.guid);
    if (!g) byGuid.set(e.guid, (g = { t: [], v: [] }));
    g.t.push(e.t);
    g.v.push(y(e.lane));
  }
  const out: PanelLine[] = [];
  for (const [guid, g] of byGuid)
    if (g.t.length > 1) out.push({ s: series({ t: g.t, lo: g.v, hi: g.v, agg: false }), color: "#8a2be2", label: guid, unlabelled: true });
  const v = d.events.map((e) => y(e.lane));
  out.push({ s: series({ t: d.events.map((e) => e.t), lo: v, hi: v, agg: false }), color: "#5a1a9a", label: "event (lines join a guid)", dots: true });
  return out;
}

const LANES: LaneDef[] = [
  { key: "events", title: "events", unit: "", lines: eventLines },
  { key: "limits", title: "limited by", unit: "", lines: limitLines },
  {
    key: "cwnd",
    title: "bytes",
    unit: "B",
    lines: (d) => [
      { s: series(d.series.flight_bytes), color: "#000000", label: "in flight", step: true },
      { s: series(d.series.ssthresh_bytes), color: "#8a2be2", label: "ssthresh", step: true },
      { s: series(d.series.cwnd_bytes), color: "#f07800", label: "cwnd", step: true },
    ],
  },
  { key: "rtt", title: "RTT ms", unit: "ms", lines: (d) => [{ s: series(d.series.rtt_ms), color: "#1a9a3a", label: "SmoothedRTT" }] },
  {
    key: "rate",
    title: "b/s",
    unit: "b/s",
    lines: (d) => [
      { s: series(d.series.int_bw_bps), color: "#2b6fd6", label: "interval bandwidth", step: true },
      { s: series(d.series.delivery_bps), color: "#f07800", label: "delivery rate" },
    ],
  },
  { key: "retrans", title: "retransmits", unit: "", lines: (d) => [{ s: series(d.series.retrans), color: "#e0181c", label: "segments per sample", dots: true }] },
  {
    key: "cpu",
    title: "CPU %",
    unit: "%",
    lines: (d) => [
      { s: series(d.cpu.host_pct), color: "#777777", label: "host (user + system)" },
      { s: series(d.cpu.proc_pct), color: "#c2185b", label: "--pid process" },
    ],
  },
];

let serial = 0;

export class TimelinePlot implements TimePlot {
  el: HTMLElement;
  key = `timeline:${this.id}#${++serial}`;
  /** The lanes' container, which the overlay covers. */
  private box_: HTMLElement;
  overlay: HTMLCanvasElement;
  private lanes: HTMLElement[];
  private data: DataLayer[];
  private strips: AxisStrip[][];
  /** Each lane's lines, from the last answer. */
  lines: PanelLine[][] = [];
  d?: Timeline;
  gen = 0;
  arrived = 0;
  frame?: Frame;
  hover = -1;
  private ctl?: AbortController;
  private inked = false;
  /** Each lane's frame as last drawn. */
  private frames: Frame[] = [];
  /** Each lane's height (css px), as set (read from here, not from the layout). */
  private heights: number[] = LANES.map(() => LANE_PLOT + TOP + BOTTOM);
  private placed: DOMRect | null = null;
  private removed = new AbortController();
  readonly gone = this.removed.signal;
  private width = 0;
  private resized = new ResizeObserver(() => {
    this.moved();
    const w = this.box_.clientWidth;
    if (w === this.width) return;
    const first = !this.width;
    this.width = w;
    requestFrame();
    if (!first) loadAll(150);
  });

  constructor(public id: number) {
    this.el = document.createElement("div");
    this.el.className = "plot timeline";
    this.el.dataset.mon = String(id);
    this.el.append(document.createElement("h2"));
    this.box_ = document.createElement("div");
    this.box_.className = "lanes";
    this.overlay = document.createElement("canvas");
    this.overlay.className = "overlay";
    this.lanes = [];
    this.data = [];
    this.strips = [];
    LANES.forEach((def, k) => {
      const div = document.createElement("div");
      div.className = `panel lane ${def.key}`;
      div.style.height = `${LANE_PLOT + TOP + BOTTOM}px`;
      if (k < LANES.length - 1) div.style.marginBottom = `-${OVERLAP}px`;
      this.data.push(new DataLayer(div, this.key, k));
      frameBox(div);
      this.strips.push([
        new AxisStrip(div, (_, h) => [0, 0, LEFT, h]),
        new AxisStrip(div, (w, h) => [0, h - BOTTOM, w, k === LANES.length - 1 ? BOTTOM : 6]),
        new AxisStrip(div, (w) => [LEFT, 0, w - LEFT - RIGHT, TOP + 18]),
      ]);
      this.box_.append(div);
      this.lanes.push(div);
    });
    this.box_.append(this.overlay);
    this.el.append(this.box_);
    const legend = document.createElement("div");
    legend.className = "legend";
    this.el.append(legend);
    this.resized.observe(this.box_);
  }

  layers(): DataLayer[] {
    return this.data;
  }

  /** The end of its data, s (undefined: no answer yet). */
  last(): number | undefined {
    return this.d?.last;
  }

  box(): DOMRect {
    return (this.placed ??= this.overlay.getBoundingClientRect());
  }

  moved() {
    this.placed = null;
  }

  dispose() {
    this.removed.abort();
    painter?.postMessage({ forget: this.key });
    this.resized.disconnect();
    this.ctl?.abort();
  }

  private plotWidth(): number {
    return Math.max(1, (this.width || this.box_.clientWidth) - LEFT - RIGHT);
  }

  warm() {
    const start = performance.now();
    const v = state.view;
    this.draw(v.t0 ?? 0, v.t1 ?? 1, () => true);
    timeRendering(start, perf.warm);
  }

  async load() {
    this.ctl?.abort();
    const ctl = (this.ctl = new AbortController());
    const v = state.view;
    const start = performance.now();
    try {
      const d = await api.timeline(this.id, { t0: v.t0, t1: v.t1, w: this.plotWidth() }, ctl.signal);
      if (ctl.signal.aborted) return;
      perf.fetches.push(performance.now() - start);
      // The events lane is as tall as its names need.
      const ev = this.lanes[0];
      this.heights[0] = Math.max(LANE_PLOT, d.lanes.length * EVENT_ROW + 18) + TOP + BOTTOM;
      const h = `${this.heights[0]}px`;
      if (ev.style.height !== h) ev.style.height = h;
      this.d = d;
      // Series the recording lacks (no --pid, a kernel without a field) are left out, legend too.
      this.lines = LANES.map((l) => l.lines(d).filter((x) => x.s.t.length > 0));
      this.gen++;
      // Its layers are numbered from 0, each a lane (drawworker.ts).
      painter?.postMessage({ data: this.key, gen: this.gen, lines: this.lines, first: 0 });
      this.arrived = performance.now();
      this.hover = -1;
      const h2 = this.el.querySelector("h2")!;
      if (h2.textContent !== d.title) h2.textContent = h2.title = d.title;
      const legend = [
        `<span><i style="background:#2b6fd6"></i>network-limited</span>`,
        `<span><i style="background:#c99a00"></i>receiver-limited</span>`,
        `<span><i style="background:#e0181c"></i>sender-limited</span>`,
        `<span><i style="background:#8a2be2"></i>lifeline: one guid through its stages</span>`,
        d.events_more ? `<span class="remark">${d.events_more} more events in view: zoom in to see them</span>` : "",
      ].join("");
      const el = this.el.querySelector(".legend") as HTMLElement;
      if (el.dataset.html !== legend) el.innerHTML = el.dataset.html = legend;
      requestFrame();
    } catch (e) {
      if ((e as Error).name !== "AbortError") status(`timeline of connection ${this.id}: ${(e as Error).message}`);
    }
  }

  /** Lane k's frame over [x0, x1] (each lane its own y: 0 to its highest value in view, or its rows). */
  private laneFrame(k: number, x0: number, x1: number, w: number): Frame {
    const h = this.heights[k];
    if (LANES[k].key === "events") return { x0, x1, y0: 0, y1: Math.max(1, this.d?.lanes.length ?? 1) + 18 / EVENT_ROW, w, h };
    if (LANES[k].key === "limits") return panelFrame(x0, x1, w, h, 1);
    return panelFrame(x0, x1, w, h, seriesMax(this.lines[k] ?? [], x0, x1));
  }

  /** Brings the lanes to [x0, x1]; returns whether a lane was left for a later frame. */
  draw(x0: number, x1: number, mayDraw: () => boolean, force = false): boolean {
    const w = this.width || this.box_.clientWidth;
    this.frames = LANES.map((_, k) => this.laneFrame(k, x0, x1, w));
    this.frame = { x0, x1, y0: 0, y1: 1, w, h: this.laneTop(LANES.length - 1) + this.heights[LANES.length - 1] };
    let left = false;
    for (const l of this.data) l.place();
    this.data.forEach((layer, k) => {
      const f = this.frames[k];
      const lines = this.lines[k];
      if (force || layer.stale(this.gen, f, true)) {
        if (!lines) layer.clear(this.gen, f);
        else if (painter) layer.ask(this.gen, f, true, force);
        else if (force || mayDraw()) layer.draw(this.gen, f, (ctx) => panelData(ctx, f, lines));
        else left = true;
      }
      layer.show(f);
      const last = k === LANES.length - 1;
      const [ya, xa, ta] = this.strips[k];
      const def = LANES[k];
      const names = this.d?.lanes ?? [];
      ya.draw(def.key === "events" ? names.join() : `${f.y0},${f.y1}`, [w, f.h], (ctx) => (def.key === "events" ? this.eventLabels(ctx, f, names) : axes(ctx, f, "", false, (l) => si(Number(l)), AX.Y)));
      xa.draw(`${x0},${x1}`, [w, f.h], (ctx) => axes(ctx, f, "", last, undefined, AX.X, XTITLE));
      ta.draw((lines ?? []).map((l) => l.label).join(), [w, f.h], (ctx) => panelAxes(ctx, f, def.title, lines ?? [], AX.TITLE));
    });
    if (force || this.inked || this.hover >= 0) this.drawOverlay();
    return left;
  }

  /** The events lane's labels: each event name at its row. */
  private eventLabels(ctx: CanvasRenderingContext2D, f: Frame, names: string[]) {
    ctx.save();
    ctx.fillStyle = "#333";
    ctx.textAlign = "right";
    names.forEach((n, i) => ctx.fillText(n.length > 13 ? n.slice(0, 12) + "…" : n, LEFT - 6, sy(f, i + 0.5) + 3));
    ctx.restore();
  }

  /** The lane under overlay row `py` (-1: none) and that lane's top in the overlay. */
  private laneAt(py: number): [number, number] {
    let top = 0;
    for (let k = 0; k < this.lanes.length; k++) {
      const h = this.heights[k];
      if (py >= top + TOP && py <= top + h - BOTTOM) return [k, top];
      top += h - (k < this.lanes.length - 1 ? OVERLAP : 0);
    }
    return [-1, 0];
  }

  private laneTop(k: number): number {
    let top = 0;
    for (let j = 0; j < k; j++) top += this.heights[j] - OVERLAP;
    return top;
  }

  /** Item numbering: lane · 2^24 + line · 2^16 + point. */
  private static item = (k: number, l: number, i: number) => k * 2 ** 24 + l * 2 ** 16 + i;
  private static parts = (m: number): [number, number, number] => [Math.floor(m / 2 ** 24), Math.floor(m / 2 ** 16) % 256, m % 2 ** 16];

  /** The sample (or event) nearest the pointer in the lane under it, within RADIUS px. */
  hit(x: number, y: number): number | undefined {
    if (!this.frame || !this.d) return undefined;
    const [k, top] = this.laneAt(y);
    if (k < 0) return -1;
    const f = this.frames[k];
    const py = y - top;
    let best = -1, bd = RADIUS * RADIUS;
    const lines = this.lines[k] ?? [];
    lines.forEach((l, j) => {
      // The events lane: its events (the last line), not the lifelines between them.
      if (LANES[k].key === "events" && j !== lines.length - 1) return;
      const { ot, t, lo, hi } = l.s;
      for (let i = 0; i < t.length; i++) {
        const dx = sx(f, ot + t[i]) - x;
        if (Math.abs(dx) > RADIUS) continue;
        // A stacked share: anywhere in its band.
        const inBand = l.fill && py <= sy(f, 0) && py >= sy(f, hi[i]);
        const dy = inBand ? 0 : Math.min(Math.abs(sy(f, hi[i]) - py), Math.abs(sy(f, lo[i]) - py));
        const dd = dx * dx + dy * dy;
        if (dd < bd) [bd, best] = [dd, TimelinePlot.item(k, j, i)];
      }
    });
    return best;
  }

  tip(m: number): { html: string } | null {
    const d = this.d;
    if (m < 0 || !d) return null;
    const [k, j, i] = TimelinePlot.parts(m);
    const def = LANES[k], l = this.lines[k]?.[j];
    if (!l || i >= l.s.t.length) return null;
    const t = l.s.ot + l.s.t[i];
    const at = `<div>t ${t.toFixed(6)} s</div>`;
    if (def.key === "events") {
      const e = d.events[i];
      if (!e) return null;
      const fields = Object.entries(e.fields).map(([a, b]) => `<li>${escapeHtml(a)}=${escapeHtml(b)}</li>`).join("");
      return { html: `<b>${escapeHtml(e.name)}</b><div>t ${e.t.toFixed(6)} s</div>${fields ? `<ul>${fields}</ul>` : ""}` };
    }
    if (def.key === "limits") {
      const lines = this.lines[k];
      const [s, r, n] = lines.map((x) => x.s.hi[i]);
      const pct = (v: number) => `${(v * 100).toFixed(0)}%`;
      return { html: `<b>limited by</b>${at}<ul><li>network ${pct(n)}</li><li>receiver ${pct(r - n)}</li><li>sender ${pct(s - r)}</li></ul>` };
    }
    const fmt = (v: number) => (def.unit === "ms" ? v.toFixed(3) : si(v)) + (def.unit ? ` ${def.unit}` : "");
    const v = l.s.agg && l.s.lo[i] !== l.s.hi[i] ? `${fmt(l.s.lo[i])} – ${fmt(l.s.hi[i])} (min – max in this pixel column)` : fmt(l.s.hi[i]);
    return { html: `<b>${escapeHtml(l.label)}</b>${at}<div>${v}</div>` };
  }

  /** For the browser tests (hooks.ts): the lanes as drawn, and a sample of `lane` in client pixels. */
  probe(lane?: string): unknown {
    const r = this.box();
    const out = LANES.map((def, k) => ({
      key: def.key,
      points: (this.lines[k] ?? []).reduce((n, l) => n + l.s.t.length, 0),
      drawn: this.data[k].drawn?.gen === this.gen && this.gen > 0,
      frame: this.frames[k],
    }));
    let at: [number, number] | null = null;
    const k = LANES.findIndex((d) => d.key === lane);
    if (k >= 0 && this.frames[k]) {
      const f = this.frames[k], top = this.laneTop(k);
      const lines = this.lines[k] ?? [];
      for (let j = lines.length - 1; j >= 0 && !at; j--) {
        const { ot, t, hi } = lines[j].s;
        for (let i = Math.floor(t.length / 2); i < t.length; i++) {
          const x = sx(f, ot + t[i]), y = sy(f, hi[i]) + top;
          const [cx, cy] = [Math.round(r.left + x), Math.round(r.top + y)];
          if (x > LEFT + 2 && x < f.w - RIGHT - 2 && this.hit(cx - r.left, cy - r.top) === TimelinePlot.item(k, j, i)) {
            at = [cx, cy];
            break;
          }
        }
      }
    }
    return { lanes: out, frame: this.frame, at, gen: this.gen };
  }

  drawOverlay(rect?: [number, number, number, number]) {
    const f = this.frame;
    this.inked = !!f && (this.hover >= 0 || !!rect);
    if (!this.inked || !f) {
      if (this.overlay.width) this.overlay.width = this.overlay.height = 0;
      return;
    }
    const ctx = prepare(this.overlay, f.w, f.h);
    if (this.hover >= 0) {
      const [k, j, i] = TimelinePlot.parts(this.hover);
      const l = this.lines[k]?.[j], lf = this.frames[k];
      if (l && lf && i < l.s.t.length) {
        const x = sx(lf, l.s.ot + l.s.t[i]);
        // A hairline through every lane at the sample's time: what else happened then.
        ctx.strokeStyle = "rgba(0,0,0,0.35)";
        ctx.beginPath();
        ctx.moveTo(Math.round(x) + 0.5, 0);
        ctx.lineTo(Math.round(x) + 0.5, f.h);
        ctx.stroke();
        ctx.strokeStyle = "#2b6fd6";
        ctx.lineWidth = 2;
        ctx.beginPath();
        ctx.arc(x, sy(lf, l.s.hi[i]) + this.laneTop(k), 4, 0, 2 * Math.PI);
        ctx.stroke();
      }
    }
    if (rect) {
      ctx.strokeStyle = "#2b6fd6";
      ctx.fillStyle = "rgba(43,111,214,0.1)";
      ctx.fillRect(rect[0], 0, rect[2] - rect[0], f.h);
      ctx.strokeRect(rect[0] + 0.5, 0.5, rect[2] - rect[0], f.h - 1);
    }
  }
}
