#!/usr/bin/env node
// Entry point of the `engram` command: runs one command, and on failure prints its message and exits 1.
import { buildProgram } from "./program.js";
import { reportError } from "./output.js";

buildProgram()
  .parseAsync(process.argv)
  .catch((e: unknown) => {
    reportError(e);
    process.exitCode = 1;
  });
