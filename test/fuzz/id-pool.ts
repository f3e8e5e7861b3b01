// Real ids seen in answers (run, entry, lesson, project, node ids …), by field name, so generated requests name
// records that exist — the fuzz user's and the victim's — and reach the code behind the not-found checks.
import type { Rng } from "./prng.js";

const PER_NAME = 48;
const MAX_VALUE_CHARS = 200;
// Field names whose values are worth sending back: ids, page tokens, usernames. Not names or contents: the victim's
// contents carry a canary that must only ever come back to the victim.
const HARVESTED = /(^|_)(id|ids|username|token)$/;

const RECORDS = 400;

/** The ids of one object of an answer, together: a project with its agent, a node with its run. */
export type IdRecord = Readonly<Record<string, string | number>>;

export class IdPool {
  readonly #byName = new Map<string, (string | number)[]>();
  readonly #records: IdRecord[] = [];
  /** The records' JSON, to skip duplicates in constant time: answers hold thousands of objects. */
  readonly #recordKeys = new Set<string>();
  readonly #rng: Rng;

  /** `rng` only decides which value a full list drops, so a long run's pool keeps changing but stays bounded. */
  constructor(rng: Rng) {
    this.#rng = rng;
  }

  add(name: string, value: string | number): void {
    if (value === "" || value === 0 || (typeof value === "string" && value.length > MAX_VALUE_CHARS)) return;
    const list = this.#byName.get(name) ?? [];
    if (list.includes(value)) return;
    if (list.length < PER_NAME) list.push(value);
    else list[this.#rng.int(PER_NAME)] = value;
    this.#byName.set(name, list);
  }

  /** Records the id-like values of an answer, at any depth, from its first few hundred objects. */
  harvest(json: unknown): void {
    this.#walk(json, 0, { objects: 300 });
  }

  #walk(json: unknown, depth: number, budget: { objects: number }): void {
    if (depth > 8 || json === null || typeof json !== "object" || budget.objects <= 0) return;
    if (Array.isArray(json)) {
      for (const item of json.slice(0, 20)) this.#walk(item, depth + 1, budget);
      return;
    }
    budget.objects--;
    const record: Record<string, string | number> = {};
    for (const [name, value] of Object.entries(json as Record<string, unknown>)) {
      if (HARVESTED.test(name) && (typeof value === "string" || typeof value === "number") && value !== "" && String(value).length <= MAX_VALUE_CHARS) record[name] = value;
      if (HARVESTED.test(name)) {
        const singular = name.endsWith("_ids") ? name.slice(0, -1) : name;
        if (typeof value === "string" || typeof value === "number") this.add(singular, value);
        else if (Array.isArray(value)) for (const v of value.slice(0, 5)) if (typeof v === "string" || typeof v === "number") this.add(singular, v);
      }
      if (typeof value === "object") this.#walk(value, depth + 1, budget);
    }
    if (Object.keys(record).length > 0) this.#addRecord(record);
  }

  #addRecord(record: IdRecord): void {
    const key = JSON.stringify(record);
    if (this.#recordKeys.has(key)) return;
    let slot = this.#records.length;
    if (slot >= RECORDS) {
      slot = this.#rng.int(RECORDS);
      this.#recordKeys.delete(JSON.stringify(this.#records[slot]));
    }
    this.#records[slot] = record;
    this.#recordKeys.add(key);
  }

  /** Of a few records drawn at random, the one sharing the most field names with `fields`. */
  record(rng: Rng, fields: readonly string[]): IdRecord | undefined {
    let best: IdRecord | undefined;
    let bestShared = 0;
    for (let i = 0; i < 8 && this.#records.length > 0; i++) {
      const candidate = rng.pick(this.#records);
      const shared = fields.filter((f) => f in candidate).length;
      if (shared > bestShared) {
        best = candidate;
        bestShared = shared;
      }
    }
    return best;
  }

  /**
   * A value seen under `name` (or, for `id`-like names, under any name ending the same way), if any; with `numeric`,
   * only values that are decimal integers (node ids for a uint64 field).
   */
  draw(rng: Rng, name: string, numeric = false): string | number | undefined {
    const usable = (values: readonly (string | number)[]): (string | number)[] => (numeric ? values.filter((v) => /^\d+$/.test(String(v))) : [...values]);
    const exact = usable(this.#byName.get(name) ?? []);
    if (exact.length > 0 && rng.chance(0.85)) return rng.pick(exact);
    const suffix = name.includes("_") ? name.slice(name.lastIndexOf("_")) : `_${name}`;
    const related = [...this.#byName.entries()].filter(([n]) => n.endsWith(suffix) || n === name).map(([, values]) => usable(values)).filter((v) => v.length > 0);
    if (related.length === 0) return exact.length === 0 ? undefined : rng.pick(exact);
    return rng.pick(rng.pick(related));
  }

  get size(): number {
    let total = 0;
    for (const list of this.#byName.values()) total += list.length;
    return total;
  }
}
