// Where `make build` puts what the server reads at run time besides its code: the OpenAPI document, the descriptor
// image that keeps the proto comments, and the console's bundle, all under <package root>/dist.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The nearest directory above this module with a package.json: the repository, or /app in the container. */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "package.json"))) {
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}

/** `dist/openapi.json`, served at /openapi.json. */
export function builtDocumentPath(root = packageRoot()): string {
  return path.join(root, "dist", "openapi.json");
}

/** `dist/engram-image.binpb`: the descriptors as `buf build -o` writes them, with the proto comments. */
export function builtImagePath(root = packageRoot()): string {
  return path.join(root, "dist", "engram-image.binpb");
}

/** `dist/console`: the console's Vite bundle. */
export function builtConsolePath(root = packageRoot()): string {
  return path.join(root, "dist", "console");
}
