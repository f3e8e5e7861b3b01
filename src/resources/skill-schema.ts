// Checks a skill's `parameters_schema`: JSON object text that ajv accepts as a JSON Schema (draft-07 by default,
// 2019-09 or 2020-12 when its `$schema` says so). A refusal is INVALID_ARGUMENT naming the field with ajv's message.
import { Ajv, type Options } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import { invalidArgument } from "../platform/errors.js";
import { jsonObject } from "../services/memory/validate.js";

const OPTIONS: Options = { strict: false, allErrors: false };

/** The schema text ("" becomes "{}"); throws INVALID_ARGUMENT (`parameters_schema: …`) when it is not a JSON Schema. */
export function checkParametersSchema(field: string, text: string): string {
  const checked = jsonObject(field, text);
  const schema = JSON.parse(checked) as Record<string, unknown>;
  const dialect = typeof schema["$schema"] === "string" ? schema["$schema"] : "";
  // A fresh instance per check: a schema's `$id` would otherwise collide with one compiled before.
  const ajv = dialect.includes("2020-12") ? new Ajv2020(OPTIONS) : dialect.includes("2019-09") ? new Ajv2019(OPTIONS) : new Ajv(OPTIONS);
  try {
    ajv.compile(schema);
  } catch (e: unknown) {
    throw invalidArgument(field, `is not a valid JSON Schema: ${e instanceof Error ? e.message : String(e)}`);
  }
  return checked;
}
