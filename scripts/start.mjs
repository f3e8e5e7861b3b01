// `npm start`: builds when the compiled server is missing or older than the sources, then starts it.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const entry = "dist/src/serve.js";

function newestMtime(dir) {
  let newest = 0;
  for (const item of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, item.name);
    const mtime = item.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs;
    newest = Math.max(newest, mtime);
  }
  return newest;
}

const stale = !fs.existsSync(entry) || fs.statSync(entry).mtimeMs < Math.max(newestMtime("src"), newestMtime("gen"), newestMtime("console"));
if (stale) {
  const build = spawnSync("node", ["scripts/build.mjs"], { stdio: "inherit" });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
await import(path.resolve(entry));
