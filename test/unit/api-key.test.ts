import { describe, expect, it } from "vitest";
import { bearerToken, formatApiKey, hashSecret, mintApiKey, parseApiKey, secretMatches } from "../../src/auth/api-key.js";

describe("API keys", () => {
  it("parses the four underscore-separated segments", () => {
    expect(parseApiKey("mem_local_abcd1234_0123456789abcdef0123")).toEqual({
      instanceTag: "local",
      keyId: "abcd1234",
      secret: "0123456789abcdef0123",
    });
  });
  it.each([
    ["", "missing"],
    [undefined, "missing"],
    ["mem_local_abcd1234", "malformed"],
    ["mem_local_abcd1234_0123456789abcdef0123_extra", "malformed"],
    ["key_local_abcd1234_0123456789abcdef0123", "malformed"],
    ["mem__abcd1234_0123456789abcdef0123", "malformed"],
    ["mem_local_ab_0123456789abcdef0123", "malformed"],
    ["mem_local_abcd1234_short", "malformed"],
    ["mem_local_abcd1234_0123456789abcdef012!", "malformed"],
  ])("refuses %j as %s", (raw, problem) => {
    expect(parseApiKey(raw)).toBe(problem);
  });
  it("mints keys that parse back, with only a hash to store", () => {
    const minted = mintApiKey("eu1");
    expect(formatApiKey(minted)).toBe(minted.key);
    expect(parseApiKey(minted.key)).toEqual({ instanceTag: "eu1", keyId: minted.keyId, secret: minted.secret });
    expect(minted.secretHash).toBe(hashSecret(minted.secret));
    expect(minted.secretHash).not.toContain(minted.secret);
    expect(mintApiKey("eu1").key).not.toBe(minted.key);
  });
  it("checks secrets against stored hashes", () => {
    const hash = hashSecret("0123456789abcdef0123");
    expect(secretMatches("0123456789abcdef0123", hash)).toBe(true);
    expect(secretMatches("0123456789abcdef0124", hash)).toBe(false);
    expect(secretMatches("0123456789abcdef012", hash)).toBe(false);
  });
  it("reads bearer tokens", () => {
    expect(bearerToken("Bearer mem_a_b_c")).toBe("mem_a_b_c");
    expect(bearerToken("bearer   mem_a_b_c ")).toBe("mem_a_b_c");
    expect(bearerToken("Basic abc")).toBeUndefined();
    expect(bearerToken(null)).toBeUndefined();
  });
});
