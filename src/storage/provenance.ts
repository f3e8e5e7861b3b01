// Where an entry's text came from and how far it is trusted. The origin says who produced the text (a person, the
// agent, a tool's output, a fetched document or web page, an import, the server); the trust level follows from the
// origin through a policy, so that text an agent merely read (a tool output, a web page) never counts as guidance it
// was given.

export const ORIGINS = ["user", "agent", "tool", "document", "web", "import", "system"] as const;
export type Origin = (typeof ORIGINS)[number];
export const TRUST_LEVELS = ["trusted", "untrusted"] as const;
export type Trust = (typeof TRUST_LEVELS)[number];

export interface Provenance {
  readonly origin: Origin;
  /** Tool whose output the text is; "" when none. */
  readonly toolName: string;
  /** Where the text was fetched from; "" when none. */
  readonly url: string;
  readonly trust: Trust;
  /** API key that wrote the entry; "" for derived entries and entries older than provenance. */
  readonly keyId: string;
}

/** The trust each origin gets unless a write states it: what an agent read is not what it was told. */
export type TrustPolicy = Readonly<Record<Origin, Trust>>;

export const DEFAULT_TRUST_POLICY: TrustPolicy = {
  user: "trusted",
  agent: "trusted",
  tool: "untrusted",
  document: "untrusted",
  web: "untrusted",
  import: "trusted",
  system: "trusted",
};

export const MAX_TOOL_NAME_CHARS = 256;
export const MAX_URL_CHARS = 2048;

/** The origin of a write that states none, from its older `source` field (`agent`, `human`, `system`). */
export function originOfSource(source: string): Origin {
  if (source === "human") return "user";
  if (source === "system") return "system";
  return "agent";
}

export function isOrigin(value: string): value is Origin {
  return (ORIGINS as readonly string[]).includes(value);
}

export function isTrust(value: string): value is Trust {
  return (TRUST_LEVELS as readonly string[]).includes(value);
}

/**
 * Parses SERVICE_TRUST_POLICY, e.g. `tool=untrusted,agent=trusted`: each listed origin overrides the default.
 * Returns an error message for anything else, so start-up can refuse it.
 */
export function parseTrustPolicy(text: string): TrustPolicy | string {
  const policy: Record<Origin, Trust> = { ...DEFAULT_TRUST_POLICY };
  for (const part of text.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const [origin = "", trust = "", ...rest] = part.split("=").map((p) => p.trim());
    if (rest.length > 0 || !isOrigin(origin) || !isTrust(trust)) {
      return `SERVICE_TRUST_POLICY must list origin=trust pairs (origins ${ORIGINS.join(", ")}; trust ${TRUST_LEVELS.join(" or ")}), got "${part}"`;
    }
    policy[origin] = trust;
  }
  return policy;
}

/** Provenance of an entry the server derives (a reflected lesson, a merge): origin `system`, trusted unless told. */
export function derivedProvenance(trust: Trust = "trusted"): Provenance {
  return { origin: "system", toolName: "", url: "", trust, keyId: "" };
}

/** Provenance of an entry written before provenance existed: its origin from `source`, its trust from the policy. */
export function legacyProvenance(source: string, policy: TrustPolicy = DEFAULT_TRUST_POLICY): Provenance {
  return writeProvenance(originOfSource(source), "", policy);
}

/**
 * Provenance of an entry a route writes for its caller without a stated provenance (archive blocks, checkpoints,
 * activity traces, concepts, a session's final checkpoint): the writing key, and the trust the policy gives the origin.
 */
export function writeProvenance(origin: Origin, keyId: string, policy: TrustPolicy = DEFAULT_TRUST_POLICY, toolName = ""): Provenance {
  return { origin, toolName, url: "", trust: policy[origin], keyId };
}

/** The less trusted of two levels: what is made from untrusted text stays untrusted. */
export function leastTrust(a: Trust, b: Trust): Trust {
  return a === "untrusted" || b === "untrusted" ? "untrusted" : "trusted";
}
