// Draws the plots' data layers (the figure's marks, the panels' series) off the page's thread:
// in headless and software-rendered chromium, a 2D canvas is rasterized on the page's thread
// when the frame is committed, so a new answer's layers (~12 ms of drawing for a whole
// five-million-packet connection, and as much again to rasterize) made that frame miss its
// turn. Here both happen on this thread; the page only shows the finished bitmap.
//
// Messages in: {data: key, gen, fig?, lines} (an answer: its figure, its panels' series),
// {forget: key} (a plot removed) and
// {draw: key, layer, gen, f, ask, dpr} (layer 0: the figure; 1–3: the panels). Out: {key,
// layer, gen, f, ask, bmp} (an ImageBitmap, transferred); nothing for a drawing of an answer
// since replaced, or one asked again meanwhile.

import { LEFT, RIGHT, TOP, BOTTOM, drawFigure, panelData, prepare } from "./draw";
import type { Frame, PanelLine } from "./draw";
import type { Figure } from "./api";

interface Data {
  gen: number;
  fig?: Figure;
  lines: PanelLine[][];
}

interface Ask {
  draw: string;
  layer: number;
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
  if (m.forget !== undefined) {
    data.delete(m.forget);
    for (const id of [...canvases.keys()]) if (id.startsWith(`${m.forget}:`)) canvases.delete(id);
    return;
  }
  if (m.data !== undefined) data.set(m.data, { gen: m.gen, fig: m.fig, lines: m.lines });
  else asks.set(`${m.draw}:${m.layer}`, m);
  // After the messages already here: a burst of asks is drawn once, at its latest.
  if (!queued) {
    queued = true;
    setTimeout(run, 0);
  }
};

function run() {
  queued = false;
  const todo = [...asks.entries()];
  asks.clear();
  for (const [id, m] of todo) {
    const d = data.get(m.draw);
    if (!d || d.gen !== m.gen) continue;
    const f = m.f;
    let c = canvases.get(id);
    if (!c) canvases.set(id, (c = new OffscreenCanvas(1, 1)));
    const ctx = prepare(c, f.w - LEFT - RIGHT, f.h - TOP - BOTTOM, true, m.dpr);
    ctx.translate(-LEFT, -TOP);
    if (m.layer === 0) {
      if (d.fig) drawFigure(ctx, f, d.fig);
    } else if (d.lines[m.layer - 1]) panelData(ctx, f, d.lines[m.layer - 1]);
    const bmp = c.transferToImageBitmap();
    (self as unknown as Worker).postMessage({ key: m.draw, layer: m.layer, gen: m.gen, f, ask: m.ask, bmp }, [bmp]);
  }
}
