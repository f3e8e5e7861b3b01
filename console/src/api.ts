// The one way pages talk to the console server: same-origin fetch with the session's CSRF token; a 401 signs the person out.
import { currentSession, setSession, type Session } from "./session";

/** An error answer: the console server's `{error, field}` or the data plane's `{code, message}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field = "",
  ) {
    super(message);
  }
}

const API = "/console/api";

async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  let field = "";
  try {
    const body = (await response.json()) as { error?: unknown; message?: unknown; field?: unknown };
    if (typeof body.error === "string") message = body.error;
    else if (typeof body.message === "string") message = body.message;
    if (typeof body.field === "string") field = body.field;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message, field);
}

async function request<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const csrf = currentSession()?.csrf_token;
  if (method !== "GET" && csrf) headers["x-csrf-token"] = csrf;
  const response = await fetch(API + path, {
    method,
    headers,
    credentials: "same-origin",
    cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // Expired, destroyed or never there: whichever page asked, the person has to sign in again.
  if (response.status === 401 && path !== "/sign-in") setSession(null);
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** GET a data-plane route (`/v2/...`) through the console's proxy. */
export function getV2<T>(route: string, query: Record<string, string | number> = {}): Promise<T> {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== "" && value !== 0) params.set(name, String(value));
  const search = params.toString();
  return request<T>("GET", `/v2/${route}${search ? `?${search}` : ""}`);
}

/** POST a JSON body to a data-plane route (`/v2/...`) through the console's proxy. */
export function postV2<T>(route: string, body: object): Promise<T> {
  return request<T>("POST", `/v2/${route}`, body);
}

export function getConsole<T>(route: string): Promise<T> {
  return request<T>("GET", `/${route}`);
}

export async function signIn(username: string, apiKey: string): Promise<Session> {
  const session = await request<Session>("POST", "/sign-in", { username, api_key: apiKey });
  setSession(session);
  return session;
}

/** The session behind the cookie, if any: lets a reload keep the person signed in without asking for the key again. */
export async function resumeSession(): Promise<Session | null> {
  try {
    const session = await request<Session>("GET", "/session");
    setSession(session);
    return session;
  } catch (e: unknown) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
}

export async function signOut(): Promise<void> {
  try {
    await request<void>("POST", "/sign-out", {});
  } finally {
    setSession(null);
  }
}
