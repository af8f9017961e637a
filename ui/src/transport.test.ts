import { describe, expect, it, vi } from "vitest";
import { chooseBackend, dropCodeFromAddress, httpBackend, tauriBackend, tokenFor } from "./transport";

const tauri = vi.hoisted(() => ({ invoke: vi.fn((command: string, args: unknown) => Promise.resolve({ command, args })), isTauri: vi.fn(() => false) }));
vi.mock("@tauri-apps/api/core", () => tauri);

function fakeFetch(status: number, body: unknown, seen: { url?: string; init?: RequestInit }) {
  return ((url: string, init: RequestInit) => {
    seen.url = url;
    seen.init = init;
    return Promise.resolve(new Response(typeof body === "string" ? body : JSON.stringify(body), { status }));
  }) as unknown as typeof fetch;
}

function memoryStorage() {
  const kept = new Map<string, string>();
  return { getItem: (k: string) => kept.get(k) ?? null, setItem: (k: string, v: string) => void kept.set(k, v) } as Storage;
}

function browser(href: string, fetcher: typeof fetch) {
  const address = new URL(href);
  const replaced: string[] = [];
  const host = {
    location: { href, search: address.search, origin: address.origin } as Location,
    history: { state: null, replaceState: (_s: unknown, _t: string, url: string) => replaced.push(url) } as unknown as History,
    localStorage: memoryStorage(),
    fetch: fetcher,
  } as unknown as Window;
  return { host, replaced };
}

describe("transport", () => {
  it("uses Tauri's public invoke inside the app, passing the command and its request through", async () => {
    const { host } = browser("tauri://localhost/", fakeFetch(500, {}, {}));
    const backend = chooseBackend(host, () => true);
    expect(backend.transport).toBe("tauri");
    await expect(backend.call("contract_list", { request: {} })).resolves.toEqual({ command: "contract_list", args: { request: {} } });
    expect(tauri.invoke).toHaveBeenCalledWith("contract_list", { request: {} });
    expect(tauriBackend().transport).toBe("tauri");
  });

  it("asks Tauri's isTauri by default, trades the link's code for the token once, and patches nothing of the page", async () => {
    const seen: { url?: string; init?: RequestInit }[] = [];
    const fetcher = ((url: string, init: RequestInit) => {
      seen.push({ url, init });
      const body = url.endsWith("/login") ? { token: "t0k" } : ["shop"];
      return Promise.resolve(new Response(JSON.stringify(body), { status: 200 }));
    }) as unknown as typeof fetch;
    const { host, replaced } = browser("http://127.0.0.1:4000/?code=c0de#/sessions/shop", fetcher);
    const backend = chooseBackend(host);
    expect(tauri.isTauri).toHaveBeenCalled();
    expect(backend.transport).toBe("http");
    expect(Object.keys(host)).toEqual(["location", "history", "localStorage", "fetch"]);
    expect(replaced).toEqual(["/#/sessions/shop"]);
    await backend.call("contract_list", { request: {} });
    expect(seen.map((s) => s.url)).toEqual(["http://127.0.0.1:4000/login", "http://127.0.0.1:4000/api/contract_list"]);
    expect(JSON.parse(seen[0].init?.body as string)).toEqual({ code: "c0de" });
    expect((seen[1].init?.headers as Record<string, string>)["x-a2-token"]).toBe("t0k");
    expect(host.localStorage.getItem("a2.token")).toBe("t0k");
  });

  it("posts the command's arguments with the token and resolves with the answer", async () => {
    const seen: { url?: string; init?: RequestInit } = {};
    const backend = httpBackend(fakeFetch(200, ["shop"], seen), "http://127.0.0.1:9", "t0k");
    await expect(backend.call("contract_list", { request: {} })).resolves.toEqual(["shop"]);
    expect(seen.url).toBe("http://127.0.0.1:9/api/contract_list");
    expect(seen.init?.method).toBe("POST");
    expect((seen.init?.headers as Record<string, string>)["x-a2-token"]).toBe("t0k");
    expect(JSON.parse(seen.init?.body as string)).toEqual({ request: {} });
  });

  it("rejects with the Studio's typed error, not an Error, so the commands return it", async () => {
    const error = { code: "READ_ONLY", message: "refused", retryable: false };
    const backend = httpBackend(fakeFetch(403, error, {}), "", "t");
    await expect(backend.call("session_clear", { request: {} })).rejects.toEqual(error);
  });

  it("turns a dead server or a non-JSON answer into a retryable TRANSPORT error", async () => {
    const down = (() => Promise.reject(new TypeError("connection refused"))) as unknown as typeof fetch;
    await expect(httpBackend(down, "", "t").call("contract_list", { request: {} })).rejects.toMatchObject({ code: "TRANSPORT", retryable: true });
    await expect(httpBackend(fakeFetch(502, "<html>", {}), "", "t").call("contract_list", { request: {} })).rejects.toMatchObject({
      code: "TRANSPORT",
    });
  });

  it("keeps the traded token for reloads and other tabs, and a spent code falls back to it", async () => {
    const storage = memoryStorage();
    const traded = fakeFetch(200, { token: "t0k" }, {});
    expect(await tokenFor("c0de", storage, traded, "")).toBe("t0k");
    expect(await tokenFor(null, storage, fakeFetch(500, {}, {}), "")).toBe("t0k");
    const spent = fakeFetch(403, { code: "UNAUTHORIZED", message: "already used", retryable: false }, {});
    expect(await tokenFor("c0de", storage, spent, "")).toBe("t0k");
    expect(await tokenFor("c0de", memoryStorage(), spent, "")).toBe("");
  });

  it("drops the code from the address bar once read, keeping the route", () => {
    const replaced: string[] = [];
    const host = {
      location: { href: "http://127.0.0.1:4000/?code=abc&x=1#/sessions/shop" } as Location,
      history: { state: null, replaceState: (_s: unknown, _t: string, url: string) => replaced.push(url) } as unknown as History,
    };
    dropCodeFromAddress(host);
    expect(replaced).toEqual(["/?x=1#/sessions/shop"]);
    dropCodeFromAddress({ ...host, location: { href: "http://127.0.0.1:4000/#/overview" } as Location });
    expect(replaced).toHaveLength(1);
  });
});
