// Boundary and mistyped values by protobuf scalar type: empty, maximum, one over; 0, -1, 2^63; NaN; long and
// multibyte strings, NUL, lone surrogates, bytes that are not UTF-8; nesting far deeper than any limit.
import { ScalarType } from "@bufbuild/protobuf";
import type { Rng } from "./prng.js";
import { RawJson, type FuzzJson } from "./json-text.js";

const STRINGS: readonly string[] = [
  "", " ", "\t\n", "a", "0", "-1", "null", "true", "undefined", "NaN", "1e309", "-0", "0x1F",
  "18446744073709551616", "9223372036854775808",
  // multibyte, combining, bidi, zero-width, BOM, the last code points
  "é", "数据库迁移", "🚀", "👨‍👩‍👧‍👦", "e\u0301", "\u202eabc", "a\u200bb", "\ufeffbom", "\uffff", "\u{10ffff}", "ﬁİß",
  // NUL and control characters
  "\u0000", "a\u0000b", "\u0001\u001f\u007f", "line\r\nX-Injected: 1", "\r", "\b\f",
  // lone surrogates (sent as \udXXX escapes in JSON)
  "\ud800", "\udfff", "a\ud800b", "\udc00\ud800",
  // path pieces
  "..", ".", "../..", "../../etc/passwd", "/", "a/b", "a%2Fb", "%2e%2e", "%00", "%", "%ZZ", "?", "#", "*", "\\", "C:\\x", "~",
  // names objects already have
  "__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf",
  // other interpreters
  "' OR '1'='1", "<script>alert(1)</script>", "${7*7}", "{{7*7}}", "%s%s%s%n", "(a+)+$", "[", ".*",
  // JSON text and times
  "{}", "[]", '{"a":1}', "[[[[", "2024-02-30T25:61:61Z", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z",
  "-001-01-01T00:00:00Z", "2024-01-01T00:00:00+99:99", "1970-01-01T00:00:00Z",
];

const LONG_LENGTHS = [63, 64, 65, 100, 101, 255, 256, 257, 1000, 1001, 1024, 1025, 4096, 10_000, 65_536];
const LONG_UNITS = ["x", "é", "数", "🚀", "\u0000", "a\ud800"];

/** A boundary string of at most about `budget` bytes. */
export function boundaryString(rng: Rng, budget: number): string {
  if (rng.chance(0.7)) return rng.pick(STRINGS);
  const unit = rng.pick(LONG_UNITS);
  const unitBytes = Buffer.byteLength(JSON.stringify(unit)) - 2;
  const length = Math.min(rng.pick(LONG_LENGTHS), Math.max(1, Math.floor(budget / unitBytes)));
  return unit.repeat(Math.ceil(length / unit.length)).slice(0, length);
}

const raw = (text: string): RawJson => new RawJson(text);

const INT32: readonly FuzzJson[] = [0, -1, 1, 2147483647, 2147483648, -2147483648, -2147483649, 4294967296, 1.5, "12", "NaN", raw("1e400"), raw("-0"), raw("1E2")];
const UINT32: readonly FuzzJson[] = [0, 1, -1, 4294967295, 4294967296, 2147483648, 1.5, "7", raw("1e400"), raw("-0")];
const INT64: readonly FuzzJson[] = [
  "0", "-1", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "1.5", "", " 1",
  raw("9223372036854775808"), raw("18446744073709551616"), 1e20, 9007199254740993, -1,
];
const UINT64: readonly FuzzJson[] = [
  "0", "1", "18446744073709551615", "18446744073709551616", "-1", "9223372036854775808", raw("18446744073709551615"),
  9007199254740992, 9007199254740993, 0, 1e30,
];
const FLOAT: readonly FuzzJson[] = [0, raw("-0"), "NaN", "Infinity", "-Infinity", 3.4028235e38, 3.5e38, 1e-46, raw("1e400"), -1, 1, 2, -2, 1.0000001];
const DOUBLE: readonly FuzzJson[] = [0, raw("-0"), "NaN", "Infinity", "-Infinity", 1.7976931348623157e308, raw("1e309"), 5e-324, raw("-1e400"), -1, 1, 2, -2];

/** A boundary value of the right JSON kind for a protobuf scalar. */
export function boundaryScalar(rng: Rng, scalar: ScalarType, budget: number): FuzzJson {
  switch (scalar) {
    case ScalarType.STRING:
      return boundaryString(rng, budget);
    case ScalarType.BYTES:
      return rng.pick(["", "AA==", "not base64!", "////", "_-_-", Buffer.from(rng.bytes(rng.int(64))).toString("base64")]);
    case ScalarType.BOOL:
      return rng.chance(0.5);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return rng.pick(INT32);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return rng.pick(UINT32);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return rng.pick(INT64);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return rng.pick(UINT64);
    case ScalarType.FLOAT:
      return rng.pick(FLOAT);
    case ScalarType.DOUBLE:
      return rng.pick(DOUBLE);
  }
}

const WRONG_KINDS: readonly FuzzJson[] = [
  123, -1.5, 0, true, false, "str", "", [], [1, "a"], {}, { a: 1 }, { "": [] }, raw("NaN"), raw("Infinity"), raw("1e400"), raw('"\\u0000"'),
];

/** A value of some JSON kind, mostly not the one the field takes. */
export function mistyped(rng: Rng): FuzzJson {
  return rng.pick(WRONG_KINDS);
}

/** JSON text nested `depth` levels deep, as arrays or objects. */
export function deepJsonText(rng: Rng, depth: number): string {
  if (rng.chance(0.5)) return `${"[".repeat(depth)}${"]".repeat(depth)}`;
  return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

/** Malformed JSON text, for fields that hold JSON as a string. */
const BAD_JSON = ['{"a":', "{'a':1}", "[1,]", '{"a":1}}', "NaN", "undefined", '{"a":1,"a":2}', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"x":1}}}', "\u0000", '"\\ud800"'];

export function badJsonText(rng: Rng): string {
  return rng.pick(BAD_JSON);
}

/** A JSON string literal whose bytes are not valid UTF-8 (raw 0xff, an encoded surrogate, a cut sequence). */
export function invalidUtf8Literal(rng: Rng): RawJson {
  const bad = rng.pick([[0xff], [0xfe, 0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe6, 0x95], [0xf4, 0x90, 0x80, 0x80], [0x80]]);
  return new RawJson(Buffer.concat([Buffer.from('"a'), Buffer.from(bad), Buffer.from('b"')]));
}
