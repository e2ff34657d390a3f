// Reading the packed answers (`fmt=bin`, docs/viewer.md): shared by the page (api.ts) and the
// drawing worker (drawworker.ts), which decodes its own copy of each figure.

import type { Dir } from "./api";

/**
 * A time-sequence figure as the page holds it: the packed answer's typed arrays as they came
 * (no object per mark or primitive), plus per-class tables built when it arrives. Mark i
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
  /** The answer's bytes, which the arrays above are views of (the drawing worker gets a copy). */
  buf: ArrayBuffer;
  // Built on arrival (per class: a few entries):
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

/**
 * A figure from its packed answer: views of its arrays and the per-class tables hover uses,
 * nothing per mark or primitive (the drawing's indexes are built where it is drawn,
 * `drawIndex` in draw.ts: with the drawing worker, not on the page's thread).
 */
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
    buf,
  } as Figure;
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

