// Whether an action may be offered, and if not, why — the UI disables it and
// says so; the Studio refuses it again on the server (READ_ONLY).

import type { ConnectionInfo } from "./bindings";

export type Gateable = Pick<ConnectionInfo, "read_only"> & Partial<Pick<ConnectionInfo, "hosts_demo" | "replica">>;

export type Gate = { allowed: true } | { allowed: false; reason: string };

export type Action = "redrive" | "consume" | "consume.run" | "clear" | "demo" | "pause" | "timer";

export function gate(connection: Gateable | null | undefined, action: Action): Gate {
  if (!connection) return { allowed: false, reason: "Not connected to a store." };
  // A hot standby is read-only whatever was asked: the primary is where to act.
  if (connection.replica) return { allowed: false, reason: "Replica (read-only): act on the primary to change the store." };
  if (connection.read_only) {
    return { allowed: false, reason: "Read-only connection: reconnect read-write to change the store." };
  }
  if ((action === "consume.run" || action === "demo") && !connection.hosts_demo) {
    return { allowed: false, reason: "This app does not run that contract's consumers: use ack or export." };
  }
  return { allowed: true };
}
