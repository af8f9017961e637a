import { describe, expect, it } from "vitest";
import { detectTransport, dropTokenFromAddress, httpInvoke, tokenFrom } from "./transport";

function fakeFetch(status: number, body: unknown, seen: { url?: string; init?: RequestInit }) {
  return (async (url: string, init: RequestInit) => {
    seen.url = url;
    seen.init = init;
    return new Response(typeof body === "string" ? body : JSON.stringify(body), { status });
  }) as unknown as typeof fetch;
}

describe("transport", () => {
  it("uses Tauri IPC inside the app and HTTP elsewhere", () => {
    expect(detectTransport({ __TAURI_INTERNALS__: { invoke: async () => null } })).toBe("tauri");
    expect(detectTransport({})).toBe("http");
  });

  it("posts the command's arguments with the token and resolves with the answer", async () => {
    const seen: { url?: string; init?: RequestInit } = {};
    const invoke = httpInvoke(fakeFetch(200, ["shop"], seen), "http://127.0.0.1:9", "t0k");
    await expect(invoke("contract_list", { request: {} })).resolves.toEqual(["shop"]);
    expect(seen.url).toBe("http://127.0.0.1:9/api/contract_list");
    expect((seen.init?.headers as Record<string, string>)["x-a2-token"]).toBe("t0k");
    expect(JSON.parse(String(seen.init?.body))).toEqual({ request: {} });
  });

  it("rejects with the Studio's typed error, not an Error, so the bindings return it", async () => {
    const error = { code: "READ_ONLY", message: "refused", retryable: false };
    const invoke = httpInvoke(fakeFetch(403, error, {}), "", "t");
    await expect(invoke("session_clear", {})).rejects.toEqual(error);
  });

  it("turns a dead server or a non-JSON answer into a retryable TRANSPORT error", async () => {
    const down = (async () => {
      throw new TypeError("connection refused");
    }) as unknown as typeof fetch;
    await expect(httpInvoke(down, "", "t")("contract_list")).rejects.toMatchObject({ code: "TRANSPORT", retryable: true });
    await expect(httpInvoke(fakeFetch(502, "<html>", {}), "", "t")("contract_list")).rejects.toMatchObject({
      code: "TRANSPORT",
    });
  });

  it("keeps the token from the URL for reloads", () => {
    const kept = new Map<string, string>();
    const storage = { getItem: (k: string) => kept.get(k) ?? null, setItem: (k: string, v: string) => void kept.set(k, v) };
    expect(tokenFrom("?token=abc", storage)).toBe("abc");
    expect(tokenFrom("", storage)).toBe("abc");
    expect(tokenFrom("", undefined)).toBe("");
  });

  it("drops the token from the address bar once read, keeping the route", () => {
    const replaced: string[] = [];
    const host = {
      location: { href: "http://127.0.0.1:4000/?token=abc&x=1#/sessions/shop" } as Location,
      history: { state: null, replaceState: (_s: unknown, _t: string, url: string) => replaced.push(url) } as unknown as History,
    };
    dropTokenFromAddress(host);
    expect(replaced).toEqual(["/?x=1#/sessions/shop"]);
    dropTokenFromAddress({ ...host, location: { href: "http://127.0.0.1:4000/#/overview" } as Location });
    expect(replaced).toHaveLength(1);
  });
});
