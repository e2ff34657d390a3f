// The events list: the first connection's events (retransmissions, zero windows, …) as the
// server names them, in a list that builds only the rows in sight. A click jumps to the event:
// the plots turn to the direction whose data it is about (the event's `data_dir`, sent by the
// server: not worked out here), a time window around it, its packet marked (state.focusFrame).

import * as api from "./api";
import type { EventRow } from "./api";
import { $, status } from "./dom";
import { plots, ranges } from "./plot";
import { setView, state } from "./state";
import { VirtualList } from "./windowed";

let eventList: VirtualList<EventRow> | undefined;

/** Lists the first connection's events (state.events), or none. */
export async function loadEvents() {
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
  state.dirAuto = false;
  setView({ t0: e.t - span / 2, t1: e.t + span / 2 }, true, 0, { dir: turned });
}
