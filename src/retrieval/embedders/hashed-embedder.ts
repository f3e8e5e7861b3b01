// The embedded default: feature hashing of stemmed words, word bigrams and character trigrams. Offline, no model.
import { normalize, type Embedder } from "../embedder.js";
import { terms } from "../text.js";
import { fnv1a } from "../hash.js";


export class HashedEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;

  constructor(dimensions = 384) {
    this.dimensions = dimensions;
    this.id = `hashed-ngrams-v1-${dimensions}`;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text));
  }

  embedOne(text: string): Float32Array {
    const vector = new Float32Array(this.dimensions);
    const add = (feature: string, weight: number): void => {
      const hash = fnv1a(feature);
      // The top bit picks the sign so that colliding features tend to cancel rather than pile up.
      vector[hash % this.dimensions] = (vector[hash % this.dimensions] as number) + (hash & 0x80000000 ? -weight : weight);
    };
    const stems = terms(text);
    stems.forEach((stem, i) => {
      add(`w:${stem}`, 1);
      if (i > 0) add(`b:${stems[i - 1]} ${stem}`, 0.5);
      const padded = `^${stem}$`;
      for (let j = 0; j + 3 <= padded.length; j++) add(`c:${padded.slice(j, j + 3)}`, 0.25);
    });
    return normalize(vector);
  }
}
