// What the CLI prints: responses as JSON with proto field names on stdout, errors as one line on stderr.
import { toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";

export function printResponse<O extends DescMessage>(schema: O, message: MessageShape<O>): void {
  const json = toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit: true });
  process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
}

/** Anything shaped like an API key, `mem_<tag>_<key_id>_<secret>`, loses its secret before it is printed. */
const KEY_SHAPE = /\b(mem_[A-Za-z0-9]+_[A-Za-z0-9]+)_[A-Za-z0-9]+/g;

export function redact(text: string): string {
  return text.replace(KEY_SHAPE, "$1_***");
}

/** The error's message only: no stack, no cause, and never a key. */
export function errorMessage(e: unknown): string {
  if (e instanceof ConnectError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

export function reportError(e: unknown): void {
  process.stderr.write(`engram: ${redact(errorMessage(e))}\n`);
}
