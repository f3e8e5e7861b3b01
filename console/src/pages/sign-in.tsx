// Sign-in: username and API key go to the console server once; afterwards the browser holds only an HttpOnly cookie.
import { useState } from "preact/hooks";
import { signIn } from "../api";
import { messageOf } from "../components/async";

/** Once signed in, the shell takes the person to the page they were going to. */
export function SignInPage() {
  const [username, setUsername] = useState("");
  const [apiKey, setApiKey] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError("");
    try {
      await signIn(username.trim(), apiKey);
      // The key is not needed any more: drop it from component state before the page changes.
      setApiKey("");
    } catch (e: unknown) {
      setApiKey("");
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="sign-in">
      <form class="card sign-in-card" onSubmit={submit} aria-label="Sign in">
        <h1>
          <span class="logo" aria-hidden="true">◆</span> Engram console
        </h1>
        <p class="muted">Sign in with your username and API key. The key stays on the server for this session only.</p>
        <label class="field">
          <span>Username</span>
          <input name="username" autocomplete="username" required value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
        </label>
        <label class="field">
          <span>API key</span>
          <input
            name="api_key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            value={apiKey}
            onInput={(e) => setApiKey(e.currentTarget.value)}
          />
        </label>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
