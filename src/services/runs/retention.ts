// SetRetentionPolicy, GetRetentionPolicy and ClearRetentionPolicy: the scope and the rules validated, the policy
// record mapped to its message. The policies themselves live in src/memory/retention-policies.ts.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { RetentionPolicy, RetentionPolicySchema, RunsService } from "../../../gen/engram/v2/runs_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import type { RetentionPolicies } from "../../memory/retention-policies.js";
import { invalidArgument, notFound, quoted } from "../../platform/errors.js";
import { ENTRY_TYPES } from "../../storage/entry-record.js";
import { MAX_TTL_SECONDS, type RetentionPolicyRecord, type RetentionRule, type RetentionScope } from "../../storage/retention-store.js";
import { bounded, oneOf } from "../memory/validate.js";

export interface RetentionDeps {
  readonly retention: RetentionPolicies;
  readonly projectExists: (owner: number, projectId: string) => boolean;
}

type RetentionHandlers = Pick<ServiceImpl<typeof RunsService>, "setRetentionPolicy" | "getRetentionPolicy" | "clearRetentionPolicy">;

/** The scope a request names: a run, a project, or the caller's default (neither). */
function scopeOf(req: { runId: string; projectId: string }): { scope: RetentionScope; scopeId: string } {
  const runId = bounded("run_id", req.runId);
  const projectId = bounded("project_id", req.projectId);
  if (runId !== "" && projectId !== "") throw invalidArgument("project_id", "cannot be set together with run_id");
  if (runId !== "") return { scope: "run", scopeId: runId };
  if (projectId !== "") return { scope: "project", scopeId: projectId };
  return { scope: "owner", scopeId: "" };
}

function rulesOf(policy: RetentionPolicy | undefined): RetentionRule[] {
  if (policy === undefined || policy.rules.length === 0) throw invalidArgument("policy.rules", "needs at least one rule");
  const seen = new Set<string>();
  return policy.rules.map((rule, i) => {
    const field = `policy.rules[${i}]`;
    if (rule.entryType === "") throw invalidArgument(`${field}.entry_type`, "is required");
    const entryType = oneOf(`${field}.entry_type`, rule.entryType, ENTRY_TYPES, "fact");
    if (seen.has(entryType)) throw invalidArgument(`${field}.entry_type`, `${quoted(entryType)} has a rule already`);
    seen.add(entryType);
    const maxAge = Number(rule.maxAgeSeconds);
    if (!Number.isSafeInteger(maxAge) || maxAge < 1 || maxAge > MAX_TTL_SECONDS) {
      throw invalidArgument(`${field}.max_age_seconds`, `must be 1 to ${MAX_TTL_SECONDS} seconds, got ${rule.maxAgeSeconds}`);
    }
    return { entryType, maxAgeSeconds: maxAge };
  });
}

export function policyMessage(record: RetentionPolicyRecord | undefined): MessageInitShape<typeof RetentionPolicySchema> | undefined {
  if (record === undefined) return undefined;
  return {
    rules: record.rules.map((rule) => ({ entryType: rule.entryType, maxAgeSeconds: BigInt(rule.maxAgeSeconds) })),
    updatedAt: new Date(record.updatedAt).toISOString(),
  };
}

export function retentionHandlers({ retention, projectExists }: RetentionDeps): RetentionHandlers {
  return {
    async setRetentionPolicy(req, ctx) {
      const owner = callerOf(ctx).userId;
      const { scope, scopeId } = scopeOf(req);
      const rules = rulesOf(req.policy);
      if (scope === "project" && !projectExists(owner, scopeId)) throw notFound(`project ${quoted(scopeId)}`);
      return { policy: policyMessage(await retention.set(owner, scope, scopeId, rules)) };
    },

    getRetentionPolicy(req, ctx) {
      const { scope, scopeId } = scopeOf(req);
      return { policy: policyMessage(retention.get(callerOf(ctx).userId, scope, scopeId)) };
    },

    async clearRetentionPolicy(req, ctx) {
      const { scope, scopeId } = scopeOf(req);
      return { cleared: await retention.clear(callerOf(ctx).userId, scope, scopeId) };
    },
  };
}
