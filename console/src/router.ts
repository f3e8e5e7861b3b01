// A tiny hash router: `#/runs/abc` → ["runs", "abc"]; the server never sees the route, so any path serves the app.
import { useEffect, useState } from "preact/hooks";

export function routeOf(hash: string): string[] {
  return hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter((part) => part !== "")
    .map((part) => decodeURIComponent(part));
}

export function useRoute(): string[] {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(routeOf(location.hash));
    addEventListener("hashchange", onChange);
    return () => removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

export function href(...parts: string[]): string {
  return `#/${parts.map((part) => encodeURIComponent(part)).join("/")}`;
}

export function navigate(...parts: string[]): void {
  location.hash = href(...parts);
}
