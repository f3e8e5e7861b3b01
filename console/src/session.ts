// The signed-in person, kept in memory only: the CSRF token never reaches localStorage, and the API key never reaches the browser after sign-in.
import { useEffect, useState } from "preact/hooks";

export interface Session {
  readonly username: string;
  readonly role: string;
  readonly csrf_token: string;
  readonly expires_at: string;
}

let current: Session | null = null;
const listeners = new Set<(session: Session | null) => void>();

export function currentSession(): Session | null {
  return current;
}

export function setSession(session: Session | null): void {
  current = session;
  for (const listener of listeners) listener(session);
}

/** The session as component state, re-rendered when it changes (sign-in, sign-out, a 401 from any call). */
export function useSession(): Session | null {
  const [session, set] = useState(current);
  useEffect(() => {
    listeners.add(set);
    set(current);
    return () => void listeners.delete(set);
  }, []);
  return session;
}
