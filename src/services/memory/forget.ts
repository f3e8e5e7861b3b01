// Forget: validates a subject and hands it to the domain (memory/forget.ts); the preview or the receipt goes back.
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument } from "../../platform/errors.js";
import { ForgetTooBroad, staleForgetToken, type ForgetSubject } from "../../memory/forget.js";
import { terms } from "../../retrieval/text.js";
import type { MemoryDeps } from "./deps.js";
import { bounded, entryTypeFilter } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "forget">;

const MAX_QUERY_CHARS = 1_000;
const MAX_RUN_IDS = 100;

export function forgetHandlers(deps: MemoryDeps): Handlers {
  return {
    async forget(req, ctx) {
      const caller = callerOf(ctx);
      const query = req.query.trim();
      if (query === "") throw invalidArgument("query", "is required");
      if (query.length > MAX_QUERY_CHARS) throw invalidArgument("query", `must be at most ${MAX_QUERY_CHARS} characters`);
      if (terms(query).length === 0) throw invalidArgument("query", "holds no searchable word (only stop words or punctuation)");
      if (req.runIds.length > MAX_RUN_IDS) throw invalidArgument("run_ids", `must hold at most ${MAX_RUN_IDS} runs`);
      const subject: ForgetSubject = {
        owner: caller.userId,
        query,
        runIds: req.runIds.map((runId, i) => bounded(`run_ids[${i}]`, runId)),
        entryTypes: entryTypeFilter("entry_types", req.entryTypes),
      };
      const dryRun = req.dryRun ?? true;
      if (!dryRun && req.previewToken === "") throw invalidArgument("preview_token", "is required to erase (dry_run false); preview first");
      try {
        if (dryRun) {
          const preview = await deps.forgetting.preview(subject);
          return { dryRun: true, matched: preview.matched, sample: [...preview.sample], previewToken: preview.token, erased: {}, receiptId: "", erasedAt: "" };
        }
        const receipt = await deps.forgetting.erase(subject, bounded("preview_token", req.previewToken), "");
        if (receipt === undefined) throw staleForgetToken();
        return {
          dryRun: false,
          matched: receipt.erased["entries"] ?? 0,
          sample: [],
          previewToken: "",
          erased: { ...receipt.erased },
          receiptId: receipt.receiptId,
          erasedAt: new Date(receipt.erasedAt).toISOString(),
        };
      } catch (e: unknown) {
        if (e instanceof ForgetTooBroad) throw new ConnectError(`${e.message}; narrow the query with run_ids or entry_types`, Code.FailedPrecondition);
        throw e;
      }
    },
  };
}
