// What the browser tests share (not a test file itself: node's runner takes `*.test.mjs`).

import { spawn } from "node:child_process";

/** Starts `bin view --no-open ARGS` and resolves with the process and the URL it prints. */
export function startViewer(bin, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ["view", "--no-open", ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let buf = "";
    p.stdout.on("data", (d) => {
      buf += d;
      const m = buf.match(/http:\/\/\S+/);
      if (m) resolve([p, m[0]]);
    });
    p.on("exit", (code) => reject(new Error(`tcpscope view exited ${code}`)));
  });
}
