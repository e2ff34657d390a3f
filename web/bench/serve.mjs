// Starts `tcpscope view --no-open ARGS...` for a benchmark; resolves with the process and the
// URL it prints.

import { spawn } from "node:child_process";

export function startView(bin, args) {
  const server = spawn(bin, ["view", "--no-open", ...args], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let buf = "";
    server.stdout.on("data", (d) => {
      buf += d;
      const m = buf.match(/http:\/\/\S+/);
      if (m) resolve({ server, url: m[0] });
    });
    server.on("exit", (c) => reject(new Error(`tcpscope view exited ${c}`)));
  });
}
