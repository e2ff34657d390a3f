// The viewer page, wired: the panels are modules of their own and this joins them. The state
// is in state.ts; a panel changes it and calls `changed(...)`, which comes here (`onChange`)
// and is passed on to the panels concerned, in this order: the list, the plots, the events,
// then one frame and the fetches for the view. Input handlers only change state and ask for a
// frame; one requestAnimationFrame draws everything (plot.ts); hover draws on an overlay canvas
// and never repaints the plot (STYLE.md §6).
//
//   state.ts   the state, the URL, `changed`      list.ts     the connection list
//   plot.ts    a connection's plots, the frame     layers.ts   what any plot is made of
//   zoom.ts    zoom, pan, history                  tooltip.ts  hover and its tooltip
//   events.ts  the events list                     hooks.ts    window.tcpscope* for tests
//   api.ts     the server (or a report's data)     draw.ts     drawing; drawworker.ts: off-thread

import "./style.css";
import * as api from "./api";
import type { Dir } from "./api";
import { $ } from "./dom";
import { loadEvents } from "./events";
import { installHooks } from "./hooks";
import { firstListed, renderList, startList } from "./list";
import { loadAll, plots, rebuildPlots, requestFrame } from "./plot";
import { changed, readUrl, routeChanges, state } from "./state";
import type { Change } from "./state";
import { bindHover } from "./tooltip";
import { back, bindKeys, bindZoom, reset } from "./zoom";

/** What a change of the state redoes (state.changed): the panels concerned. */
function onChange(what: Change) {
  // Another direction: the figures shown are not its.
  if (what.dir) plots.forEach((p) => p.drop());
  if (what.list) renderList();
  if (what.plots) {
    rebuildPlots();
    for (const p of plots) bindHover(p, bindZoom(p));
  }
  if (what.events) loadEvents();
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-dir]")) b.classList.toggle("on", b.dataset.dir === state.dir);
  if (what.plots || what.view) {
    requestFrame();
    loadAll(what.delay ?? 0);
  }
}

/** The splitter between the list and the plots: drag to resize the list; the width is kept. */
function bindSplitter() {
  const side = $("side"), split = $("split");
  const KEY = "tcpscope.side-width";
  const apply = (w: number | null) => {
    if (w === null) side.style.removeProperty("--side-w");
    else side.style.setProperty("--side-w", `${Math.round(w)}px`);
    // The plots follow (ConnPlot.resized).
  };
  try {
    const w = Number(localStorage.getItem(KEY));
    if (w > 0) side.style.setProperty("--side-w", `${w}px`);
  } catch {
    // No storage (a report opened from a file in some browsers): the default width.
  }
  split.addEventListener("mousedown", (e) => {
    e.preventDefault();
    const x0 = e.clientX, w0 = side.getBoundingClientRect().width;
    split.classList.add("drag");
    const move = (m: MouseEvent) => apply(Math.max(260, Math.min(window.innerWidth * 0.85, w0 + m.clientX - x0)));
    const up = () => {
      split.classList.remove("drag");
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      try {
        localStorage.setItem(KEY, String(Math.round(side.getBoundingClientRect().width)));
      } catch {
        // As above.
      }
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  });
  split.addEventListener("dblclick", () => {
    try {
      localStorage.removeItem(KEY);
    } catch {
      // As above.
    }
    apply(null);
  });
}

async function main() {
  routeChanges(onChange);
  readUrl();
  bindSplitter();
  if (!(await startList())) return;
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-dir]"))
    b.onclick = () => {
      state.dir = b.dataset.dir as Dir;
      changed({ dir: true, view: true });
    };
  $("back").onclick = back;
  $("reset").onclick = reset;
  bindKeys();
  window.addEventListener("hashchange", () => {
    readUrl();
    changed({ list: true, plots: true, events: true });
  });
  if (!state.ids.length) {
    const first = api.report ? api.report.report.plotted[0] : firstListed();
    if (first !== undefined) state.ids = [first];
  }
  changed({ list: true, plots: true, events: true });
}

installHooks();
main();
