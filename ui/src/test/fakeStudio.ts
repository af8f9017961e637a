// A Studio in memory for component tests: answers commands by name, records
// what was sent, and refuses with the Studio's typed errors.
import type { ApiError, ConnectionInfo, DeadLetter } from "../bindings";
import type { Backend, Transport } from "../transport";

export type Handler = (request: unknown) => unknown;

export class FakeStudio implements Backend {
  constructor(readonly transport: Transport = "tauri") {}

  readonly calls: { command: string; request: unknown }[] = [];
  private handlers = new Map<string, Handler>();

  /** Answer `command` (snake_case, as the Studio names it) with `handler`'s value; a thrown ApiError is the Studio's refusal. */
  on(command: string, handler: Handler): this {
    this.handlers.set(command, handler);
    return this;
  }

  /** What was sent with `command`, in order. */
  sent(command: string): unknown[] {
    return this.calls.filter((c) => c.command === command).map((c) => c.request);
  }

  async call(command: string, args: Record<string, unknown> | undefined): Promise<unknown> {
    const request = args?.request;
    this.calls.push({ command, request });
    // The live-refresh loop waits for a change that never comes.
    if (command === "change_wait") return new Promise(() => {});
    const handler = this.handlers.get(command);
    if (!handler) {
      const missing: ApiError = { code: "NOT_FOUND", message: `the fake Studio has no ${command}`, retryable: false };
      throw missing;
    }
    return handler(request);
  }
}

export function refusal(code: ApiError["code"], message = "refused"): ApiError {
  return { code, message, retryable: false };
}

export function connectionInfo(overrides: Partial<ConnectionInfo> = {}): ConnectionInfo {
  return {
    url: "sqlite:.a2/test.sqlite",
    kind: "sqlite",
    read_only: false,
    role_can_write: null,
    warning: null,
    read_only_proof: [],
    hosts_demo: false,
    live: false,
    tls: null,
    sslmode_from_env: null,
    server: null,
    locked_read_only: false,
    replica: false,
    pooled: false,
    replica_delay_ms: null,
    migrated: [],
    ...overrides,
  };
}

export function deadLetter(session: string, consumer: string, index: number, overrides: Partial<DeadLetter> = {}): DeadLetter {
  return {
    contract: "shop",
    session,
    consumer,
    lane: null,
    index,
    event_id: `evt-${session}-${index}`,
    type: "order.placed",
    attempt_count: 10,
    failure_count: 10,
    last_error: "poison",
    failed_at: 1_700_000_000_000,
    ...overrides,
  };
}
