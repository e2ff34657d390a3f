// The data the page draws: from the viewer's server (`tcpscope view`), or inline in the page
// (`tcpscope report`, window.TCPSCOPE_REPORT). Shapes: docs/viewer.md.

import type { Figure, Panels } from "./figure";
import { figureOf, panelsOf } from "./figure";

export type Dir = "a2b" | "b2a";

export type { Figure, Panels, Series } from "./figure";
export { figureOf, panelsOf } from "./figure";

function fromBase64(s: string): ArrayBuffer {
  const bin = atob(s);
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return b.buffer;
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
  /** Packed answers, base64 (the same bytes `view` serves with `fmt=bin`). */
  dirs: Record<Dir, { tsg: string; panels: string }>;
  events: { events: EventRow[]; more: number };
  /** The packet-listing row of every frame a mark stands for. */
  packets: Record<string, PacketRow>;
}

type Report = ConnList & { report: { plotted: number[]; columns: number }; details: Record<string, ReportDetail> };

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

const get = async <T>(path: string, params: Params): Promise<T> => (await call(path, params)).json();

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

export function conns(): Promise<ConnList> {
  return report ? Promise.resolve(report) : get("conns", {});
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
