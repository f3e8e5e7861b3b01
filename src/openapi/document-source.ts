// Where the built OpenAPI document lives, and how it is made from a descriptor image with source info (the build)
// or from the descriptors embedded in gen/ (a server run from sources, without comments).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createFileRegistry, fromBinary, type DescService, type JsonObject } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { ENGRAM_SERVICES } from "../client/services.js";
import { PLANNED_SERVICES } from "../services/planned.js";
import { protoComment } from "../protocol/proto-comments.js";
import { buildOpenApiDocument } from "./openapi-document.js";

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

/** `dist/openapi.json` under the package root, written by `make build`. */
export function builtDocumentPath(root = packageRoot()): string {
  return path.join(root, "dist", "openapi.json");
}

export function packageVersion(root = packageRoot()): string {
  const json = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version?: unknown };
  return typeof json.version === "string" ? json.version : "0.0.0";
}

/** The services the HTTP/JSON gateway serves, by type name: every client service and any planned one. */
export const HTTP_SERVICE_NAMES: readonly string[] = [...Object.values(ENGRAM_SERVICES), ...PLANNED_SERVICES].map((s) => s.typeName);

/** The document, with proto comments as descriptions, from a FileDescriptorSet with source info (`buf build -o`). */
export function documentFromImage(image: Uint8Array, version: string): JsonObject {
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, image));
  const services = HTTP_SERVICE_NAMES.map((name) => {
    const service = registry.getService(name);
    if (service === undefined) throw new Error(`the descriptor image lacks ${name}`);
    return service;
  });
  return buildOpenApiDocument({ services, version, describe: protoComment });
}

/** The document from descriptors without source info: same routes and schemas, no descriptions from comments. */
export function documentFromDescriptors(services: readonly DescService[], version: string): JsonObject {
  return buildOpenApiDocument({ services, version });
}

/** Writes the document built from the image file to `outPath`, whole or not at all (a reader never sees half). */
export function writeDocumentFromImage(imagePath: string, outPath: string, version = packageVersion()): void {
  const document = documentFromImage(fs.readFileSync(imagePath), version);
  fs.mkdirSync(path.dirname(outPath), { recursive: true });
  const temporary = `${outPath}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, JSON.stringify(document));
  fs.renameSync(temporary, outPath);
}
