// The bindings' results, unwrapped for TanStack Query: a failed command
// throws a StudioError carrying the Studio's stable code.
import type { ApiError, ErrorCode } from "./bindings";

export class StudioError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  constructor(error: ApiError) {
    super(error.message);
    this.code = error.code;
    this.retryable = error.retryable;
  }
}

type Result<T> = { status: "ok"; data: T } | { status: "error"; error: ApiError };

export async function unwrap<T>(call: Promise<Result<T>>): Promise<T> {
  const result = await call;
  if (result.status === "ok") return result.data;
  throw new StudioError(result.error);
}

export function errorCode(error: unknown): ErrorCode {
  if (error instanceof StudioError) return error.code;
  return "UNEXPECTED";
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
