// Loads data for a page and renders its loading and error states the same way everywhere.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

export interface AsyncState<T> {
  readonly data?: T;
  readonly error: string;
  readonly loading: boolean;
  reload(): void;
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Runs `load` whenever `deps` change; a stale answer (deps changed meanwhile) is dropped. */
export function useAsync<T>(load: () => Promise<T>, deps: readonly unknown[]): AsyncState<T> {
  const [state, setState] = useState<{ data?: T; error: string; loading: boolean }>({ error: "", loading: true });
  const [tick, setTick] = useState(0);
  // `deps` are the inputs `load` reads: the caller lists them, as with useEffect.
  useEffect(() => {
    let live = true;
    setState((previous) => ({ ...previous, error: "", loading: true }));
    load().then(
      (data) => live && setState({ data, error: "", loading: false }),
      (e: unknown) => live && setState({ error: messageOf(e), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/** Renders children with the data once loaded; a spinner line before, the error message on failure. */
export function Async<T>({ state, children }: { state: AsyncState<T>; children: (data: T) => ComponentChildren }) {
  if (state.error) return <p class="error" role="alert">{state.error}</p>;
  if (state.data === undefined) return <p class="muted loading">Loading…</p>;
  return <>{children(state.data)}</>;
}

export function ErrorLine({ message }: { message: string }) {
  return message ? <p class="error" role="alert">{message}</p> : null;
}
