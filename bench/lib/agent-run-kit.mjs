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

/**
 * Plays a run's steps into `items` (through `push`) and `steps` (step outcomes), then its summary: per step, maybe
 * chatter, a tool call and its observation. At the step where the run's pitfall strikes (`at`, with `source` the
 * pitfall or its wording): the symptom lines `symptomsOf()` draws (each generator chooses them its own way), a
 * diagnosis, the failed step (a directive hint 60 % of the time, left empty unless `hints`), the fix and the retry with
 * its result — or, when `fixFails`, a failed retry that aborts the run. Draws from `random` in the same order for
 * every generator, so runs stay what they were.
 */
export function playSteps({ random, family, task, pitfall, source, symptomsOf, f, push, steps, chatter, fixFails = false, hints = true }) {
  let aborted = false;
  for (const [i, [name, calls, observations]] of family.steps.entries()) {
    const stepId = `s${i + 1}`;
    if (random() < 0.3) push("chatter", chatter(), stepId);
    const call = `tool_call: ${f(pick(random, calls))}`;
    push("call", call, stepId);
    if (source && name === pitfall.at) {
      for (const symptom of symptomsOf()) push("symptom", `observation: ${f(symptom)}`, stepId);
      const rationale = [...source.rationale];
      const said = rationale.splice(int(random, rationale.length), 1)[0];
      push("diagnosis", `thought: ${f(pick(random, rationale.length ? rationale : [said]))}`, stepId);
      const hint = random() < 0.6 ? f(pick(random, source.hints)) : "";
      steps.push({ step_id: stepId, step_name: name, outcome: "failure", signal: -1, rationale: f(said), directive_hint: hints ? hint : "" });
      const fix = f(pick(random, source.fixes));
      const retryId = `${stepId}b`;
      push("fix", `action: ${fix}`, retryId);
      push("retry", call, retryId);
      if (fixFails) {
        const failed = f(pick(random, source.failedFix));
        push("failed_fix", `observation: ${failed}`, retryId);
        steps.push({ step_id: retryId, step_name: `${name}_retry`, outcome: "failure", signal: -1, rationale: `Applied the known fix (${fix}) but it did not help: ${failed}`, directive_hint: "" });
        aborted = true;
        break;
      }
      push("fix_result", `observation: ${f(pick(random, source.results))}`, retryId);
      steps.push({ step_id: retryId, step_name: `${name}_retry`, outcome: "success", signal: 1, rationale: `Worked after the change: ${fix}`, directive_hint: "" });
    } else {
      const obs = [...observations];
      push("observation", `observation: ${f(obs.splice(int(random, obs.length), 1)[0])}`, stepId);
      if (obs.length > 0 && random() < 0.4) push("observation", `observation: ${f(pick(random, obs))}`, stepId);
      steps.push({ step_id: stepId, step_name: name, outcome: "success", signal: 1, rationale: `${name.replaceAll("_", " ")} completed`, directive_hint: "" });
    }
    if (random() < 0.35) push("chatter", chatter(), stepId);
  }
  const last = `s${family.steps.length}`;
  push("summary", aborted ? `summary: run aborted, ${task} not done` : `summary: ${task}: done${pitfall ? " after one failed attempt" : ""}`, aborted ? steps.at(-1).step_id : last);
}
