// The data the page draws: from the viewer's server (`tcpscope view`), or inline in the page
// (`tcpscope report`, window.TCPSCOPE_REPORT). Shapes: docs/viewer.md.

import { OP } from "./draw";

export type Dir = "a2b" | "b2a";

/**
 * A time-sequence figure as the page holds it: the packed answer's typed arrays as they came
 * (no object per mark or primitive), plus a few indexes built once when it arrives. Mark i
 * has primitives `mprim[i]..mprim[i+1]`; primitive j has coordinates `xy[pxy[j]..pxy[j+1]]`,
 * offsets from (`ox`, `oy`). Layout: docs/viewer.md.
 */
export interface Figure {
  title: string;
  x: [number, number];
  y: [number, number];
  legend: { color: string; sample: string; text: string }[];
  remarks: string[];
  dir: Dir;
  last: number;
  error: string | null;
  ox: number;
  oy: number;
  classes: string[];
  colors: string[];
  texts: string[];
  /** Number of marks. */
  n: number;
  cls: Uint8Array;
  /** Frame of each mark (the first, for an aggregate); NaN for none. */
  frame: Float64Array;
  count: Uint32Array;
  mprim: Uint32Array;
  op: Uint8Array;
  color: Uint8Array;
  /** Way of an arrowhead or tick (0 up, 1 down, 2 horizontal); anchor of a text (a b l r c). */
  extra: Uint8Array;
  pxy: Uint32Array;
  xy: Float32Array;
  // Built on arrival:
  /** Per colour, its primitives but text, in drawing order: one path per colour. */
  byColor: Uint32Array[];
  /** The text primitives. */
  textPrims: Uint32Array;
  /** Per mark, the data length of its first vertical line (arrowheads shrink on short ones), or -1. */
  segLen: Float32Array;
  /** Per class: 0 segment, 0.5 note, 1 SACK, 1.5 ack/window line (hover prefers the first). */
  classBias: Float32Array;
  /** Per class: an ack or window stair step (its tread is not the packet). */
  classStep: Uint8Array;
}

/** A panel series: times are offsets from `ot` (seconds). */
export interface Series {
  ot: number;
  t: Float32Array;
  lo: Float32Array;
  hi: Float32Array;
  agg: boolean;
}

export interface Panels {
  t: [number, number];
  tput_bps: Series;
  goodput_bps: Series;
  window_scaled: boolean;
  cwnd_bytes: Series;
  rtt_ms: Series;
  rtt_karn_ms: Series;
  flight_bytes: Series;
  window_bytes: Series;
}

type Typed = Uint8Array | Uint32Array | Float32Array | Float64Array;
const CTORS = { u8: Uint8Array, u32: Uint32Array, f32: Float32Array, f64: Float64Array };
// Typed arrays use the machine's byte order; the answers are little-endian.
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Reads a packed answer (`fmt=bin`): its JSON header and views of its arrays (no copies). */
export function unpack(buf: ArrayBuffer): { head: Record<string, unknown>; arrays: Record<string, Typed> } {
  if (!LITTLE) throw new Error("this page needs a little-endian machine");
  const magic = new Uint8Array(buf, 0, 4);
  if (String.fromCharCode(...magic) !== "TSC1") throw new Error("not a packed answer");
  const hl = new DataView(buf).getUint32(4, true);
  const head = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 8, hl)));
  const base = Math.ceil((8 + hl) / 8) * 8;
  const arrays: Record<string, Typed> = {};
  for (const [name, [ty, off, len]] of Object.entries(head.arrays as Record<string, [keyof typeof CTORS, number, number]>)) {
    arrays[name] = new CTORS[ty](buf, base + off, len);
  }
  return { head, arrays };
}

/** A figure from its packed answer, with the indexes drawing and hover use. */
export function figureOf(buf: ArrayBuffer): Figure {
  const { head: h, arrays: a } = unpack(buf);
  const fig = {
    ...(h as object),
    n: a.mark_class.length,
    cls: a.mark_class,
    frame: a.mark_frame,
    count: a.mark_count,
    mprim: a.mark_prim,
    op: a.prim_op,
    color: a.prim_color,
    extra: a.prim_extra,
    pxy: a.prim_xy,
    xy: a.xy,
  } as Figure;
  const np = fig.op.length;
  // Two passes over the primitives: count per colour, then fill.
  const per = new Uint32Array(fig.colors.length + 1);
  let nText = 0;
  for (let j = 0; j < np; j++) {
    if (fig.op[j] === OP.TEXT) nText++;
    else per[fig.color[j]]++;
  }
  fig.byColor = Array.from(per.subarray(0, fig.colors.length), (n) => new Uint32Array(n));
  fig.textPrims = new Uint32Array(nText);
  per.fill(0);
  nText = 0;
  for (let j = 0; j < np; j++) {
    if (fig.op[j] === OP.TEXT) fig.textPrims[nText++] = j;
    else fig.byColor[fig.color[j]][per[fig.color[j]]++] = j;
  }
  fig.segLen = new Float32Array(fig.n).fill(-1);
  for (let i = 0; i < fig.n; i++) {
    for (let j = fig.mprim[i]; j < fig.mprim[i + 1]; j++) {
      const k = fig.pxy[j];
      if (fig.op[j] === OP.LINE && fig.xy[k] === fig.xy[k + 2] && fig.xy[k + 1] !== fig.xy[k + 3]) {
        fig.segLen[i] = Math.abs(fig.xy[k + 3] - fig.xy[k + 1]);
        break;
      }
    }
  }
  fig.classBias = Float32Array.from(fig.classes, (c) => (c.startsWith("seg") ? 0 : c.startsWith("note") ? 0.5 : c.includes("sack") ? 1 : 1.5));
  fig.classStep = Uint8Array.from(fig.classes, (c) => (c.startsWith("ack step") || c.startsWith("win step") ? 1 : 0));
  return fig;
}

/** Panels from their packed answer. */
export function panelsOf(buf: ArrayBuffer): Panels {
  const { head: h, arrays: a } = unpack(buf);
  const out: Record<string, unknown> = { t: h.t, window_scaled: h.window_scaled };
  for (const [name, agg] of Object.entries(h.series as Record<string, boolean>)) {
    const lo = a[`${name}.lo`] as Float32Array;
    out[name] = { ot: h.ot as number, t: a[`${name}.t`] as Float32Array, lo, hi: (a[`${name}.hi`] as Float32Array) ?? lo, agg };
  }
  return out as unknown as Panels;
}

function fromBase64(s: string): ArrayBuffer {
  const bin = atob(s);
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return b.buffer;
}

export interface EventRow {
  frame: number;
  t: number;
  /** The direction the event was raised in (an ACK's events: the ACK's direction). */
  dir: Dir;
  /** The direction whose data the event is about: the plot that shows it (the server's rule). */
  data_dir: Dir;
  kind: string;
  text: string;
}

export interface PacketRow {
  frame: number;
  t: number;
  dir: Dir;
  seq: number;
  ack: number | null;
  win: number;
  len: number;
  flags: string;
  in_flight: number | null;
  events: EventRow[];
}

export type Conn = Record<string, unknown> & {
  id: number;
  trace: number;
  file: string;
  /** The connection's trace as given, and its 1-based index there: its name in any run. */
  input: string;
  conn: number;
  a: { addr: string; port: number };
  b: { addr: string; port: number };
  state: string;
  duration_s: number;
  a2b: Record<string, number | boolean | null>;
  b2a: Record<string, number | boolean | null>;
  verdict: string | null;
  boring: boolean | null;
  severity: number | null;
  /** In a report: the row's place in the server's ranking (0: the most troubled). */
  rank?: number;
};

export interface ConnList {
  traces: { name: string | null; packets: number; error: string | null }[];
  conns: Conn[];
}

/** What the list shows: sort key and order, filter text, whether boring rows are in, which rows. */
export interface ListQuery {
  sort: string;
  desc: boolean;
  q: string;
  boring: boolean;
  from: number;
  n: number;
}

/** Rows `from..` of the filtered, sorted list (`api/conns` with list parameters, docs/viewer.md). */
export interface ListPage extends ConnList {
  total: number;
  matched: number;
  from: number;
  /** The sort keys, in the order a menu lists them. */
  keys: string[];
  /** The keys a first click sorts ascending (`id`, the text keys); the others largest first. */
  ascending_keys: string[];
}

export interface Viewport {
  t0?: number;
  t1?: number;
  s0?: number;
  s1?: number;
  w: number;
}

interface ReportDetail {
  /** Packed answers, base64 (the same bytes `view` serves with `fmt=bin`). */
  dirs: Record<Dir, { tsg: string; panels: string }>;
  events: { events: EventRow[]; more: number };
  /** The packet-listing row of every frame a mark stands for. */
  packets: Record<string, PacketRow>;
}

/** A report's data: its list (the most troubled rows, `listed` of the traces' `total`) and plots. */
type Report = ConnList & { keys: string[]; ascending_keys: string[]; report: { plotted: number[]; columns: number; total: number; listed: number }; details: Record<string, ReportDetail> };

declare global {
  interface Window {
    TCPSCOPE_REPORT?: Report;
  }
}

export const report: Report | undefined = window.TCPSCOPE_REPORT;

type Params = Record<string, string | number | undefined>;

/** Asks the server (parameters left undefined are left out); throws its error, if it answers one. */
async function call(path: string, params: Params, signal?: AbortSignal): Promise<Response> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  // Relative: the page's URL carries the token when the server requires one.
  const r = await fetch(`api/${path}?${q}`, { signal });
  if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error ?? `${r.status}`);
  return r;
}

const get = async <T>(path: string, params: Params, signal?: AbortSignal): Promise<T> => (await call(path, params, signal)).json();

/** Fetches a packed answer. */
const getBin = async (path: string, params: Params, signal?: AbortSignal): Promise<ArrayBuffer> => (await call(path, { fmt: "bin", ...params }, signal)).arrayBuffer();

// The report's figures and panels, decoded once each.
const decoded = new Map<string, Figure | Panels>();
function reportPart<T extends Figure | Panels>(conn: number, dir: Dir, part: "tsg" | "panels", of: (b: ArrayBuffer) => T): T {
  const key = `${conn}/${dir}/${part}`;
  if (!decoded.has(key)) decoded.set(key, of(fromBase64(detail(conn).dirs[dir][part])));
  return decoded.get(key) as T;
}

function detail(conn: number): ReportDetail {
  const d = report?.details[String(conn)];
  if (!d) throw new Error(`connection ${conn} is not plotted in this report`);
  return d;
}

function viewParams(conn: number, dir: Dir, v: Viewport) {
  const r = (x: number | undefined) => (x === undefined ? undefined : x);
  return { conn, dir, t0: r(v.t0), t1: r(v.t1), s0: v.s0 === undefined ? undefined : Math.floor(v.s0), s1: v.s1 === undefined ? undefined : Math.ceil(v.s1), w: Math.max(1, Math.round(v.w)) };
}

/**
 * A page of the connection list. The server filters and sorts (a trace can hold hundreds of
 * thousands of connections); a report's rows are in the page, and the same rules apply here:
 * boring rows left out unless asked for, the filter found anywhere in "id endpoints state
 * verdict file" (any case), numbers largest first unless ascending, text A–Z, `null` last
 * either way, ties by id; by severity, the rank the report carries (crates/view/src/list.rs).
 */
export function connPage(q: ListQuery, signal?: AbortSignal): Promise<ListPage> {
  if (!report) return get("conns", { sort: q.sort, desc: q.desc ? 1 : 0, q: q.q, boring: q.boring ? 1 : 0, from: q.from, n: q.n }, signal);
  const f = q.q.toLowerCase();
  const rows = report.conns.filter((c) => (q.boring || c.boring !== true) && (!f || `${c.id} ${endpoints(c)} ${c.state} ${c.verdict ?? ""} ${c.file}`.toLowerCase().includes(f)));
  rows.sort((x, y) => {
    // By severity, the server's ranking (crates/core/src/screen: boring rows after the others).
    if (q.sort === "severity") return q.desc ? (x.rank ?? 0) - (y.rank ?? 0) : (y.rank ?? 0) - (x.rank ?? 0);
    const a = sortValue(x, q.sort), b = sortValue(y, q.sort);
    if (a === b) return x.id - y.id;
    if (a === null) return 1;
    if (b === null) return -1;
    const r = a < b ? -1 : 1;
    return q.desc ? -r : r;
  });
  const from = Math.min(q.from, rows.length);
  return Promise.resolve({ traces: report.traces, total: report.report.total, matched: rows.length, from, keys: report.keys, ascending_keys: report.ascending_keys, conns: rows.slice(from, from + q.n) });
}

export const endpoints = (c: Conn) => `${c.a.addr}:${c.a.port} → ${c.b.addr}:${c.b.port}`;

/** A connection's value for a sort key (`a2b.rexmit_packets`, `both.rexmit_packets`: the sum, ...). */
function sortValue(c: Conn, key: string): number | string | null {
  if (key === "endpoints") return endpoints(c);
  const [a, b] = key.split(".");
  if (a === "both") {
    const [x, y] = [c.a2b[b], c.b2a[b]];
    return typeof x === "number" && typeof y === "number" ? x + y : null;
  }
  const v = b === undefined ? c[a] : (c[a] as Record<string, unknown>)?.[b];
  return typeof v === "number" || typeof v === "string" ? v : null;
}

/** Whether a connection can be plotted (every one live; the plotted ones in a report). */
export function plottable(conn: number): boolean {
  return !report || String(conn) in report.details;
}

export function tsg(conn: number, dir: Dir, v: Viewport, signal?: AbortSignal): Promise<Figure> {
  // The report holds the whole connection at its resolution; the page zooms into it.
  if (report) return Promise.resolve(reportPart(conn, dir, "tsg", figureOf));
  return getBin("tsg", viewParams(conn, dir, v), signal).then(figureOf);
}

/** The connection's ladder at a viewport of `v.w` × `h` pixels (api/ladder; not in a report). */
export function ladder(conn: number, v: Viewport, h: number, signal?: AbortSignal): Promise<Figure> {
  if (report) return Promise.reject(new Error("a report holds no ladder"));
  const { t0, t1, w } = viewParams(conn, "a2b", v);
  return getBin("ladder", { conn, t0, t1, w, h: Math.max(1, Math.round(h)) }, signal).then(figureOf);
}

/** One direction's lifelines across the capture points, or their one-way delays, at a viewport
 * (api/lifeline, api/owd; only when the traces are correlated, never in a report). */
export function lifeline(kind: "lifeline" | "owd", conn: number, dir: Dir, v: Viewport, signal?: AbortSignal): Promise<Figure> {
  if (report) return Promise.reject(new Error("a report holds no lifelines"));
  const { t0, t1, w } = viewParams(conn, dir, v);
  return getBin(kind, { conn, dir, t0, t1, w }, signal).then(figureOf);
}

/** The capture points when the traces are correlated (`view --correlate`; api/correlate), else null. */
export async function correlated(): Promise<{ points: { point: number; file: string; offset_ms: number; skew_ppm: number }[] } | null> {
  if (report) return null;
  return get("correlate", {});
}

export function panels(conn: number, dir: Dir, v: Viewport, signal?: AbortSignal): Promise<Panels> {
  if (report) return Promise.resolve(reportPart(conn, dir, "panels", panelsOf));
  return getBin("panels", viewParams(conn, dir, v), signal).then(panelsOf);
}

export function events(conn: number): Promise<{ events: EventRow[]; more: number }> {
  if (report) return Promise.resolve(detail(conn).events);
  return get("events", { conn });
}

export function packet(conn: number, frame: number): Promise<PacketRow | null> {
  if (report) return Promise.resolve(detail(conn).packets?.[String(frame)] ?? null);
  return get("packet", { conn, frame });
}

/** A monitored connection of a recording (`api/monitor`; docs/viewer.md). */
export interface MonConn {
  id: number;
  src: string;
  sport: number;
  dst: string;
  dport: number;
  cong: string | null;
  duration_s: number;
  samples: number;
  ave_bw: number | null;
  diagnosis: string;
  /** The capture's connection of the same 4-tuple (null: not in the capture; absent: no capture given). */
  capture?: number | null;
  /** Where that connection's first packet is on the timeline, s. */
  capture_offset_s?: number | null;
  /** The direction the monitored socket sends in, in the capture. */
  capture_dir?: Dir | null;
}

export interface Monitor {
  recording: string;
  host: string | null;
  interval_s: number | null;
  tail: string | null;
  captures: { name: string; packets: number; error: string | null }[] | null;
  conns: MonConn[];
}

/** A series as the timeline's JSON answer has it. */
export interface RawSeries {
  t: number[];
  lo: number[];
  hi: number[];
  agg: boolean;
}

export interface AppEvent {
  t: number;
  lane: number;
  name: string;
  guid: string | null;
  fields: Record<string, string>;
}

/** A connection's timeline for a view (`api/timeline`). */
export interface Timeline {
  conn: number;
  title: string;
  t: [number, number];
  last: number;
  start_ns: number;
  series: Record<"cwnd_bytes" | "ssthresh_bytes" | "rtt_ms" | "delivery_bps" | "int_bw_bps" | "flight_bytes" | "retrans", RawSeries>;
  limits: { t0: number; t1: number; network: number; receiver: number; sender: number }[];
  cpu: { host_pct: RawSeries; proc_pct: RawSeries };
  lanes: string[];
  events: AppEvent[];
  events_more: number;
}

/** The recording shown, or null (traces only; a report). */
export function monitor(): Promise<Monitor | null> {
  if (report) return Promise.resolve(null);
  return get("monitor", {});
}

export function timeline(conn: number, v: { t0?: number; t1?: number; w: number }, signal?: AbortSignal): Promise<Timeline> {
  return get("timeline", { conn, t0: v.t0, t1: v.t1, w: Math.max(1, Math.round(v.w)) }, signal);
}
