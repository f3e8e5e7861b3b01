// Why an import line was refused, and the error the caller sees: its code, and a message naming the line and field
// (`lines[3].record.skillId: …`), whatever part of the import found the fault.
import { Code, ConnectError } from "@connectrpc/connect";
import { RecordDecodeError } from "../storage/record-codec.js";

/** A fault of one line; `field` is relative to the line ("record.runId", "kind"), "" for the line as a whole. */
export class LineFault extends Error {
  readonly code: Code;
  readonly field: string;

  constructor(field: string, problem: string, code: Code = Code.InvalidArgument) {
    super(problem);
    this.name = "LineFault";
    this.field = field;
    this.code = code;
  }
}

/** A fault of the line's record, at `field` of it. */
export function recordFault(field: string, problem: string, code: Code = Code.InvalidArgument): LineFault {
  return new LineFault(field === "" ? "record" : `record.${field}`, problem, code);
}

/**
 * The caller's error for a failure while line `index` was handled: a LineFault or a record that does not decode
 * becomes a ConnectError naming `lines[index]…`; anything else (a storage failure) passes unchanged.
 */
export function atLine(index: number, e: unknown): unknown {
  const line = `lines[${index}]`;
  if (e instanceof LineFault) return new ConnectError(`${e.field === "" ? line : `${line}.${e.field}`}: ${e.message}`, e.code);
  if (e instanceof RecordDecodeError) {
    const field = e.field === "" ? `${line}.record` : `${line}.record.${e.field}`;
    // The decoder's message names the record kind and key; the caller needs the field and what is wrong with it.
    const problem = e.message.replace(/^.*?: field \S+ /, "").replace(/^.*? record \S+ /, "");
    return new ConnectError(`${field}: ${problem}`, Code.InvalidArgument);
  }
  return e;
}
