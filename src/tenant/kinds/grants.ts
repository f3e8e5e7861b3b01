// Access grants the owner made on its runs, in an export. Usernames are kept, so a grant to a user is imported only
// when the importing server has a user of that name (a grant must never fall to whoever takes the name later).
import { Code } from "@connectrpc/connect";
import type { Key } from "lmdb";
import { decodeGrant, type AccessControl, type Grant } from "../../acl/access-control.js";
import type { Storage } from "../../storage/database.js";
import type { UserStore } from "../../storage/user-store.js";
import { openFields } from "../../storage/record-codec.js";
import { recordFault } from "../import-faults.js";
import { checkId } from "../record-checks.js";
import { alreadyStored, created, keyId, ownerPage, type Scanned, type TenantKind } from "../tenant-kind.js";

export function grantKind(storage: Storage, users: UserStore, acl: AccessControl): TenantKind<Grant> {
  return {
    kind: "grant",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.grants, owner, after, limit).map(({ suffix, key, value }) => {
        const { owner: _owner, ...grant } = decodeGrant(key, value);
        return { key: suffix, line: { id: keyId([grant.runId, grant.principalType, grant.principalId, grant.lane]), record: grant } };
      });
    },

    parse(owner, raw) {
      const r = openFields("acl_grants", 0, raw);
      const grant = decodeGrant([owner, r.string("runId"), r.string("principalType"), r.string("principalId"), r.string("lane")], r.string("permission"));
      checkId("runId", grant.runId);
      checkId("principalId", grant.principalId);
      checkId("lane", grant.lane, false);
      return grant;
    },

    write(ctx, grant) {
      const id = keyId([grant.runId, grant.principalType, grant.principalId, grant.lane]);
      if (grant.principalType === "user" && users.get(grant.principalId) === undefined) {
        throw recordFault("principalId", `user ${JSON.stringify(grant.principalId.slice(0, 64))} does not exist on this server; create the user first`);
      }
      const key: Key = [ctx.owner, grant.runId, grant.principalType, grant.principalId, grant.lane];
      const stored = storage.dbs.grants.get(key);
      if (stored !== undefined) {
        if (stored === grant.permission) return alreadyStored(id);
        throw recordFault("permission", `this memory already grants ${String(stored)} here`, Code.AlreadyExists);
      }
      storage.dbs.grants.put(key, grant.permission);
      return created(id);
    },

    committed() {
      // The grants cache is rebuilt from the store: a few grants, read once per import call that brought some.
      acl.rebuild();
    },
  };
}
