// Turns an Authorization header into a Principal, or refuses it with 401. Also bootstraps the admin.
import fs from "node:fs";
import path from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../platform/logger.js";
import { unauthenticated } from "../platform/errors.js";
import { bearerToken, hashSecret, mintApiKey, parseApiKey, secretMatches, type ParsedKey } from "./api-key.js";
import type { Principal } from "./principal.js";
import type { UserStore } from "../storage/user-store.js";

export const ADMIN_USERNAME = "admin";

export class Authenticator {
  readonly #users: UserStore;
  readonly #instanceTag: string;
  /** SERVICE_ADMIN_KEY, accepted as the admin's for as long as it is configured. */
  readonly #configuredAdmin: ParsedKey | undefined;

  constructor(users: UserStore, instanceTag: string, configuredAdminKey: string | undefined) {
    this.#users = users;
    this.#instanceTag = instanceTag;
    if (configuredAdminKey !== undefined) {
      const parsed = parseApiKey(configuredAdminKey);
      if (typeof parsed === "string" || parsed.instanceTag !== instanceTag) {
        throw new Error(
          `SERVICE_ADMIN_KEY must be a well-formed key mem_${instanceTag}_<key_id>_<secret> (key id 4-64 letters/digits, secret 16-256 letters/digits)`,
        );
      }
      this.#configuredAdmin = parsed;
    }
  }

  /** Resolves the caller of a request from its Authorization header value. */
  authenticate(authorization: string | null): Principal {
    const parsed = parseApiKey(bearerToken(authorization));
    if (parsed === "missing") throw unauthenticated("missing API key: send Authorization: Bearer <key>");
    if (parsed === "malformed") throw unauthenticated("malformed API key: expected mem_<instance_tag>_<key_id>_<secret>");
    if (parsed.instanceTag !== this.#instanceTag) {
      throw unauthenticated(`API key belongs to instance "${parsed.instanceTag}", not this one`);
    }
    const admin = this.#configuredAdmin;
    if (admin !== undefined && parsed.keyId === admin.keyId) {
      if (!secretMatches(parsed.secret, hashSecret(admin.secret))) throw unauthenticated("invalid API key");
      return this.#principalFor(ADMIN_USERNAME, parsed.keyId);
    }
    const key = this.#users.getKey(parsed.keyId);
    if (key === undefined || !secretMatches(parsed.secret, key.secretHash)) throw unauthenticated("invalid API key");
    if (key.revokedAt !== undefined) throw unauthenticated("API key revoked");
    return this.#principalFor(key.username, parsed.keyId);
  }

  #principalFor(username: string, keyId: string): Principal {
    const user = this.#users.get(username);
    if (user === undefined) throw new ConnectError("API key owner no longer exists", Code.Unauthenticated);
    return { userId: user.userId, username: user.username, role: user.role, keyId };
  }

  /**
   * Makes sure an admin exists. With SERVICE_ADMIN_KEY, the admin user is created if missing. Without it, on the
   * first start with no users, an admin is created and its key printed once to stderr and written to admin.key.
   */
  async bootstrap(dataDir: string, logger: Logger): Promise<void> {
    const admin = this.#configuredAdmin;
    if (admin !== undefined) {
      if (this.#users.get(ADMIN_USERNAME) === undefined) {
        await this.#users.create(ADMIN_USERNAME, "admin", { keyId: admin.keyId, secretHash: hashSecret(admin.secret) });
        logger.info({ key_id: admin.keyId }, "created admin user for SERVICE_ADMIN_KEY");
      }
      return;
    }
    if (this.#users.count() > 0) return;
    const minted = mintApiKey(this.#instanceTag);
    const created = await this.#users.create(ADMIN_USERNAME, "admin", minted);
    if (created === undefined) return;
    const file = path.join(dataDir, "admin.key");
    fs.writeFileSync(file, `${minted.key}\n`, { mode: 0o600 });
    fs.chmodSync(file, 0o600);
    process.stderr.write(`Engram admin API key (shown once, also saved to ${file}):\n${minted.key}\n`);
    logger.info({ key_id: minted.keyId, file }, "bootstrapped admin user");
  }
}
