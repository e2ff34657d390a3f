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
//   timeline.ts a recording's timeline (lanes)     monlist.ts  a recording's connection list

import "./style.css";
import * as api from "./api";
import type { Dir } from "./api";
import { $ } from "./dom";
import { loadEvents } from "./events";
import { installHooks } from "./hooks";
import { busier, firstListed, listedConn, renderList, startList } from "./list";
import { monitor, renderMonitorList, shownConn, startMonitorList } from "./monlist";
import { TimelinePlot } from "./timeline";
import { loadAll, plots, rebuildPlots, requestFrame, timeline } from "./plot";
import { changed, readUrl, routeChanges, state } from "./state";
import type { Change, Kind } from "./state";
import { bindHover } from "./tooltip";
import { back, bindKeys, bindZoom, reset } from "./zoom";

/** What a change of the state redoes (state.changed): the panels concerned. */
function onChange(what: Change) {
  // Another direction: the figures shown are not its.
  if (what.dir) plots.forEach((p) => p.drop());
  if (what.list) (monitor ? renderMonitorList() : renderList());
  if (what.plots) {
    if (monitor) showTimeline();
    else rebuildPlots();
    for (const p of plots) bindHover(p, bindZoom(p));
    if (timeline) bindHover(timeline, bindZoom(timeline));
  }
  if (what.events) loadEvents();
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-dir]")) b.classList.toggle("on", b.dataset.dir === state.dir);
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-kind]")) b.classList.toggle("on", b.dataset.kind === state.kind);
  if (what.plots || what.view) {
    requestFrame();
    loadAll(what.delay ?? 0);
  }
}

/**
 * A recording's connection (state.mon): its timeline, and under it the capture's plot of the
 * same connection, in the direction the monitored socket sends, shifted onto the timeline's
 * time; or a note that the capture does not have it.
 */
function showTimeline() {
  const c = shownConn();
  if (!c) {
    state.ids = [];
    rebuildPlots();
    return;
  }
  state.ids = c.capture ? [c.capture] : [];
  if (c.capture_dir) state.dir = c.capture_dir;
  const note =
    c.capture === null ? `This connection (${c.src}:${c.sport} → ${c.dst}:${c.dport}) is not in the capture.` : "";
  rebuildPlots(new TimelinePlot(c.id), c.capture_offset_s ?? 0, note);
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

/** The traces are correlated captures (api/correlate): the lifeline and one-way-delay views exist. */
let correlated = false;

/** A kind the traces have (a URL may name the lifelines of traces that are not correlated). */
function knownKind() {
  if (!correlated && (state.kind === "lifeline" || state.kind === "owd")) state.kind = "tsg";
}

async function main() {
  routeChanges(onChange);
  readUrl();
  // A report holds the time-sequence figures only (a link to a ladder opens those).
  if (api.report) state.kind = "tsg";
  bindSplitter();
  let m: api.Monitor | null = null;
  try {
    m = await api.monitor();
  } catch {
    // No answer: the traces' list, which says what went wrong if the server did.
  }
  if (m) startMonitorList(m);
  else if (!(await startList())) return;
  // Correlated captures (`view --correlate`): the lifeline and one-way-delay views too.
  try {
    correlated = !m && (await api.correlated()) !== null;
  } catch {
    // No answer: the views every trace has.
  }
  for (const k of ["lifeline", "owd"]) $(`kind-${k}`).hidden = !correlated;
  knownKind();
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-dir]"))
    b.onclick = () => {
      state.dir = b.dataset.dir as Dir;
      state.dirAuto = false;
      changed({ dir: true, view: true });
    };
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-kind]")) {
    // A report holds the time-sequence figures only.
    if (api.report) b.hidden = true;
    b.onclick = () => {
      if (state.kind === b.dataset.kind) return;
      state.kind = b.dataset.kind as Kind;
      // The time range carries over; the sequence range is the time-sequence plot's own.
      const { t0, t1 } = state.view;
      state.view = t0 !== undefined && t1 !== undefined ? { t0, t1 } : {};
      changed({ dir: true, view: true });
    };
  }
  $("back").onclick = back;
  $("reset").onclick = reset;
  bindKeys();
  window.addEventListener("hashchange", () => {
    readUrl();
    if (api.report) state.kind = "tsg";
    knownKind();
    changed({ list: true, plots: true, events: true });
  });
  if (!state.ids.length && !m) {
    const first = api.report ? api.report.report.plotted[0] : firstListed();
    if (first !== undefined) state.ids = [first];
  }
  // Opened without a direction: the first connection's with the most data.
  const c = state.dirAuto && !m && state.ids.length ? listedConn(state.ids[0]) : undefined;
  if (c) state.dir = busier(c);
  changed({ list: true, plots: true, events: true });
}

installHooks();
main();
