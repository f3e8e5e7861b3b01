// How responses show a stored time in unix ms: RFC 3339, and "" for 0 (never, or not yet).
export function iso(ms: number): string {
  return ms === 0 ? "" : new Date(ms).toISOString();
}
