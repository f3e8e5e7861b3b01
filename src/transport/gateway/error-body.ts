// Writes the one JSON error body every HTTP error uses: {"code": "...", "message": "...", "details": [...]}.
import type { Code } from "@connectrpc/connect";
import { boundedMessage, codeName, httpStatusOf } from "../../platform/errors.js";
import type { HttpResponder } from "./responder.js";

export interface ErrorBody {
  readonly code: string;
  readonly message: string;
  readonly details: readonly unknown[];
}

export function sendError(res: HttpResponder, code: Code, message: string, status = httpStatusOf(code)): void {
  const body: ErrorBody = { code: codeName(code), message: boundedMessage(message), details: [] };
  res.send(status, "application/json", JSON.stringify(body));
}
