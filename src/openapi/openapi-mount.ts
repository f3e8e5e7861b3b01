// Serves GET /openapi.json without an API key: the document the build wrote, else one built at start from the
// embedded descriptors (no comments there, so no descriptions).
import fs from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { Logger } from "../platform/logger.js";
import type { Mount } from "../transport/rpc-router.js";
import { abandonBody } from "../transport/request-body.js";
import { sendError } from "../transport/gateway/error-body.js";
import { HttpResponder } from "../transport/gateway/responder.js";
import { builtDocumentPath } from "../platform/build-output.js";
import { documentFromDescriptors, packageVersion } from "./document-source.js";

export const OPENAPI_PATH = "/openapi.json";

/** The document's JSON text: read once here, so every request answers from memory. */
function loadDocument(services: readonly DescService[], logger: Logger, file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (e: unknown) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  // A server started from sources without `make build`: the same routes and schemas, but gen/ has no comments.
  logger.info({ path: file }, "openapi.json not built (run make build): serving /openapi.json without descriptions");
  return JSON.stringify(documentFromDescriptors(services, packageVersion()));
}

export function openApiMount(services: readonly DescService[], logger: Logger, file = builtDocumentPath()): Mount {
  const body = Buffer.from(loadDocument(services, logger, file), "utf8");
  return {
    path: OPENAPI_PATH,
    listener: (req, res) => {
      const out = new HttpResponder(res);
      const method = req.method ?? "GET";
      abandonBody(req, res);
      // HEAD is GET without the body (Node leaves it out), as HTTP asks of every GET resource.
      if (method !== "GET" && method !== "HEAD") {
        res.setHeader("allow", "GET, HEAD");
        sendError(out, Code.Unimplemented, `${method} is not allowed on "${OPENAPI_PATH}"`, 405);
        return;
      }
      out.send(200, "application/json", body);
    },
  };
}
