import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    // Integration tests start real servers on ephemeral ports; files run in parallel, each with its own server.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
