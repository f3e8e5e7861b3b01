// The core data plane's policy gates, for every transport: some routes always open, search and pubsub behind
// their own flags, every other external core route closed unless configured open. Denials are 403 naming the flag.
import type { DescMethod } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import type { Config } from "../../platform/config.js";
import { permissionDenied } from "../../platform/errors.js";
import { bindingsOf } from "../gateway/http-rule.js";

const CORE_SERVICE = "engram.v2.CoreService";
const ALWAYS_ALLOWED = new Set(["BatchInsertNodes", "GetStorageStats", "TriggerCompaction", "SdmWrite", "SdmRead"]);
const SEARCH = new Set(["SearchNodes"]);
const PUBSUB = new Set(["SubscribeCoreEvents", "UnsubscribeCoreEvents", "ListCoreSubscriptions"]);

export type Gate = { readonly open: true } | { readonly open: false; readonly flag: string };

/** One entry of SERVICE_CORE_ALLOWED_ROUTES matched against a method's HTTP bindings. */
function allowedBy(entry: string, method: DescMethod): boolean {
  const [verb, pattern] = entry.includes(" ") ? (entry.split(/\s+/, 2) as [string, string]) : [undefined, entry];
  const prefix = pattern.endsWith("*") ? pattern.slice(0, -1) : undefined;
  return bindingsOf(method).some((binding) => {
    if (verb !== undefined && verb.toUpperCase() !== binding.verb) return false;
    const template = binding.template.replace(/\{([a-z_]+)\}/g, ":$1");
    return prefix === undefined ? template === pattern : template.startsWith(prefix);
  });
}

/** Whether a core method is open under this configuration, and if not, which flag would open it. */
export function coreGate(config: Pick<Config, "coreEnableDirectSearch" | "coreEnableDirectPubsub" | "coreAllowAll" | "coreAllowedRoutes">, method: DescMethod): Gate {
  const name = method.name;
  if (ALWAYS_ALLOWED.has(name)) return { open: true };
  if (SEARCH.has(name)) return config.coreEnableDirectSearch ? { open: true } : { open: false, flag: "SERVICE_CORE_ENABLE_DIRECT_SEARCH=true" };
  if (PUBSUB.has(name)) return config.coreEnableDirectPubsub ? { open: true } : { open: false, flag: "SERVICE_CORE_ENABLE_DIRECT_PUBSUB=true" };
  if (config.coreAllowAll || config.coreAllowedRoutes.some((entry) => allowedBy(entry, method))) return { open: true };
  return { open: false, flag: "SERVICE_CORE_ALLOW_ALL=true or SERVICE_CORE_ALLOWED_ROUTES" };
}

export function policyInterceptor(config: Config): Interceptor {
  const gates = new Map<DescMethod, Gate>();
  return (next) => async (req) => {
    if (req.service.typeName === CORE_SERVICE) {
      let gate = gates.get(req.method);
      if (gate === undefined) {
        gate = coreGate(config, req.method);
        gates.set(req.method, gate);
      }
      if (!gate.open) {
        const route = bindingsOf(req.method)[0];
        throw permissionDenied(`${route ? `${route.verb} ${route.template}` : req.method.name} is disabled by policy; set ${gate.flag} to open it`);
      }
    }
    return next(req);
  };
}
