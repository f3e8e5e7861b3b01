// What the seeded agent-run generators (agent-runs*.mjs) share: drawing from a seeded random source, filling
// templates, and telling from a text which pitfall it is about by the pitfalls' keys.

export function int(random, n) {
  return Math.floor(random() * n);
}

export function pick(random, list) {
  return list[int(random, list.length)];
}

/** A template with its `{slot}`s replaced by the run's values; unknown slots stay as written. */
export const fill = (template, slots) => template.replace(/\{(\w+)\}/g, (whole, name) => slots[name] ?? whole);

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A key matches at a word start when it begins with a letter or digit; its end may run on ("rotate" → "rotated"). */
export const keyPattern = (key) => new RegExp(`${/^\w/.test(key) ? "\\b" : ""}${escapeRegExp(key.toLowerCase())}`);

/**
 * A generator's pitfall lookup and classifier. `classify(text)`: the pitfall with most key matches (ties: most fix-key
 * matches, then definition order), or null when no key matches; `fix` says whether the text names that pitfall's fix.
 */
export function pitfallIndex(pitfalls) {
  const byId = new Map(pitfalls.map((p) => [p.id, p]));
  const patterns = pitfalls.map((p) => ({ id: p.id, symptom: p.symptomKeys.map(keyPattern), fix: p.fixKeys.map(keyPattern) }));
  return {
    pitfallById(id) {
      const p = byId.get(id);
      if (!p) throw new Error(`unknown pitfall ${id}`);
      return p;
    },
    classify(text) {
      const lower = String(text ?? "").toLowerCase();
      let best = null;
      for (const p of patterns) {
        const fix = p.fix.filter((re) => re.test(lower)).length;
        const symptom = p.symptom.filter((re) => re.test(lower)).length;
        if (fix + symptom === 0) continue;
        if (!best || fix + symptom > best.hits || (fix + symptom === best.hits && fix > best.fixHits)) best = { pitfall: p.id, hits: fix + symptom, fixHits: fix };
      }
      return best ? { pitfall: best.pitfall, fix: best.fixHits > 0 } : { pitfall: null, fix: false };
    },
  };
}
