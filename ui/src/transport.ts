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
export function httpBackend(fetcher: typeof fetch, base: string, tokenSource: string | Promise<string>): Backend {
  return {
    transport: "http",
    async call(command, args) {
      const token = await tokenSource;
      let response: Response;
      try {
        response = await fetcher(`${base}/api/${command}`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-a2-token": token },
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

/** Where this origin keeps the token it traded the printed link's code for: per origin (so per port), and shared by its tabs. */
const TOKEN_KEY = "a2.token";

/** Remove `?code=` from the address shown: it is spent once traded, and no history should keep it. */
export function dropCodeFromAddress(host: Pick<Window, "location" | "history">): void {
  const address = new URL(host.location.href);
  if (!address.searchParams.has("code")) return;
  address.searchParams.delete("code");
  host.history.replaceState(host.history.state, "", address.pathname + address.search + address.hash);
}

/**
 * The token: traded once for the printed link's one-time code (`POST /login`) and kept in this
 * origin's storage, or as kept by an earlier trade (a reload, another tab). Never from the address.
 */
export async function tokenFor(
  code: string | null,
  storage: Pick<Storage, "getItem" | "setItem"> | undefined,
  fetcher: typeof fetch,
  base: string,
): Promise<string> {
  if (code) {
    try {
      const response = await fetcher(`${base}/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ code }),
      });
      const body: unknown = await response.json();
      const token = response.ok && typeof body === "object" && body !== null ? (body as { token?: unknown }).token : null;
      if (typeof token === "string") {
        storage?.setItem(TOKEN_KEY, token);
        return token;
      }
    } catch {
      // Not traded: whatever an earlier trade kept, if anything (the API then says the token is missing).
    }
  }
  return storage?.getItem(TOKEN_KEY) ?? "";
}

type Host = Pick<Window, "location" | "history" | "localStorage" | "fetch">;

/** The backend for where the UI runs: Tauri's IPC inside the app, else HTTP to the server that served the page. */
export function chooseBackend(host: Host, inTauri: () => boolean = isTauri): Backend {
  if (inTauri()) return tauriBackend();
  const code = new URLSearchParams(host.location.search).get("code");
  // Read once: out of the address bar, history and any link copied from it.
  dropCodeFromAddress(host);
  const fetcher = host.fetch.bind(host);
  return httpBackend(fetcher, host.location.origin, tokenFor(code, host.localStorage, fetcher, host.location.origin));
}
