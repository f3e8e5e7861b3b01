// The console shell: resumes the session, sends signed-out people to sign-in, and shows the page the hash names.
import { useEffect, useState } from "preact/hooks";
import { resumeSession, signOut } from "./api";
import { messageOf } from "./components/async";
import { ContextPage } from "./pages/context";
import { HealthPage } from "./pages/health";
import { LessonsPage } from "./pages/lessons";
import { ProjectsPage } from "./pages/projects";
import { QueryPage } from "./pages/query";
import { RunDetailPage } from "./pages/run-detail";
import { RunsPage } from "./pages/runs";
import { SignInPage } from "./pages/sign-in";
import { href, navigate, useRoute } from "./router";
import { useSession, type Session } from "./session";

const PAGES = [
  ["runs", "Runs"],
  ["query", "Query"],
  ["context", "Context"],
  ["lessons", "Lessons"],
  ["projects", "Projects"],
  ["health", "Health"],
] as const;

const HOME = "runs";

export function App() {
  const session = useSession();
  const route = useRoute();
  const [resumed, setResumed] = useState(false);
  const [error, setError] = useState("");
  // Where a signed-out person was going, to take them there after sign-in.
  const [wanted, setWanted] = useState<string[]>([]);

  useEffect(() => {
    resumeSession().then(
      () => setResumed(true),
      (e: unknown) => {
        setError(messageOf(e));
        setResumed(true);
      },
    );
  }, []);

  const page = route[0] ?? "";
  useEffect(() => {
    if (!resumed) return;
    if (!session && page !== "sign-in") {
      setWanted(route);
      history.replaceState(null, "", href("sign-in"));
      dispatchEvent(new HashChangeEvent("hashchange"));
    } else if (session && (page === "sign-in" || page === "")) {
      navigate(...(wanted.length > 0 ? wanted : [HOME]));
      setWanted([]);
    }
  }, [resumed, session, page]);

  if (!resumed) return <p class="muted loading center">Loading…</p>;
  if (!session) {
    return (
      <>
        {error && <p class="error center" role="alert">{error}</p>}
        <SignInPage />
      </>
    );
  }
  // Signed in but still on the sign-in route: the effect above is about to move on; showing the shell now would
  // let a click land before that move and be overridden by it.
  if (page === "sign-in" || page === "") return <p class="muted loading center">Loading…</p>;
  return (
    <div class="shell">
      <TopBar session={session} page={page} />
      <main class="content">{renderPage(route)}</main>
    </div>
  );
}

function renderPage(route: string[]) {
  const [page = "", id = ""] = route;
  switch (page) {
    case "runs":
      return id ? <RunDetailPage key={id} runId={id} /> : <RunsPage />;
    case "query":
      return <QueryPage />;
    case "context":
      return <ContextPage />;
    case "lessons":
      return <LessonsPage />;
    case "projects":
      return <ProjectsPage projectId={id} />;
    case "health":
      return <HealthPage />;
    default:
      return (
        <section class="page">
          <h1>Not found</h1>
          <p>
            No page here. Go to <a href={href(HOME)}>Runs</a>.
          </p>
        </section>
      );
  }
}

function TopBar({ session, page }: { session: Session; page: string }) {
  const [busy, setBusy] = useState(false);
  async function leave() {
    setBusy(true);
    try {
      await signOut();
    } finally {
      setBusy(false);
    }
  }
  return (
    <header class="topbar">
      <a class="brand" href={href(HOME)}>
        <span class="logo" aria-hidden="true">◆</span> Engram
      </a>
      <nav aria-label="Pages">
        {PAGES.map(([route, title]) => (
          <a key={route} href={href(route)} class={page === route ? "active" : ""} aria-current={page === route ? "page" : undefined}>
            {title}
          </a>
        ))}
      </nav>
      <div class="who">
        <span class="user">
          {session.username} <span class="muted small">{session.role}</span>
        </span>
        <button type="button" onClick={() => void leave()} disabled={busy}>
          Sign out
        </button>
      </div>
    </header>
  );
}
