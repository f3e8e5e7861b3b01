// Deterministic pseudo-random unit vectors for vector-index tests: distinct for the tens of thousands of seeds used.

/** A unit vector of `dims` drawn from `seed` with mulberry32. */
export function seededUnitVector(seed: number, dims: number): Float32Array {
  const v = new Float32Array(dims);
  let a = seed >>> 0;
  for (let i = 0; i < dims; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    v[i] = ((t ^ (t >>> 14)) >>> 0) / 2147483648 - 1;
  }
  const norm = Math.hypot(...v);
  return v.map((c) => c / norm);
}
