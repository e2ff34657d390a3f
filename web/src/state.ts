// The page's state, in one place: what the URL holds (the connections shown, the direction,
// the view, the list's order and filter) and what the panels share besides (the zoom history,
// the events listed, the packet an event jumped to). Panels read and write `state` (a new view
// through `setView`, which keeps the history), then call `changed(...)` saying what changed;
// main.ts routes that to the panels concerned, so no panel calls another to tell it. The URL
// is written from here (and read at load and on hashchange): a link opens the same view.

import type { Dir, EventRow } from "./api";

/** The ranges shown: time (s) and the first plot's sequence range; unset: the data's own. */
export interface View {
  t0?: number;
  t1?: number;
  /** Sequence range of the first plot. */
  s0?: number;
  s1?: number;
  /** Compared with a second connection: its sequence range is the first's plus `o`. */
  o?: number;
}

export interface State {
  /** The connections plotted: one, or two compared on one scale (with a recording: the capture's, under the timeline). */
  ids: number[];
  /** With a recording (`view run.tsm`): the monitored connection whose timeline is shown (null: none). */
  mon: number | null;
  dir: Dir;
  /** What a connection's plot shows: its time-sequence figure (one direction), its ladder
   * (both directions and both endpoints' states, time across: api/ladder), or, when the traces
   * are correlated (`view --correlate`), one direction's packets at every capture point
   * (api/lifeline) or their one-way delays (api/owd). */
  kind: Kind;
  /** The direction was not chosen (no `d` in the URL, no button, no event jump): each
   * connection selected shows the direction that carries the most data (docs/cli.md#directions). */
  dirAuto: boolean;
  view: View;
  sort: string;
  desc: boolean;
  filter: string;
  boring: boolean;
  // Not in the URL:
  /** The views stepped into (zoom.ts): `back` returns to the last. */
  history: View[];
  /** The first connection's events as listed (events.ts; the tooltip falls back on them). */
  events: EventRow[];
  /** The frame of the packet an event jumped to, marked on the plots (null: none). */
  focusFrame: number | null;
}

/** A connection's plot: time-sequence, ladder, lifelines or one-way delay (URL `k`). */
export type Kind = "tsg" | "ladder" | "lifeline" | "owd";
const KINDS: Kind[] = ["tsg", "ladder", "lifeline", "owd"];

/** Whether a kind zooms in time only: its y is not a sequence number the view keeps. */
export function timeOnly(k: Kind): boolean {
  return k === "ladder" || k === "owd";
}

// Worst first, as `tcpscope screen` ranks them.
export const DEFAULT_SORT = "severity";

export const state: State = { ids: [], mon: null, dir: "a2b", kind: "tsg", dirAuto: true, view: {}, sort: DEFAULT_SORT, desc: true, filter: "", boring: false, history: [], events: [], focusFrame: null };

/** What changed, for `changed`: each part redone is named; `delay` (ms): fetch once input pauses. */
export interface Change {
  /** The list's order, filter or selection. */
  list?: boolean;
  /** The connections plotted: the plots are built again. */
  plots?: boolean;
  /** The first connection: its events are listed again. */
  events?: boolean;
  /** The view: drawn at once, fetched (after `delay`). */
  view?: boolean;
  /** The direction or the kind: the plots' figures are dropped (the view is then changed too). */
  dir?: boolean;
  delay?: number;
}

let onChange: (what: Change) => void = () => {};

/** Sets the one handler of `changed` (main.ts, which calls the panels). */
export function routeChanges(h: (what: Change) => void) {
  onChange = h;
}

/** Tells the page that `what` changed in `state`: the URL is written, the panels concerned redone. */
export function changed(what: Change) {
  // A wheel notch or drag step writes the URL once the input pauses (with the fetch): each
  // write took milliseconds, inside the frame that input is dispatched in.
  if (!what.delay) writeUrl();
  onChange(what);
}

/**
 * Shows view `v`: the one left goes on the history (`push`: a step `back` returns from) and
 * `changed` is told, with `also` (what else changed with it) and `delay` (see Change).
 */
export function setView(v: View, push = true, delay = 0, also: Change = {}) {
  if (push) state.history.push({ ...state.view });
  state.view = v;
  changed({ ...also, view: true, delay });
}

export function writeUrl() {
  const q = new URLSearchParams();
  if (state.mon !== null) q.set("m", String(state.mon));
  else if (state.ids.length) q.set("c", state.ids.join(","));
  if (!state.dirAuto) q.set("d", state.dir);
  if (state.kind !== "tsg") q.set("k", state.kind);
  const v = state.view;
  if (v.t0 !== undefined && v.t1 !== undefined) q.set("t", `${v.t0},${v.t1}`);
  if (v.s0 !== undefined && v.s1 !== undefined) q.set("s", `${Math.floor(v.s0)},${Math.ceil(v.s1)}`);
  if (v.s0 !== undefined && v.o) q.set("o", String(Math.round(v.o)));
  if (state.sort !== DEFAULT_SORT || !state.desc) {
    q.set("sort", state.sort);
    q.set("desc", state.desc ? "1" : "0");
  }
  if (state.filter) q.set("q", state.filter);
  if (state.boring) q.set("boring", "1");
  const hash = "#" + q.toString();
  if (location.hash !== hash) window.history.replaceState(null, "", hash);
}

export function readUrl() {
  const q = new URLSearchParams(location.hash.slice(1));
  const nums = (k: string) => (q.get(k) ?? "").split(",").filter((s) => s !== "").map(Number).filter((n) => Number.isFinite(n));
  state.ids = nums("c").slice(0, 2);
  const m = nums("m");
  state.mon = m.length ? m[0] : null;
  const d = q.get("d");
  state.dirAuto = d !== "a2b" && d !== "b2a";
  if (!state.dirAuto) state.dir = d as Dir;
  const k = q.get("k") as Kind;
  state.kind = KINDS.includes(k) ? k : "tsg";
  const t = nums("t"), s = nums("s");
  state.view = {};
  if (t.length === 2 && t[1] > t[0]) Object.assign(state.view, { t0: t[0], t1: t[1] });
  if (s.length === 2 && s[1] > s[0]) Object.assign(state.view, { s0: s[0], s1: s[1] });
  const o = Number(q.get("o"));
  if (state.view.s0 !== undefined && Number.isFinite(o) && o) state.view.o = o;
  state.sort = q.get("sort") ?? DEFAULT_SORT;
  state.desc = q.get("sort") === null || q.get("desc") === "1";
  state.filter = q.get("q") ?? "";
  state.boring = q.get("boring") === "1";
}
