// Zoom, pan and the zoom history: every way input changes the view (state.view) — a dragged
// rectangle, the wheel, a shift-drag, the arrow keys — and the steps back out of it (back,
// reset; the history is state.history, pushed by state.setView). The view is the plots' shared
// ranges: time for all, and the first plot's y (a compared plot's is offset by `o`). A plot is
// driven only through `Surface` (its frame, `viewY` and `toff`), so the same zoom works on any
// plot on the time axis: one without `viewY` (a recording's timeline) is zoomed in time only.

import { BOTTOM, LEFT, RIGHT, TOP, ix } from "./draw";
import type { Frame } from "./draw";
import { pointerAt } from "./layers";
import type { Surface } from "./layers";
import { plots, ranges, timeline } from "./plot";
import { changed, setView, state } from "./state";
import type { View } from "./state";

/** The view as drawn, explicit: the first plot's sequence range and the second's offset. */
function currentBox(): View {
  const { x0, x1, y } = ranges();
  const b: View = { t0: x0, t1: x1 };
  // (No packet plot: no sequence range.)
  if (y.length) [b.s0, b.s1] = y[0];
  if (y.length > 1) b.o = y[1][0] - y[0][0];
  return b;
}

/** The view's time at overlay column `px` of plot `p` drawn at `f`. */
const timeAt = (p: Surface, f: Frame, px: number) => ix(f, px) + (p.toff ?? 0);

/**
 * The view with times t0..t1 and, from a plot with the view's y, sequence range s0..s1; from
 * one with a y of its own (a timeline), no sequence range: each packet plot under it then
 * shows the sequence numbers of its data in that time.
 */
function timeView(p: Surface, b: View, t0: number, t1: number, s0: number, s1: number): View {
  return p.viewY ? { t0, t1, s0, s1, o: b.o } : { t0, t1 };
}

/** Steps back out to the view before the last zoom or pan. */
export function back() {
  const v = state.history.pop();
  if (v !== undefined) {
    state.view = v;
    changed({ view: true });
  }
}

/** The whole connection: the view the data sets (a step of the history). */
export function reset() {
  if (state.view.t0 === undefined && state.view.s0 === undefined) return;
  setView({});
}

function zoomAt(p: Surface, f: Frame, px: number, py: number, factor: number, push: boolean) {
  const b = currentBox();
  const x = timeAt(p, f, px), y = p.viewY?.(f, py) ?? 0;
  setView(timeView(p, b, x - (x - b.t0!) * factor, x + (b.t1! - x) * factor, y - (y - b.s0!) * factor, y + (b.s1! - y) * factor), push, 80);
}

function panBy(dxFrac: number, dyFrac: number, push: boolean) {
  const b = currentBox();
  const dx = (b.t1! - b.t0!) * dxFrac;
  // Without a packet plot, nothing to pan up or down.
  if (b.s0 === undefined || b.s1 === undefined) return dxFrac ? setView({ t0: b.t0! + dx, t1: b.t1! + dx }, push, 80) : undefined;
  const dy = (b.s1 - b.s0) * dyFrac;
  setView({ t0: b.t0! + dx, t1: b.t1! + dx, s0: b.s0 + dy, s1: b.s1 + dy, o: b.o }, push, 80);
}

let lastWheel = 0;

/**
 * Zoom and pan on plot `p` with the pointer: drag a rectangle to zoom to it, shift-drag (or the
 * middle button) to pan, the wheel to zoom about the pointer, right click to step back. Returns
 * whether a drag is under way (hover waits for it to end).
 */
export function bindZoom(p: Surface): () => boolean {
  const o = p.overlay;
  let drag: { x: number; y: number; pan: boolean; box: View } | null = null;
  const pos = (e: MouseEvent) => pointerAt(p, e);
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
      const b = drag.box;
      setView(timeView(p, b, b.t0! - dt, b.t1! - dt, b.s0! + ds, b.s1! + ds), false, 60);
    } else {
      p.drawOverlay([Math.min(drag.x, x), Math.min(drag.y, y), Math.max(drag.x, x), Math.max(drag.y, y)]);
    }
  }, { signal: p.gone });
  window.addEventListener("mouseup", (e) => {
    if (!drag || !p.frame) return;
    const d = drag;
    drag = null;
    if (d.pan) return;
    const [x, y] = pos(e);
    p.drawOverlay();
    // (A plot with a y of its own is zoomed in time only: a drag across it is enough.)
    if (Math.abs(x - d.x) < 5 || (p.viewY && Math.abs(y - d.y) < 5)) return;
    const f = p.frame;
    const [ta, tb] = [timeAt(p, f, d.x), timeAt(p, f, x)].sort((a, b) => a - b);
    const [sa, sb] = p.viewY ? [p.viewY(f, d.y), p.viewY(f, y)].sort((a, b) => a - b) : [0, 0];
    setView(timeView(p, currentBox(), ta, tb, sa, sb));
  }, { signal: p.gone });
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
  return () => drag !== null;
}

/** The keyboard: Backspace steps back, Home resets, the arrows pan (while a plot is shown). */
export function bindKeys() {
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
    if (k && (plots.length || timeline)) {
      e.preventDefault();
      k();
    }
  });
}
