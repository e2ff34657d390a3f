// The connection list: a table of the traces' connections as the server (or a report) sorts
// and filters them, fetched a page at a time as rows come into sight, with its controls (sort,
// direction, filter, boring). Its order and filter are in state (and so in the URL); a click
// selects a connection (ctrl/shift-click: a second, compared) by writing state.ids and calling
// `changed`. The ranking and filtering are the server's (api.connPage), not repeated here.

import * as api from "./api";
import type { Conn, Dir } from "./api";
import { si } from "./draw";
import { $, status } from "./dom";
import { DEFAULT_SORT, changed, state } from "./state";
import { VirtualRows } from "./windowed";

const endpoints = api.endpoints;
const sum = (c: Conn, k: string) => ((c.a2b[k] as number) ?? 0) + ((c.b2a[k] as number) ?? 0);

/** The direction that sent the most payload bytes (a2b on a tie), as `tcpscope plot` picks it. */
export const busier = (c: Conn): Dir => (((c.b2a.payload_bytes as number) ?? 0) > ((c.a2b.payload_bytes as number) ?? 0) ? "b2a" : "a2b");

const COLUMNS: { key: string; label: string; cell: (c: Conn) => string }[] = [
  { key: "id", label: "id", cell: (c) => String(c.id) },
  { key: "endpoints", label: "endpoints", cell: endpoints },
  { key: "state", label: "state", cell: (c) => c.state },
  { key: "duration_s", label: "dur s", cell: (c) => c.duration_s.toFixed(2) },
  { key: "a2b.payload_bytes", label: "bytes a→b", cell: (c) => si((c.a2b.payload_bytes as number) ?? 0) },
  // Both directions, shown and sorted alike (the sum: `both.NAME`).
  { key: "both.rexmit_packets", label: "rexmit", cell: (c) => String(sum(c, "rexmit_packets")) },
  { key: "both.zero_window_adverts", label: "zwin", cell: (c) => String(sum(c, "zero_window_adverts")) },
  { key: "a2b.rtt_avg_ms", label: "rtt ms", cell: (c) => (c.a2b.rtt_avg_ms === null ? "" : (c.a2b.rtt_avg_ms as number).toFixed(1)) },
  { key: "severity", label: "severity", cell: (c) => (c.severity === null ? "" : c.severity.toFixed(2)) },
  { key: "verdict", label: "verdict", cell: (c) => c.verdict ?? "" },
];

/** The keys a first click sorts ascending, as the server (or the report) says; the rest are
 * numbers, worst (largest) first. */
let ascending = new Set<string>();

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

/** Shows the list for state's order and filter: at once if its rows are here, else once its first page comes. */
export function renderList() {
  const head = $("conns").querySelector("thead")!;
  head.innerHTML = "";
  const tr = document.createElement("tr");
  for (const col of COLUMNS) {
    const th = document.createElement("th");
    th.textContent = col.label + (state.sort === col.key ? (state.desc ? " ▼" : " ▲") : "");
    th.dataset.key = col.key;
    th.onclick = () => {
      if (state.sort === col.key) state.desc = !state.desc;
      else [state.sort, state.desc] = [col.key, !ascending.has(col.key)];
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
    r.onclick = (e) => select(c, e.ctrlKey || e.metaKey || e.shiftKey);
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

function select(c: Conn, compare: boolean) {
  const id = c.id;
  if (!api.plottable(id)) {
    status(`connection ${id} is not plotted in this report`);
    return;
  }
  const compared = compare && state.ids.length && !state.ids.includes(id);
  if (compared) state.ids = [state.ids[0], id];
  else state.ids = [id];
  // A new first connection: its direction with the most data (unless one was chosen).
  const turned = !compared && state.dirAuto && busier(c) !== state.dir;
  if (!compared && state.dirAuto) state.dir = busier(c);
  state.view = {};
  state.history = [];
  // The packet an event jumped to was the previous connection's.
  state.focusFrame = null;
  changed({ list: true, plots: true, events: true, dir: turned });
}

/** The listed row of connection `id`, if its page is here. */
export const listedConn = (id: number): Conn | undefined => listRows.find((c) => c?.id === id);

/**
 * Fetches the list's first page (in the default order if the URL's sort key is not one these
 * traces have), says the traces in the header, and binds the list's controls. False if the
 * list could not be had (said in the status line): the page has nothing to show.
 */
export async function startList(): Promise<boolean> {
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
    ascending = new Set(list.ascending_keys);
    $("traces").textContent = list.traces.map((t) => `${t.name ?? "?"} (${t.packets} packets${t.error ? `, error: ${t.error}` : ""})`).join(" · ");
    if (api.report) {
      const { plotted, listed, total } = api.report.report;
      $("traces").textContent += ` · report: plots of connections ${plotted.join(", ")}`;
      if (listed < total) $("traces").textContent += `; the ${listed} most troubled of ${total} connections listed`;
    }
  } catch (e) {
    status(`connection list: ${(e as Error).message}`);
    return false;
  }
  const sort = $("sort") as HTMLSelectElement;
  sort.innerHTML = keys.map((k) => `<option>${k}</option>`).join("");
  sort.onchange = () => {
    state.sort = sort.value;
    state.desc = !ascending.has(sort.value);
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
  return true;
}

/** The first connection listed (none: undefined). */
export const firstListed = (): number | undefined => listRows[0]?.id;
