// Renders a skill version as text with its three sections and diffs two versions as a unified diff (jsdiff).
import { createTwoFilesPatch } from "diff";
import { versionIdOf, type SkillVersionRecord } from "./skill-record.js";

/** The text a diff compares: `description`, `parameters_schema` (pretty-printed JSON) and `instructions`. */
export function renderSkillVersion(version: SkillVersionRecord): string {
  return [
    "description:",
    version.description,
    "",
    "parameters_schema:",
    prettyJson(version.parametersSchema),
    "",
    "instructions:",
    version.instructions,
    "",
  ].join("\n");
}

/** Unified diff from `a` to `b` with headers naming the version ids; "" when both render the same. */
export function diffSkillVersions(a: SkillVersionRecord, b: SkillVersionRecord): string {
  const before = renderSkillVersion(a);
  const after = renderSkillVersion(b);
  if (before === after) return "";
  return createTwoFilesPatch(versionIdOf(a.skillId, a.number), versionIdOf(b.skillId, b.number), before, after, "", "", { context: 3 });
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
