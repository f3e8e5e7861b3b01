// Types for the @mubit-ai/sdk subpath modules the compatibility tests use; the package ships JavaScript without
// declarations for them. Only what the tests call is declared.
declare module "@mubit-ai/sdk/context" {
  export class SessionContext {
    constructor(opts: { sessionId: string; agentId: string; runId: string; userId?: string });
  }
  export class MubitContext {
    constructor(opts: { client: unknown; autoInstrument?: boolean; autoLearn?: boolean });
    rootSession: SessionContext | null;
  }
  export function setContext(context: MubitContext): void;
}

declare module "@mubit-ai/sdk/helpers" {
  export function outcome(score: number, opts?: Record<string, unknown>): Promise<unknown>;
  export function setSkill(name: string, description: string, opts?: Record<string, unknown>): Promise<unknown>;
  export function getSkills(opts?: Record<string, unknown>): Promise<unknown[]>;
  export function setPrompt(content: string, opts?: Record<string, unknown>): Promise<unknown>;
  export function getPrompt(opts?: Record<string, unknown>): Promise<string>;
}

declare module "@mubit-ai/sdk/learn" {
  export interface RunManager {
    end(): Promise<void>;
  }
  export function init(opts: Record<string, unknown>): RunManager;
  export function wrap<T>(client: T): T;
  export function feedback(opts: { good?: boolean; score?: number; entryIds?: string[]; sessionId?: string }): Promise<void>;
  export function startRun(opts: Record<string, unknown>): RunManager;
  export function uninstrument(): void;
}
