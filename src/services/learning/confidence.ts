// Confidence values from requests: a number clamped to [0, 1].
import { invalidArgument } from "../../platform/errors.js";

export function clampedConfidence(field: string, value: number): number {
  if (!Number.isFinite(value)) throw invalidArgument(field, "must be a number");
  return Math.min(1, Math.max(0, value));
}
