// Builds the web console (Preact + uPlot) into dist/console, which the console server serves as static files.
import { defineConfig } from "vite";
import preact from "@preact/preset-vite";

const root = new URL(".", import.meta.url).pathname;

export default defineConfig({
  root,
  base: "/",
  plugins: [preact()],
  build: {
    outDir: new URL("../dist/console", import.meta.url).pathname,
    emptyOutDir: true,
    // The console's CSP is `default-src 'self'`: no inline script, so no module-preload polyfill either.
    modulePreload: { polyfill: false },
    // Small enough that one bundle is simplest to cache and serve.
    chunkSizeWarningLimit: 200,
  },
});
