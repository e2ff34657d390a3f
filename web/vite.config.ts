import { defineConfig } from "vite";
import { viteSingleFile } from "vite-plugin-singlefile";

// One self-contained index.html: the binary embeds it, and `tcpscope report` inlines its data
// into the same file, so the report opens offline.
export default defineConfig({
  plugins: [viteSingleFile()],
  build: { outDir: "dist", emptyOutDir: true, target: "es2020" },
});
