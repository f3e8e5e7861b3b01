// Protobuf binary request bodies for gRPC and Connect's application/proto: the generated message encoded with
// toBinary, then sometimes corrupted — truncated, bytes flipped, strings that are not UTF-8, overlong varints,
// lengths past the end, wire types that do not exist — and gRPC length-prefixed framing, right or wrong.
import { fromJson, ScalarType, toBinary, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { encodeJson, type FuzzObject } from "./json-text.js";
import type { Rng } from "./prng.js";

/** The message's binary encoding, or undefined when protobuf JSON refuses the (mutated) message. */
export function toBinaryOrUndefined(message: DescMessage, json: FuzzObject): Uint8Array | undefined {
  try {
    const parsed = JSON.parse(encodeJson(json).toString("utf8")) as JsonValue;
    return toBinary(message, fromJson(message, parsed, { ignoreUnknownFields: true }));
  } catch {
    return undefined;
  }
}

function stringFieldNumbers(message: DescMessage): number[] {
  return message.fields.filter((f) => (f.fieldKind === "scalar" || f.fieldKind === "list") && f.scalar === ScalarType.STRING).map((f) => f.number);
}

/** One corruption of a valid encoding. */
export function corruptBinary(rng: Rng, message: DescMessage, bytes: Uint8Array): Uint8Array {
  const out = Buffer.from(bytes);
  const append = (extra: Uint8Array): Uint8Array => Buffer.concat([out, extra]);
  switch (rng.int(9)) {
    case 0:
      return out.subarray(0, rng.int(out.length + 1));
    case 1: {
      for (let i = rng.between(1, 4); i > 0 && out.length > 0; i--) out[rng.int(out.length)] = rng.int(256);
      return out;
    }
    case 2: {
      // A string field holding bytes that are not UTF-8.
      const numbers = stringFieldNumbers(message);
      const fieldNo = numbers.length > 0 ? rng.pick(numbers) : 1;
      const bad = rng.pick([[0xff, 0xfe], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe6, 0x95]]);
      return append(new BinaryWriter().tag(fieldNo, WireType.LengthDelimited).bytes(new Uint8Array(bad)).finish());
    }
    case 3:
      // An unknown field of a random number and wire type.
      return append(new BinaryWriter().tag(rng.between(1, 536_870_911), rng.pick([WireType.Varint, WireType.Bit64, WireType.LengthDelimited, WireType.Bit32])).raw(rng.bytes(rng.int(12))).finish());
    case 4:
      // A varint of eleven bytes.
      return append(Uint8Array.from([0x08, ...Array.from({ length: 11 }, () => 0xff)]));
    case 5:
      // A length far past the end of the message.
      return append(Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x07, 0x61]));
    case 6:
      // Wire types 6 and 7 do not exist; 3 opens a group that never ends.
      return append(Uint8Array.from([(rng.between(1, 15) << 3) | rng.pick([3, 6, 7]), 0x01]));
    case 7:
      // Field number 0 is invalid.
      return append(Uint8Array.from([0x00, 0x01]));
    default:
      return Buffer.from(rng.bytes(rng.int(64)));
  }
}

/** A gRPC length-prefixed message. */
export function envelope(data: Uint8Array, flags = 0): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(flags, 0);
  header.writeUInt32BE(data.byteLength, 1);
  return Buffer.concat([header, data]);
}

/** gRPC framing gone wrong: compressed flag without an encoding, lengths that lie, two messages, a cut header. */
export function badFraming(rng: Rng, data: Uint8Array): Buffer {
  const framed = envelope(data);
  switch (rng.int(7)) {
    case 0:
      return envelope(data, 1);
    case 1: {
      const lying = Buffer.from(framed);
      lying.writeUInt32BE(data.byteLength + rng.between(1, 100), 1);
      return lying;
    }
    case 2: {
      const huge = Buffer.from(framed);
      huge.writeUInt32BE(0xffffffff, 1);
      return huge;
    }
    case 3:
      return Buffer.concat([framed, framed]);
    case 4:
      return framed.subarray(0, rng.int(5));
    case 5:
      return envelope(data, rng.pick([0x80, 0x02, 0x7f]));
    default:
      return Buffer.concat([framed, Buffer.from(rng.bytes(rng.between(1, 8)))]);
  }
}
