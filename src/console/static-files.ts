// Serves the built console (Vite output) from one directory: right MIME types, no escape from the directory,
// long-lived caching for content-hashed assets, and index.html for every other path (client-side routing).
import fs from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import type http from "node:http";
import { methodNotAllowed, sendJson, sendText } from "./console-http.js";

const MIME_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".wasm": "application/wasm",
};

/** Vite names built assets `<name>-<hash>.<ext>` under assets/: such a file never changes, so it may be cached for good. */
const HASHED_ASSET = /^assets\/[^/]+-[A-Za-z0-9_-]{8,}\.[A-Za-z0-9]+$/;

export const NOT_BUILT = "console not built: run make build";

/**
 * The relative file path a URL path names, or undefined when a segment tries to leave its directory: `.`, `..`,
 * an encoded slash or backslash, or a NUL, in plain or percent-encoded form.
 */
export function relativePathOf(urlPath: string): string | undefined {
  const segments: string[] = [];
  for (const raw of urlPath.split("/")) {
    if (raw === "") continue;
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    if (segment === "." || segment === ".." || /[/\\\0]/.test(segment)) return undefined;
    segments.push(segment);
  }
  return segments.join("/");
}

export class StaticFiles {
  readonly #root: string;

  constructor(root: string) {
    this.#root = path.resolve(root);
  }

  async serve(req: http.IncomingMessage, res: http.ServerResponse, urlPath: string): Promise<void> {
    if (req.method !== "GET" && req.method !== "HEAD") {
      methodNotAllowed(req, res, ["GET", "HEAD"]);
      return;
    }
    const relative = relativePathOf(urlPath);
    if (relative === undefined) {
      sendJson(res, 400, { error: "path refused: it may not leave the console's directory" });
      return;
    }
    const root = await realPath(this.#root);
    const file = root === undefined || relative === "" ? undefined : await fileWithin(root, relative);
    if (file !== undefined) {
      await send(req, res, file, HASHED_ASSET.test(relative) ? "public, max-age=31536000, immutable" : "no-cache");
      return;
    }
    const index = root === undefined ? undefined : await fileWithin(root, "index.html");
    if (index === undefined) {
      sendText(res, 503, NOT_BUILT);
      return;
    }
    await send(req, res, index, "no-cache");
  }
}

async function realPath(p: string): Promise<string | undefined> {
  try {
    return await fs.promises.realpath(p);
  } catch {
    return undefined;
  }
}

/** The regular file at `relative` under `root`, after symlinks, only if it is still under `root`. */
async function fileWithin(root: string, relative: string): Promise<{ path: string; size: number } | undefined> {
  const real = await realPath(path.join(root, relative));
  if (real === undefined || !real.startsWith(root + path.sep)) return undefined;
  try {
    const stat = await fs.promises.stat(real);
    return stat.isFile() ? { path: real, size: stat.size } : undefined;
  } catch {
    return undefined;
  }
}

async function send(req: http.IncomingMessage, res: http.ServerResponse, file: { path: string; size: number }, cacheControl: string): Promise<void> {
  res.writeHead(200, {
    "content-type": MIME_TYPES[path.extname(file.path).toLowerCase()] ?? "application/octet-stream",
    "content-length": String(file.size),
    "cache-control": cacheControl,
  });
  if (req.method === "HEAD") {
    res.end();
    return;
  }
  try {
    await pipeline(fs.createReadStream(file.path), res);
  } catch {
    // The client left, or the file went away mid-read: the response is already cut short; nothing more to say.
    res.destroy();
  }
}
