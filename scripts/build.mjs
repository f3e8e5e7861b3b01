// The whole build, shared by `make build`, `npm run build`, `npm start` (when stale) and the Dockerfile: the server's
// code, the OpenAPI document (from a descriptor image that keeps the proto comments) and the console's bundle.
import { spawnSync } from "node:child_process";

const steps = [
  ["npx", ["tsc", "-p", "tsconfig.build.json"]],
  ["npx", ["buf", "build", "-o", "dist/engram-image.binpb"]],
  ["node", ["dist/src/openapi/generate.js", "dist/engram-image.binpb", "dist/openapi.json"]],
  // Production mode: Vite would otherwise bundle Preact's debug build when NODE_ENV says test.
  ["npx", ["vite", "build", "--logLevel", "warn", "--config", "console/vite.config.ts"], { NODE_ENV: "production" }],
];

for (const [command, args, env] of steps) {
  const run = spawnSync(command, args, { stdio: "inherit", env: { ...process.env, ...env } });
  if (run.status !== 0) {
    process.stderr.write(`build step failed: ${command} ${args.join(" ")}\n`);
    process.exit(run.status ?? 1);
  }
}
