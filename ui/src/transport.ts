// How the generated bindings reach the Studio: Tauri IPC inside the desktop
// app, or HTTP to `a2 serve` in a browser. The bindings call Tauri's
// `invoke`, which goes through `window.__TAURI_INTERNALS__`; in a browser we
// install an HTTP version of that one function, so the same bindings serve both.

import type { ApiError } from "./bindings";

export type Transport = "tauri" | "http";

type Invoke = (command: string, args?: unknown) => Promise<unknown>;

interface Internals {
  invoke: Invoke;
  transformCallback?: (callback: unknown) => number;
}

type Host = { __TAURI_INTERNALS__?: Internals };

export function detectTransport(host: Host): Transport {
  return host.__TAURI_INTERNALS__ ? "tauri" : "http";
}

/** An `invoke` over HTTP: `POST /api/<command>` with the token header. Failures reject with an ApiError-shaped value. */
export function httpInvoke(fetcher: typeof fetch, base: string, token: string): Invoke {
  return async (command, args) => {
    let response: Response;
    try {
      response = await fetcher(`${base}/api/${command}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-a2-token": token },
        body: JSON.stringify(args ?? {}),
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

let installed: Transport = "tauri";

/** The transport chosen at start: a dialog that words things for the web mode asks. */
export function currentTransport(): Transport {
  return installed;
}

/** Choose the transport at start; in a browser, route `invoke` over HTTP. */
export function installTransport(host: Host & Window): Transport {
  const transport = detectTransport(host);
  installed = transport;
  if (transport === "http") {
    const token = tokenFrom(host.location.search, host.sessionStorage);
    // Read once: out of the address bar, history and any link copied from it.
    dropTokenFromAddress(host);
    let next = 1;
    host.__TAURI_INTERNALS__ = {
      invoke: httpInvoke(host.fetch.bind(host), host.location.origin, token),
      transformCallback: () => next++,
    };
  }
  return transport;
}
