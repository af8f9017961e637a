// The Studio's commands as the UI calls them: the generated bindings'
// names, request and answer types (src/bindings.ts, never edited by hand),
// each dispatched through the Backend chosen at start instead of straight to
// Tauri's `invoke`. The answers keep the bindings' shape: `{ status: "ok",
// data }`, or `{ status: "error", error }` with the Studio's ApiError.
import { commands as generated, type ApiError } from "./bindings";
import type { Backend, Transport } from "./transport";

export type Commands = typeof generated;

let backend: Backend | null = null;

/** Choose where commands run (once, at start; a test hands in a backend of its own, and null to forget it). */
export function setBackend(chosen: Backend | null): void {
  backend = chosen;
}

/** The transport of the chosen backend: a dialog that words things for the web mode asks. */
export function currentTransport(): Transport {
  return current().transport;
}

function current(): Backend {
  if (!backend) throw new Error("no Studio backend chosen: setBackend() runs at start, before any command");
  return backend;
}

/** The Studio's name of a generated command: `deadLetterRedriveMany` → `dead_letter_redrive_many`. */
export function commandName(method: string): string {
  return method.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** As the bindings' own runtime does: a thrown Error is a bug and propagates; anything else is the Studio's refusal. */
async function dispatch(command: string, request: unknown): Promise<{ status: "ok"; data: unknown } | { status: "error"; error: ApiError }> {
  const chosen = current();
  try {
    return { status: "ok", data: await chosen.call(command, { request }) };
  } catch (error) {
    if (error instanceof Error) throw error;
    return { status: "error", error: error as ApiError };
  }
}

/**
 * Every generated command, by the same name and signature. Each sends
 * `{ request }` under the command's snake_case name, as the generated
 * bindings do (commands.test.ts holds this to src/bindings.ts).
 */
export const commands: Commands = Object.fromEntries(
  Object.keys(generated).map((method) => [method, (request: unknown) => dispatch(commandName(method), request)]),
) as unknown as Commands;
