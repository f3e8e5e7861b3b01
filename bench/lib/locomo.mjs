// Reads LoCoMo conversations into entries (one per turn) and questions with normalised evidence ids.
import fs from "node:fs";

export const CATEGORY_NAMES = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop" };
const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/** "1:56 pm on 8 May, 2023" → unix seconds (UTC: the data set names no time zone). */
export function parseSessionDate(text) {
  const m = /^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$/i.exec(text ?? "");
  if (!m) throw new Error(`unrecognised session date "${text}"`);
  const month = MONTHS.indexOf(m[5].toLowerCase());
  if (month < 0) throw new Error(`unrecognised month in "${text}"`);
  let hour = Number(m[1]) % 12;
  if (m[3].toLowerCase() === "pm") hour += 12;
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2])) / 1000;
}

/** "D8:6; D9:17" → ["D8:6", "D9:17"]; "D30:05" → ["D30:5"]. Anything else is dropped. */
export function normaliseEvidence(raw) {
  const out = [];
  for (const part of String(raw).split(/[;,\s]+/)) {
    const m = /^D(\d+):(\d+)$/i.exec(part.trim());
    if (m) out.push(`D${Number(m[1])}:${Number(m[2])}`);
  }
  return out;
}

/**
 * Conversations as { id, speakers, entries: [{ diaId, session, content, occurrenceTime }], questions: [{ text,
 * category, evidence: [diaId] }] } with questions of categories 1–4 that have at least one evidence id.
 */
export function loadLocomo(file) {
  const samples = JSON.parse(fs.readFileSync(file, "utf8"));
  const conversations = [];
  const skipped = { no_evidence: 0, unknown_evidence_ids: [] };
  for (const [index, sample] of samples.entries()) {
    const c = sample.conversation;
    const entries = [];
    for (let s = 1; Array.isArray(c[`session_${s}`]); s++) {
      const occurrenceTime = parseSessionDate(c[`session_${s}_date_time`]);
      for (const turn of c[`session_${s}`]) {
        const caption = turn.blip_caption ? ` [image: ${turn.blip_caption}]` : "";
        const [diaId] = normaliseEvidence(turn.dia_id);
        entries.push({ diaId: diaId ?? turn.dia_id, session: s, content: `${turn.speaker}: ${turn.text}${caption}`, occurrenceTime });
      }
    }
    const known = new Set(entries.map((e) => e.diaId));
    const questions = [];
    for (const qa of sample.qa) {
      if (!(qa.category >= 1 && qa.category <= 4)) continue;
      const evidence = [...new Set((qa.evidence ?? []).flatMap(normaliseEvidence))];
      for (const id of evidence) if (!known.has(id)) skipped.unknown_evidence_ids.push(`${sample.sample_id}:${id}`);
      if (evidence.length === 0) {
        skipped.no_evidence++;
        continue;
      }
      questions.push({ text: qa.question, category: qa.category, evidence });
    }
    conversations.push({ id: sample.sample_id ?? `conv-${index}`, speakers: [c.speaker_a, c.speaker_b], entries, questions });
  }
  return { conversations, skipped };
}

/** Share of `evidence` among the first k of `ranked` (dia ids, best first; undefined for unmapped results). */
export function recallAt(ranked, evidence, k) {
  const top = new Set(ranked.slice(0, k));
  return evidence.filter((id) => top.has(id)).length / evidence.length;
}
