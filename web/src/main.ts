// The viewer page: connection list, time-sequence plot with linked panels, events, zoom.
// Input handlers change state and ask for a frame; one requestAnimationFrame draws everything;
// hover draws on an overlay canvas and never repaints the plot (STYLE.md §6).

import "./style.css";
import * as api from "./api";
import type { Conn, Dir, EventRow } from "./api";
import { BOTTOM, LEFT, OP, RIGHT, TOP, hit, markPoint, si } from "./draw";
import { $, status } from "./dom";
import { perf } from "./perf";
import { VirtualList, VirtualRows } from "./windowed";
import { painter, painterDrew } from "./layers";
import { loadAll, panelMax, plots, ranges, rebuildPlots, requestFrame } from "./plot";
import { back, bindKeys, bindZoom, reset, setView } from "./zoom";
import { bindHover } from "./tooltip";
import { DEFAULT_SORT, changed, readUrl, routeChanges, state } from "./state";
import type { Change } from "./state";

(window as unknown as { tcpscopePerf: typeof perf }).tcpscopePerf = perf;

// ---------- connection list ----------

const endpoints = api.endpoints;
const sum = (c: Conn, k: string) => ((c.a2b[k] as number) ?? 0) + ((c.b2a[k] as number) ?? 0);

const COLUMNS: { key: string; label: string; cell: (c: Conn) => string }[] = [
  { key: "id", label: "id", cell: (c) => String(c.id) },
  { key: "endpoints", label: "endpoints", cell: endpoints },
  { key: "state", label: "state", cell: (c) => c.state },
  { key: "duration_s", label: "dur s", cell: (c) => c.duration_s.toFixed(2) },
  { key: "a2b.payload_bytes", label: "bytes a→b", cell: (c) => si((c.a2b.payload_bytes as number) ?? 0) },
  { key: "a2b.rexmit_packets", label: "rexmit", cell: (c) => String(sum(c, "rexmit_packets")) },
  { key: "b2a.zero_window_adverts", label: "zwin", cell: (c) => String(sum(c, "zero_window_adverts")) },
  { key: "a2b.rtt_avg_ms", label: "rtt ms", cell: (c) => (c.a2b.rtt_avg_ms === null ? "" : (c.a2b.rtt_avg_ms as number).toFixed(1)) },
  { key: "severity", label: "severity", cell: (c) => (c.severity === null ? "" : c.severity.toFixed(2)) },
  { key: "verdict", label: "verdict", cell: (c) => c.verdict ?? "" },
];

/** Text sort keys (ascending first); the rest are numbers (worst, i.e. largest, first). */
const TEXT_KEYS = new Set(["id", "endpoints", "state", "verdict", "file"]);

let connRows: VirtualRows<Conn | undefined> | undefined;

// The list as the server (or a report) filters and sorts it, fetched a page at a time as the
// rows come into sight: rows not yet here are blank. A load is one query's fetching: `shown`,
// the one `listRows` holds; `pending`, a query asked for and not answered yet (its rows replace
// these when its first page comes, so the list does not go blank meanwhile).
const LIST_PAGE = 200;
interface ListLoad {
  q: api.ListQuery;
  key: string;
  abort: AbortController;
  pages: Set<number>;
}
const listLoad = (): ListLoad => {
  const q = { sort: state.sort, desc: state.desc, q: state.filter, boring: state.boring, from: 0, n: LIST_PAGE };
  return { q, key: JSON.stringify(q), abort: new AbortController(), pages: new Set() };
};
let listRows: (Conn | undefined)[] = [];
let listTotal = 0;
let shown: ListLoad = listLoad();
let pending: ListLoad | undefined;

/** Asks for page `k` of `load`'s list; its rows are shown when they come. */
function fetchListPage(k: number, load: ListLoad) {
  if (load.pages.has(k)) return;
  load.pages.add(k);
  listBusy(+1);
  api
    .connPage({ ...load.q, from: k * LIST_PAGE }, load.abort.signal)
    .then(
      (p) => showListPage(p, load),
      (e) => {
        load.pages.delete(k);
        if ((e as Error).name !== "AbortError") status(`connection list: ${(e as Error).message}`);
      },
    )
    .finally(() => listBusy(-1));
}

/** The list is `aria-busy` while rows are asked for (the tests wait on it too). */
let listAsking = 0;
function listBusy(d: number) {
  listAsking += d;
  $("list").ariaBusy = String(listAsking > 0);
}

function showListPage(p: api.ListPage, load: ListLoad) {
  if (load === pending) {
    // The first answer to a new query: its rows replace the list's.
    [listRows, listTotal, shown, pending] = [new Array(p.matched), p.total, load, undefined];
  } else if (load !== shown) return;
  p.conns.forEach((c, j) => (listRows[p.from + j] = c));
  connRows!.set(listRows);
  showCount();
}

const showCount = () => ($("count").textContent = `${listRows.length} of ${listTotal}`);

function renderList() {
  const head = $("conns").querySelector("thead")!;
  head.innerHTML = "";
  const tr = document.createElement("tr");
  for (const col of COLUMNS) {
    const th = document.createElement("th");
    th.textContent = col.label + (state.sort === col.key ? (state.desc ? " ▼" : " ▲") : "");
    th.dataset.key = col.key;
    th.onclick = () => {
      if (state.sort === col.key) state.desc = !state.desc;
      else [state.sort, state.desc] = [col.key, !TEXT_KEYS.has(col.key)];
      changed({ list: true });
    };
    tr.append(th);
  }
  head.append(tr);
  connRows ??= new VirtualRows<Conn | undefined>($("list"), $("conns").querySelector("tbody")!, COLUMNS.length, (c, i) => {
    const r = document.createElement("tr");
    if (!c) {
      // Not here yet: a blank row of the same height, and its page asked for.
      r.className = "pending";
      for (let k = 0; k < COLUMNS.length; k++) r.insertCell().textContent = "\u00a0";
      fetchListPage(Math.floor(i / LIST_PAGE), shown);
      return r;
    }
    r.dataset.id = String(c.id);
    if (state.ids.includes(c.id)) r.classList.add("sel");
    if (!api.plottable(c.id)) r.classList.add("noplot");
    for (const col of COLUMNS) {
      const td = document.createElement("td");
      td.textContent = col.cell(c);
      if (col.key === "verdict" || col.key === "endpoints") {
        td.title = td.textContent;
        td.className = col.key;
      }
      r.append(td);
    }
    if (c.boring) r.classList.add("boring");
    r.onclick = (e) => select(c.id, e.ctrlKey || e.metaKey || e.shiftKey);
    return r;
  });
  const load = listLoad();
  if (load.key === shown.key) {
    connRows.set(listRows);
    showCount();
  } else if (pending?.key !== load.key) {
    // A new sort or filter: what was asked for the old one is of no use.
    pending?.abort.abort();
    shown.abort.abort();
    pending = load;
    fetchListPage(0, load);
  }
  ($("sort") as HTMLSelectElement).value = state.sort;
  $("sort-dir").textContent = state.desc ? "▼" : "▲";
}

function select(id: number, compare: boolean) {
  if (!api.plottable(id)) {
    status(`connection ${id} is not plotted in this report`);
    return;
  }
  if (compare && state.ids.length && !state.ids.includes(id)) state.ids = [state.ids[0], id];
  else state.ids = [id];
  state.view = {};
  state.history = [];
  changed({ list: true, plots: true, events: true });
}

// ---------- plots ----------

// ---------- events ----------

let eventList: VirtualList<EventRow> | undefined;

async function loadEvents() {
  eventList ??= new VirtualList<EventRow>($("events"), (e) => {
    const li = document.createElement("li");
    li.textContent = `${e.t.toFixed(6)} ${e.dir} ${e.kind} ${e.text}`;
    li.onclick = () => jumpTo(e);
    return li;
  });
  eventList.set([]);
  state.events = [];
  $("ev-count").textContent = "";
  if (!state.ids.length) return;
  try {
    const r = await api.events(state.ids[0]);
    state.events = r.events;
    $("ev-count").textContent = `(${r.events.length}${r.more ? ` + ${r.more} more` : ""})`;
    eventList.set(r.events);
  } catch (e) {
    status(`events: ${(e as Error).message}`);
  }
}

/** Shows an event: its data direction's plot, a time window around it, its packet marked. */
function jumpTo(e: EventRow) {
  const dir = e.data_dir;
  const { x0, x1 } = ranges();
  const last = Math.max(...plots.map((p) => p.fig?.last ?? 0), x1);
  const span = Math.max(1e-4, Math.min(x1 - x0, last / 20));
  state.focusFrame = e.frame;
  const turned = dir !== state.dir;
  state.dir = dir;
  setView({ t0: e.t - span / 2, t1: e.t + span / 2 }, true, 0, { dir: turned });
}

// ---------- wiring ----------

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
  let keys: string[];
  try {
    let list: api.ListPage;
    try {
      list = await api.connPage((shown = listLoad()).q);
    } catch (e) {
      // A link naming a sort key these traces do not have: the default order instead.
      if (state.sort === DEFAULT_SORT) throw e;
      [state.sort, state.desc] = [DEFAULT_SORT, true];
      list = await api.connPage((shown = listLoad()).q);
    }
    [listRows, listTotal] = [new Array(list.matched), list.total];
    list.conns.forEach((c, j) => (listRows[j] = c));
    shown.pages.add(0);
    keys = list.keys;
    $("traces").textContent = list.traces.map((t) => `${t.name ?? "?"} (${t.packets} packets${t.error ? `, error: ${t.error}` : ""})`).join(" · ");
    if (api.report) {
      const { plotted, listed, total } = api.report.report;
      $("traces").textContent += ` · report: plots of connections ${plotted.join(", ")}`;
      if (listed < total) $("traces").textContent += `; the ${listed} most troubled of ${total} connections listed`;
    }
  } catch (e) {
    status(`connection list: ${(e as Error).message}`);
    return;
  }
  const sort = $("sort") as HTMLSelectElement;
  sort.innerHTML = keys.map((k) => `<option>${k}</option>`).join("");
  sort.onchange = () => {
    state.sort = sort.value;
    state.desc = !TEXT_KEYS.has(sort.value);
    changed({ list: true });
  };
  $("sort-dir").onclick = () => {
    state.desc = !state.desc;
    changed({ list: true });
  };
  const filter = $("filter") as HTMLInputElement;
  filter.value = state.filter;
  filter.oninput = () => {
    state.filter = filter.value;
    changed({ list: true });
  };
  const boring = $("show-boring") as HTMLInputElement;
  boring.checked = state.boring;
  boring.onchange = () => {
    state.boring = boring.checked;
    changed({ list: true });
  };
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
    const first = api.report ? api.report.report.plotted[0] : listRows[0]?.id;
    if (first !== undefined) state.ids = [first];
  }
  changed({ list: true, plots: true, events: true });
}

// For the browser tests and the benchmark: where a mark of a class (prefix) is drawn that the
// pointer would hover there, in client pixels, and its frame.
(window as unknown as { tcpscopeMarkAt: unknown }).tcpscopeMarkAt = (prefix: string, plot = 0): [number, number, number | null] | null => {
  const p = plots[plot];
  if (!p?.frame || !p.fig) return null;
  const f = p.frame;
  const r = p.overlay.getBoundingClientRect();
  const fig = p.fig;
  for (let i = 0; i < fig.n; i++) {
    if (!fig.classes[fig.cls[i]].startsWith(prefix)) continue;
    const [mx, my] = markPoint(f, fig, i);
    // Whole client pixels, as a pointer has them; one the pointer would hover there (not a
    // segment drawn over it).
    const [cx, cy] = [Math.round(r.left + mx), Math.round(r.top + my)];
    const [x, y] = [cx - r.left, cy - r.top];
    if (x > LEFT && x < f.w - RIGHT && y > TOP && y < f.h - BOTTOM && hit(f, fig, x, y) === i) return [cx, cy, Number.isNaN(fig.frame[i]) ? null : fig.frame[i]];
  }
  return null;
};

// For the tests: the page's reading of a packed figure, back in the JSON answer's shape
// (docs/viewer.md), to compare with the JSON answer of the same view.
(window as unknown as { tcpscopeMarksOf: unknown }).tcpscopeMarksOf = async (conn: number, dir: Dir, v: api.Viewport) => {
  const f = await api.tsg(conn, dir, v);
  const OPS = "latdbopr";
  const WAYS = "udh", ANCHORS = "ablrc";
  const marks = [];
  for (let i = 0; i < f.n; i++) {
    const p = [];
    for (let j = f.mprim[i]; j < f.mprim[i + 1]; j++) {
      const k = f.pxy[j], n = f.pxy[j + 1] - k, o = f.op[j];
      const nums = Array.from(f.xy.subarray(k, k + (o === OP.TEXT ? 2 : n)), (v, q) => v + (q % 2 ? f.oy : f.ox));
      const word = o === OP.ARROW || o === OP.TICK ? [WAYS[f.extra[j]]] : o === OP.TEXT ? [ANCHORS[f.extra[j]], f.texts[f.xy[k + 2]]] : [];
      p.push([o === OP.TEXT ? "x" : OPS[o], f.colors[f.color[j]], ...nums, ...word]);
    }
    marks.push({ c: f.classes[f.cls[i]], f: Number.isNaN(f.frame[i]) ? null : f.frame[i], n: f.count[i], p });
  }
  return { x: f.x, y: f.y, title: f.title, marks };
};

// For the tests: who draws the data layers ("worker": drawworker.ts; "page": this thread).
(window as unknown as { tcpscopeDrawnBy: unknown }).tcpscopeDrawnBy = () => (painter ? "worker" : "page");

// For the tests: each plot's drawn ranges and pixel box.
(window as unknown as { tcpscopeFrames: unknown }).tcpscopeFrames = () => plots.map((p) => p.frame);

// For the benchmark: draws the current view `n` times in a row, every layer (data, axes,
// overlay) as if all were new, each frame read back from its canvases so that it is rasterized
// then (the browser would otherwise defer and merge the work); returns each frame's ms. With
// the drawing worker, a frame ends once the worker's drawings are swapped in (the data layers
// are rasterized there).
(window as unknown as { tcpscopeRedraw: unknown }).tcpscopeRedraw = async (n: number): Promise<number[]> => {
  const out = [];
  for (let k = 0; k < n; k++) {
    const start = performance.now();
    const { x0, x1, y } = ranges();
    const pmax = panelMax(x0, x1);
    plots.forEach((p, i) => p.draw(x0, x1, y[i][0], y[i][1], pmax, () => true, true));
    while (plots.some((p) => p.layers().some((l) => l.awaited()))) {
      await painterDrew();
      plots.forEach((p) => p.layers().forEach((l) => l.place()));
    }
    // (The worker's canvases are rasterized there, before it reports them drawn; they cannot be read here.)
    for (const p of plots) for (const c of p.el.querySelectorAll<HTMLCanvasElement>(painter ? "canvas:not(.data)" : "canvas")) c.getContext("2d")?.getImageData(0, 0, 1, 1);
    out.push(performance.now() - start);
  }
  return out;
};

main();
