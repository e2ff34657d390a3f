// The hover tooltip: what a plot says of the item under the pointer (Surface.hit and .tip), in
// a box beside the pointer. Placed without reading layout (see `tipAt`): hover must not make
// the browser lay the page out. The content is the plot's; nothing here assumes packets.

import { $ } from "./dom";
import { pointerAt } from "./layers";
import type { Surface } from "./layers";

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
});
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

async function showTip(p: Surface, m: number, cx: number, cy: number) {
  const tip = $("tip");
  const t = p.tip(m);
  if (!t) {
    tip.hidden = true;
    return;
  }
  tip.innerHTML = t.html;
  tip.hidden = false;
  moveTip(cx, cy);
  const more = await t.more;
  if (more === null || more === undefined || p.hover !== m) return;
  tip.innerHTML = more;
  moveTip(cx, cy);
}

/** Hover on plot `p`: the item under the pointer outlined, and its tooltip (not while `dragging()`). */
export function bindHover(p: Surface, dragging: () => boolean) {
  const o = p.overlay;
  o.addEventListener("mousemove", (e) => {
    if (dragging() || !p.frame) return;
    const [x, y] = pointerAt(p, e);
    const m = p.hit(x, y);
    if (m === undefined) return;
    if (m !== p.hover) {
      p.hover = m;
      p.drawOverlay();
      showTip(p, m, e.clientX, e.clientY);
    } else if (m >= 0) moveTip(e.clientX, e.clientY); // mark 0 too (a bare `if (m)` left its tip behind)
  });
  o.addEventListener("mouseleave", () => {
    p.hover = -1;
    p.drawOverlay();
    $("tip").hidden = true;
  });
}
