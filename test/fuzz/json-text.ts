// JSON the fuzzer can send but JSON.stringify cannot write: raw fragments (NaN, 1e400, duplicate keys, bytes that
// are not UTF-8) inside an otherwise ordinary value, encoded to the exact bytes of a request body.

/** A fragment copied into the body as it is: JSON text, or bytes that need not be valid UTF-8. */
export class RawJson {
  constructor(readonly fragment: string | Uint8Array) {}
}

export type FuzzJson = null | boolean | number | string | RawJson | FuzzJson[] | { [key: string]: FuzzJson };
export type FuzzObject = { [key: string]: FuzzJson };

export function isObject(value: FuzzJson | undefined): value is FuzzObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof RawJson);
}

function write(value: FuzzJson, out: (Uint8Array | string)[]): void {
  if (value instanceof RawJson) {
    out.push(value.fragment);
  } else if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item, i) => {
      if (i > 0) out.push(",");
      write(item, out);
    });
    out.push("]");
  } else if (value !== null && typeof value === "object") {
    out.push("{");
    Object.entries(value).forEach(([key, item], i) => {
      if (i > 0) out.push(",");
      out.push(JSON.stringify(key), ":");
      write(item, out);
    });
    out.push("}");
  } else {
    // JSON.stringify writes lone surrogates as \udXXX escapes (well-formed JSON.stringify), which is what we send.
    out.push(JSON.stringify(value) ?? "null");
  }
}

/** The body bytes of a value. */
export function encodeJson(value: FuzzJson): Buffer {
  const parts: (Uint8Array | string)[] = [];
  write(value, parts);
  return Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : p)));
}

/** True when the value holds no raw fragment, so JSON.parse(encodeJson(v)) gives it back. */
export function isPlain(value: FuzzJson): boolean {
  if (value instanceof RawJson) return false;
  if (Array.isArray(value)) return value.every(isPlain);
  if (value !== null && typeof value === "object") return Object.values(value).every(isPlain);
  return typeof value !== "number" || Number.isFinite(value);
}

/** A short, printable account of a body for a failure report: text where it is UTF-8, else base64. */
export function describeBody(bytes: Uint8Array, max = 600): string {
  const buffer = Buffer.from(bytes);
  const text = buffer.toString("utf8");
  const printable = Buffer.from(text, "utf8").equals(buffer);
  const shown = printable ? text : `base64:${buffer.toString("base64")}`;
  return shown.length > max ? `${shown.slice(0, max)}… (${bytes.byteLength} bytes)` : shown;
}
