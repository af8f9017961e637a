// Deep links: the route lives in the URL hash (contract, session, tab), so
// it survives reloads and works the same under Tauri and in a browser.
import { useEffect, useState } from "react";

export type Route =
  | { view: "connect" }
  | { view: "overview" }
  | { view: "sessions"; contract: string }
  | { view: "session"; contract: string; session: string; tab: SessionTab; index?: number }
  | { view: "dead-letters" }
  | { view: "audit" }
  | { view: "timers" }
  | { view: "processes" }
  | { view: "search"; contract: string; payload: string; type: string; id: string };

export type SessionTab = "events" | "consumers" | "timeline" | "dead-letters" | "timers" | "presence" | "snapshots";
const TABS: SessionTab[] = ["events", "consumers", "timeline", "dead-letters", "timers", "presence", "snapshots"];

export function parseRoute(hash: string): Route {
  const [path, query] = hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query ?? "");
  switch (parts[0]) {
    case "connect":
      return { view: "connect" };
    case "sessions":
      return parts[1] ? { view: "sessions", contract: parts[1] } : { view: "overview" };
    case "session": {
      if (!parts[1] || !parts[2]) return { view: "overview" };
      const tab = TABS.includes(parts[3] as SessionTab) ? (parts[3] as SessionTab) : "events";
      const index = Number(params.get("index"));
      return { view: "session", contract: parts[1], session: parts[2], tab, index: index > 0 ? index : undefined };
    }
    case "dead-letters":
      return { view: "dead-letters" };
    case "audit":
      return { view: "audit" };
    case "timers":
      return { view: "timers" };
    case "processes":
      return { view: "processes" };
    case "search":
      return {
        view: "search",
        contract: parts[1] ?? "",
        payload: params.get("payload") ?? "",
        type: params.get("type") ?? "",
        id: params.get("id") ?? "",
      };
    default:
      return { view: "overview" };
  }
}

export function href(route: Route): string {
  const e = encodeURIComponent;
  switch (route.view) {
    case "sessions":
      return `#/sessions/${e(route.contract)}`;
    case "session":
      return `#/session/${e(route.contract)}/${e(route.session)}/${route.tab}${route.index ? `?index=${route.index}` : ""}`;
    case "search": {
      const query = new URLSearchParams();
      if (route.payload) query.set("payload", route.payload);
      if (route.type) query.set("type", route.type);
      if (route.id) query.set("id", route.id);
      const q = query.toString();
      return `#/search/${e(route.contract)}${q ? `?${q}` : ""}`;
    }
    default:
      return `#/${route.view}`;
  }
}

export function go(route: Route) {
  window.location.hash = href(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}
