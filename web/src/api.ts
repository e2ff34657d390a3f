// The data the page draws: from the viewer's server (`tcpscope view`), or inline in the page
// (`tcpscope report`, window.TCPSCOPE_REPORT). Shapes: docs/viewer.md.

export type Dir = "a2b" | "b2a";

/** One primitive: [op, colour, ...numbers, extra]; see docs/viewer.md. */
export type Prim = [string, string, ...(number | string)[]];

export interface Mark {
  c: string; // class, as in the SVG (seg new, ack dup agg, ...)
  f: number | null; // frame (first, for an aggregate)
  n: number; // packets it stands for
  p: Prim[];
}

export interface Figure {
  title: string;
  x: [number, number];
  y: [number, number];
  marks: Mark[];
  legend: { color: string; sample: string; text: string }[];
  remarks: string[];
  dir: Dir;
  last: number;
  error: string | null;
}

export interface Series {
  t: number[];
  lo: number[];
  hi: number[];
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

export interface EventRow {
  frame: number;
  t: number;
  dir: Dir;
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
  a: { addr: string; port: number };
  b: { addr: string; port: number };
  state: string;
  duration_s: number;
  a2b: Record<string, number | boolean | null>;
  b2a: Record<string, number | boolean | null>;
  verdict: string | null;
  boring: boolean | null;
  severity: number | null;
};

export interface ConnList {
  traces: { name: string | null; packets: number; error: string | null }[];
  conns: Conn[];
}

export interface Viewport {
  t0?: number;
  t1?: number;
  s0?: number;
  s1?: number;
  w: number;
}

interface ReportDetail {
  dirs: Record<Dir, { tsg: Figure; panels: Panels }>;
  events: { events: EventRow[]; more: number };
}

type Report = ConnList & { report: { plotted: number[]; columns: number }; details: Record<string, ReportDetail> };

declare global {
  interface Window {
    TCPSCOPE_REPORT?: Report;
  }
}

export const report: Report | undefined = window.TCPSCOPE_REPORT;

async function get<T>(path: string, params: Record<string, string | number | undefined>, signal?: AbortSignal): Promise<T> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  // Relative: the page's URL carries the token when the server requires one.
  const r = await fetch(`api/${path}?${q}`, { signal });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error ?? `${r.status}`);
  return body as T;
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

export function conns(): Promise<ConnList> {
  return report ? Promise.resolve(report) : get("conns", {});
}

/** Whether a connection can be plotted (every one live; the plotted ones in a report). */
export function plottable(conn: number): boolean {
  return !report || String(conn) in report.details;
}

export function tsg(conn: number, dir: Dir, v: Viewport, signal?: AbortSignal): Promise<Figure> {
  // The report holds the whole connection at its resolution; the page zooms into it.
  if (report) return Promise.resolve(detail(conn).dirs[dir].tsg);
  return get("tsg", viewParams(conn, dir, v), signal);
}

export function panels(conn: number, dir: Dir, v: Viewport, signal?: AbortSignal): Promise<Panels> {
  if (report) return Promise.resolve(detail(conn).dirs[dir].panels);
  return get("panels", viewParams(conn, dir, v), signal);
}

export function events(conn: number): Promise<{ events: EventRow[]; more: number }> {
  if (report) return Promise.resolve(detail(conn).events);
  return get("events", { conn });
}

export function packet(conn: number, frame: number): Promise<PacketRow | null> {
  if (report) return Promise.resolve(null);
  return get("packet", { conn, frame });
}
