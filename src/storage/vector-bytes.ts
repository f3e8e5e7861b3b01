// Vectors as LMDB stores them: the raw bytes of their float32 values (entries, core nodes, caller vector spaces).

/** The vector's bytes, without a copy. */
export function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** A vector copied out of stored bytes (which need not be 4-byte aligned). */
export function vectorFromBytes(bytes: Uint8Array): Float32Array {
  const copy = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(copy.buffer).set(bytes);
  return copy;
}
