// Callers shared by the tests of one file: one per transport, opened on first use and closed together (before a
// restart), and fresh users, so that tests which compare an owner's lessons or agents never see another test's.
import { callerFor, type Caller, type TransportName } from "./callers.js";
import type { TestServer } from "./server.js";
import { createUser } from "./users.js";

export class CallerPool {
  readonly #server: () => TestServer;
  #opened = new Map<TransportName, Caller>();

  /** `server` is read at each first use, so the pool follows a restarted server. */
  constructor(server: () => TestServer) {
    this.#server = server;
  }

  on(transport: TransportName): Caller {
    let caller = this.#opened.get(transport);
    if (caller === undefined) {
      const server = this.#server();
      caller = callerFor(transport, server.baseUrl, server.port);
      this.#opened.set(transport, caller);
    }
    return caller;
  }

  close(): void {
    for (const caller of this.#opened.values()) caller.close();
    this.#opened = new Map();
  }
}

/** A new user per call, its name suffixed with a counter; resolves its API key. */
export function freshUsers(server: () => TestServer): (name: string) => Promise<string> {
  let count = 0;
  return (name) => createUser(server().baseUrl, server().adminKey, `${name}-${++count}`);
}
