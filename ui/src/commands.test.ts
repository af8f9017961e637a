/// <reference types="vite/client" />
import { afterEach, describe, expect, it } from "vitest";
import { commands as generated, type ApiError } from "./bindings";
import { commandName, commands, setBackend } from "./commands";
import type { Backend } from "./transport";
import bindingsSource from "./bindings.ts?raw";

/** The generated bindings' own calls: `method: (request: T) => …__TAURI_INVOKE("name", { request })`. */
function generatedCalls(): [string, string][] {
  return [...bindingsSource.matchAll(/^\t(\w+): \(request: \w+\) => typedError<.+>\(__TAURI_INVOKE\("(\w+)", \{ request \}\)\),$/gm)].map((m) => [m[1], m[2]]);
}

function recording(answer: (command: string) => unknown): Backend & { seen: [string, unknown][] } {
  const seen: [string, unknown][] = [];
  return {
    transport: "http",
    seen,
    call(command, args) {
      seen.push([command, args]);
      // What `answer` throws, the promise rejects with.
      return new Promise((resolve) => resolve(answer(command)));
    },
  };
}

afterEach(() => setBackend(null));

describe("commands through the backend", () => {
  it("name and send every generated command as the bindings would", () => {
    const calls = generatedCalls();
    expect(calls.length).toBe(Object.keys(generated).length);
    for (const [method, name] of calls) expect(commandName(method)).toBe(name);
    expect(Object.keys(commands)).toEqual(Object.keys(generated));
  });

  it("send `{ request }` to the chosen backend and answer in the bindings' shape", async () => {
    const backend = recording(() => ({ redriven: true }));
    setBackend(backend);
    const target = { contract: "shop", session: "o-1", consumer: "mailer", index: 3 };
    await expect(commands.deadLetterRedrive({ target, action: "skip" })).resolves.toEqual({ status: "ok", data: { redriven: true } });
    expect(backend.seen).toEqual([["dead_letter_redrive", { request: { target, action: "skip" } }]]);
  });

  it("return the Studio's refusal as an error result, and let a real Error through", async () => {
    const refusal: ApiError = { code: "READ_ONLY", message: "refused", retryable: false };
    setBackend(
      recording((command) => {
        if (command === "session_clear") throw refusal;
        throw new Error("bug");
      }),
    );
    await expect(commands.sessionClear({ contract: "shop", session: "o-1", if_last_index: 4 })).resolves.toEqual({ status: "error", error: refusal });
    await expect(commands.contractList({})).rejects.toThrow("bug");
  });

  it("refuse to run before a backend is chosen", async () => {
    await expect(commands.contractList({})).rejects.toThrow(/no Studio backend/);
  });
});
