// How the UI reaches the Studio: a Backend chosen once at start — Tauri IPC
// inside the desktop app, HTTP to `a2 serve` (`POST /api/<command>` with the
// server's token) in a browser. Views never call a backend directly: they use
// `commands` from ./commands, the generated bindings' signatures dispatched
// through the backend chosen here.

import { invoke, isTauri } from "@tauri-apps/api/core";
import type { ApiError } from "./bindings";

export type Transport = "tauri" | "http";

/** Where the Studio's commands run. */
export interface Backend {
  readonly transport: Transport;
  /**
   * Run the Studio command `command` (its snake_case name) with `args`
   * (`{ request }`, as the generated bindings send it). Resolves with the
   * answer; a refusal rejects with the Studio's ApiError (not an Error).
   */
  call(command: string, args: Record<string, unknown>): Promise<unknown>;
}

/** The desktop app: Tauri's IPC, through its public `invoke`. */
export function tauriBackend(): Backend {
  return { transport: "tauri", call: (command, args) => invoke(command, args) };
}

/** A browser: `POST <base>/api/<command>` with the token header. Failures reject with an ApiError-shaped value. */
export function httpBackend(fetcher: typeof fetch, base: string, token: string): Backend {
  return {
    transport: "http",
    async call(command, args) {
      let response: Response;
      try {
        response = await fetcher(`${base}/api/${command}`, {
          method: "POST",
          // The page got its cookie from the printed link; a token given here (a script's) goes as the header.
          headers: token ? { "content-type": "application/json", "x-a2-token": token } : { "content-type": "application/json" },
          body: JSON.stringify(args),
        });
      } catch (error) {
        const failure: ApiError = { code: "TRANSPORT", message: `the Studio server did not answer: ${String(error)}`, retryable: true };
        throw failure;
      }
      let body: unknown;
      try {
        body = await response.json();
      } catch {
        const failure: ApiError = {
          code: "TRANSPORT",
          message: `the Studio server answered HTTP ${response.status} without JSON`,
          retryable: true,
        };
        throw failure;
      }
      if (response.ok) return body;
      throw body;
    },
  };
}

/** The token from `?token=` (kept for reloads of this tab). */
export function tokenFrom(search: string, storage: Pick<Storage, "getItem" | "setItem"> | undefined): string {
  const fromUrl = new URLSearchParams(search).get("token");
  if (fromUrl) {
    storage?.setItem("a2.token", fromUrl);
    return fromUrl;
  }
  return storage?.getItem("a2.token") ?? "";
}

/** Remove `?token=` from the address shown (the tab keeps it in sessionStorage for reloads). */
export function dropTokenFromAddress(host: Pick<Window, "location" | "history">): void {
  const address = new URL(host.location.href);
  if (!address.searchParams.has("token")) return;
  address.searchParams.delete("token");
  host.history.replaceState(host.history.state, "", address.pathname + address.search + address.hash);
}

type Host = Pick<Window, "location" | "history" | "sessionStorage" | "fetch">;

/** The backend for where the UI runs: Tauri's IPC inside the app, else HTTP to the server that served the page. */
export function chooseBackend(host: Host, inTauri: () => boolean = isTauri): Backend {
  if (inTauri()) return tauriBackend();
  const token = tokenFrom(host.location.search, host.sessionStorage);
  // Read once: out of the address bar, history and any link copied from it.
  dropTokenFromAddress(host);
  return httpBackend(host.fetch.bind(host), host.location.origin, token);
}
