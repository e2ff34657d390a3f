// Draws the plots' data layers (the figure's marks, the panels' series) off the page's thread,
// on the page's canvases handed over to it (`transferControlToOffscreen`, two per layer): in
// headless and software-rendered chromium, a 2D canvas is rasterized on the page's thread when
// the frame is committed, so a new answer's layers (~12 ms of drawing for a whole
// five-million-packet connection, and as much again to rasterize) made that frame miss its
// turn. Here both happen on this thread, and the drawing goes to the compositor from here: the
// page only swaps the canvases (layers.ts, DataLayer).
//
// Messages in: {canvas: id, off} (a canvas handed over; id "key:layer:slot"), {data: key, gen,
// fig?, lines, first?} (an answer: its figure, its panels' series — or a timeline's lanes —
// whose layers are numbered from `first`, default 1), {forget: key} (a plot removed) and
// {draw: key, layer, slot, gen, f, ask, dpr} (a packet plot's layer 0: the figure; 1–3: the
// panels; a timeline's 0–6: its lanes). Out: {key,
// layer, gen, f, ask} once that drawing is on its way to the compositor; nothing for a
// drawing of an answer since replaced, or one asked again meanwhile.

import { LEFT, RIGHT, TOP, BOTTOM, drawFigure, panelData, prepare } from "./draw";
import type { Frame, PanelLine } from "./draw";
import type { Figure } from "./api";

interface Data {
  gen: number;
  fig?: Figure;
  lines: PanelLine[][];
  /** The layer number of lines[0] (layers before it: the figure). */
  first: number;
}

interface Ask {
  draw: string;
  layer: number;
  slot: number;
  gen: number;
  f: Frame;
  ask: string;
  dpr: number;
}

const data = new Map<string, Data>();
const canvases = new Map<string, OffscreenCanvas>();
/** Drawings asked and not yet done, the latest per layer: a view that moved on replaces its ask. */
const asks = new Map<string, Ask>();
let queued = false;

self.onmessage = (e: MessageEvent) => {
  const m = e.data;
  if (m.canvas !== undefined) {
    canvases.set(m.canvas, m.off);
    return;
  }
  if (m.forget !== undefined) {
    data.delete(m.forget);
    for (const id of [...canvases.keys()]) if (id.startsWith(`${m.forget}:`)) canvases.delete(id);
    return;
  }
  if (m.data !== undefined) data.set(m.data, { gen: m.gen, fig: m.fig, lines: m.lines, first: m.first ?? 1 });
  else asks.set(`${m.draw}:${m.layer}`, m);
  // After the messages already here: a burst of asks is drawn once, at its latest.
  if (!queued) {
    queued = true;
    setTimeout(run, 0);
  }
};

function run() {
  queued = false;
  const todo = [...asks.values()];
  asks.clear();
  const done: { key: string; layer: number; gen: number; f: Frame; ask: string }[] = [];
  for (const m of todo) {
    const d = data.get(m.draw);
    const c = canvases.get(`${m.draw}:${m.layer}:${m.slot}`);
    if (!d || d.gen !== m.gen || !c) continue;
    const f = m.f;
    const ctx = prepare(c, f.w - LEFT - RIGHT, f.h - TOP - BOTTOM, true, m.dpr);
    ctx.translate(-LEFT, -TOP);
    if (m.layer < d.first) {
      if (d.fig) drawFigure(ctx, f, d.fig);
    } else if (d.lines[m.layer - d.first]) panelData(ctx, f, d.lines[m.layer - d.first]);
    done.push({ key: m.draw, layer: m.layer, gen: m.gen, f, ask: m.ask });
  }
  // Told in a task of its own: the canvases drawn in this one are sent to the compositor as it
  // ends, so the page cannot show a canvas (swap it in) before its new drawing is on its way.
  if (done.length) setTimeout(() => done.forEach((r) => (self as unknown as Worker).postMessage(r)));
}
