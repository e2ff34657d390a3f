// With a recording (`tcpscope view run.tsm [trace.pcap]`): the list of its monitored
// connections in the connection table's place (4-tuple, duration, average bandwidth, the
// triage's diagnosis, and whether the capture has it); a click shows that connection's timeline
// (state.mon), with the capture's time-sequence plot of it under it when there is one.

import type { MonConn, Monitor } from "./api";
import { si } from "./draw";
import { $, escapeHtml } from "./dom";
import { changed, state } from "./state";

export let monitor: Monitor | null = null;

/** The monitored connection shown (state.mon), if the recording has it. */
export const shownConn = (): MonConn | undefined => monitor?.conns.find((c) => c.id === state.mon);

/** Lists the recording's connections, and shows the first (or the URL's). */
export function startMonitorList(m: Monitor) {
  monitor = m;
  // (The traces' list controls: display, which `hidden` does not override here.)
  for (const c of document.querySelectorAll<HTMLElement>("#side .controls")) c.style.display = "none";
  const captures = m.captures?.length ? ` · capture: ${m.captures.map((t) => `${t.name} (${t.packets} packets${t.error ? `, error: ${t.error}` : ""})`).join(" · ")}` : "";
  $("traces").textContent = `${m.recording}: ${m.conns.length} monitored connections${m.host ? ` on ${m.host}` : ""}${m.tail ? ` (${m.tail}; read up to there)` : ""}${captures}`;
  const cap = m.captures !== null;
  $("conns").querySelector("thead")!.innerHTML = `<tr><th>id</th><th>endpoints</th><th>dur s</th><th>avg bw</th>${cap ? "<th>capture</th>" : ""}<th>diagnosis</th></tr>`;
  const body = $("conns").querySelector("tbody")!;
  body.innerHTML = "";
  for (const c of m.conns) {
    const tr = document.createElement("tr");
    tr.dataset.mon = String(c.id);
    const capCell = cap ? `<td>${c.capture ? `conn ${c.capture}` : "not in it"}</td>` : "";
    tr.innerHTML = `<td>${c.id}</td><td class="endpoints">${escapeHtml(`${c.src}:${c.sport} → ${c.dst}:${c.dport}`)}</td><td>${c.duration_s.toFixed(2)}</td><td>${c.ave_bw === null ? "" : si(c.ave_bw) + "b/s"}</td>${capCell}<td title="${escapeHtml(c.diagnosis)}">${escapeHtml(c.diagnosis)}</td>`;
    tr.onclick = () => {
      if (state.mon === c.id) return;
      state.mon = c.id;
      state.view = {};
      state.history = [];
      changed({ list: true, plots: true, events: true, view: true });
    };
    body.append(tr);
  }
  if (state.mon === null || !shownConn()) state.mon = m.conns[0]?.id ?? null;
}

/** Marks the connection shown. */
export function renderMonitorList() {
  for (const tr of $("conns").querySelectorAll<HTMLElement>("tbody tr")) tr.classList.toggle("sel", Number(tr.dataset.mon) === state.mon);
}
