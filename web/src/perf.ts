// Timings the benchmark (bench/zoom.mjs) and the browser tests read, as `window.tcpscopePerf`
// (hooks.ts), all in ms. Here rather than in hooks.ts because the plots record into them.
//
// frames: each requestAnimationFrame callback; painted: from its start until the browser has
// done the frame's rendering work on this thread (style, layout, paint, and the canvases'
// rasterization at commit, which happens after the callback: 2D canvases are rasterized in
// software here), read by a message posted at the callback's end, so a task queued before it
// counts too; long: the browser's long animation frames (over 50 ms, whatever their work:
// answers read, input, frames); shown: from an answer's arrival (read) until the frame that
// drew the last of it is rendered. warm: a new plot's first drawing, before its answers
// (ConnPlot.warm), until rendered. fetches: from asking for a plot's answers until they came.

export const perf = { frames: [] as number[], painted: [] as number[], shown: [] as number[], fetches: [] as number[], long: [] as number[], warm: [] as number[] };

try {
  new PerformanceObserver((l) => l.getEntries().forEach((e) => perf.long.push(e.duration))).observe({ type: "long-animation-frame", buffered: true });
} catch {
  // Not in this browser: `painted` still measures each frame.
}

const afterRender = new MessageChannel();
let rendering: [number, number[]][] = [];
afterRender.port1.onmessage = () => {
  const now = performance.now();
  for (const [s, into] of rendering) into.push(now - s);
  rendering = [];
};

/** Records into `into`, once the browser has rendered this frame, how long since `start`. */
export function timeRendering(start: number, into = perf.painted) {
  if (!rendering.length) afterRender.port2.postMessage(0);
  rendering.push([start, into]);
}
