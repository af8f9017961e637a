// Every TanStack Query key the Studio uses, made in one place, so a view
// that reads and a dialog that refreshes can never spell a key differently.
import type { SessionSort } from "./bindings";

export const keys = {
  connection: () => ["connection"] as const,
  profiles: () => ["profiles"] as const,
  connectionDefault: (url: string) => ["connection-default", url] as const,
  demoTraffic: (url: string | undefined) => ["demo-traffic", url] as const,
  contracts: () => ["contracts"] as const,
  consumerOverview: () => ["consumer-overview"] as const,
  pauses: () => ["pauses"] as const,
  audit: () => ["audit"] as const,
  sessions: (contract: string, prefix: string, hasDead: boolean, lagging: boolean, sort: SessionSort) =>
    ["sessions", contract, prefix, hasDead, lagging, sort] as const,
  session: (contract: string, session: string) => ["session", contract, session] as const,
  events: (contract: string, session: string, page: number) => ["events", contract, session, page] as const,
  heads: (contract: string, session: string) => ["heads", contract, session] as const,
  snapshots: (contract: string, session: string) => ["snapshots", contract, session] as const,
  deadLetters: (contract: string | null, session: string | null, consumer: string, cause: string | null) =>
    ["dead-letters", contract, session, consumer, cause] as const,
  deadLetterGroups: (contract: string | null) => ["dead-letter-groups", contract] as const,
  attempts: (contract: string, session: string, consumer: string, index: number) => ["attempts", contract, session, consumer, index] as const,
  throughput: () => ["throughput"] as const,
};

/** Keys a store change can make stale: all but the connection, the saved profiles and how a URL would open. */
export function changesWith(key: readonly unknown[]): boolean {
  const steady: readonly unknown[] = [keys.connection()[0], keys.profiles()[0], keys.connectionDefault("")[0]];
  return !steady.includes(key[0]);
}
