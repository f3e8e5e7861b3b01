// Where the built OpenAPI document lives, and how it is made from a descriptor image with source info (the build)
// or from the descriptors embedded in gen/ (a server run from sources, without comments).
import fs from "node:fs";
import path from "node:path";
import { createFileRegistry, fromBinary, type DescService, type JsonObject } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { ENGRAM_SERVICES } from "../client/services.js";
import { PLANNED_SERVICES } from "../services/planned.js";
import { protoComment } from "../protocol/proto-comments.js";
import { buildOpenApiDocument } from "./openapi-document.js";
import { packageRoot } from "../platform/build-output.js";

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
