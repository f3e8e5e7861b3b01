// Starts the server: the target of `npm start` and `make run`.
import { main } from "./main.js";

main().catch((e: unknown) => {
  process.stderr.write(`engram failed to start: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
