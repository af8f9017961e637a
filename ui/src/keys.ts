// Every TanStack Query key the Studio uses, made in one place, so a view
// that reads and a dialog that refreshes can never spell a key differently.
import type { SessionSort } from "./bindings";

/** The first part of each key: what the key reads. */
const ROOT = {
  connection: "connection",
  profiles: "profiles",
  connectionDefault: "connection-default",
  demoTraffic: "demo-traffic",
  contracts: "contracts",
  consumerOverview: "consumer-overview",
  pauses: "pauses",
  audit: "audit",
  sessions: "sessions",
  session: "session",
  events: "events",
  heads: "heads",
  snapshots: "snapshots",
  deadLetters: "dead-letters",
  deadLetterGroups: "dead-letter-groups",
  deadLetterEvent: "dead-letter-event",
  attempts: "attempts",
  appended: "appended",
  throughput: "throughput",
  timers: "timers",
  presence: "presence",
  processes: "processes",
  processHeads: "process-heads",
} as const;

type Root = (typeof ROOT)[keyof typeof ROOT];

export const keys = {
  connection: () => [ROOT.connection] as const,
  profiles: () => [ROOT.profiles] as const,
  connectionDefault: (url: string) => [ROOT.connectionDefault, url] as const,
  demoTraffic: (url: string | undefined) => [ROOT.demoTraffic, url] as const,
  contracts: () => [ROOT.contracts] as const,
  consumerOverview: () => [ROOT.consumerOverview] as const,
  pauses: () => [ROOT.pauses] as const,
  audit: () => [ROOT.audit] as const,
  sessions: (contract: string, prefix: string, hasDead: boolean, lagging: boolean, sort: SessionSort) =>
    [ROOT.sessions, contract, prefix, hasDead, lagging, sort] as const,
  session: (contract: string, session: string) => [ROOT.session, contract, session] as const,
  events: (contract: string, session: string, page: number) => [ROOT.events, contract, session, page] as const,
  heads: (contract: string, session: string) => [ROOT.heads, contract, session] as const,
  snapshots: (contract: string, session: string) => [ROOT.snapshots, contract, session] as const,
  deadLetters: (contract: string | null, session: string | null, consumer: string, cause: string | null) =>
    [ROOT.deadLetters, contract, session, consumer, cause] as const,
  deadLetterGroups: (contract: string | null) => [ROOT.deadLetterGroups, contract] as const,
  /** The event a dead letter is stuck on (its payload). */
  deadLetterEvent: (contract: string, session: string, index: number) => [ROOT.deadLetterEvent, contract, session, index] as const,
  attempts: (contract: string, session: string, consumer: string, index: number) => [ROOT.attempts, contract, session, consumer, index] as const,
  /** The events an attempt appended, found after its trigger. */
  appended: (contract: string, session: string, index: number, ids: readonly string[]) => [ROOT.appended, contract, session, index, ids] as const,
  throughput: () => [ROOT.throughput] as const,
  /** The process registry. */
  processes: () => [ROOT.processes] as const,
  /** The heads one process leases now: read when its row opens, not polled (it scans the heads). */
  processHeads: (id: string) => [ROOT.processHeads, id] as const,
  /** Pending timers: store-wide, or of one session. */
  timers: (contract: string | null, session: string | null) => [ROOT.timers, contract, session] as const,
  /** A session's newest events, for the delivered timers the Timeline marks (under the events prefix). */
  timelineEvents: (contract: string, session: string) => [ROOT.events, contract, session, "timeline"] as const,
  /** Every timers read, store-wide and per session (a prefix). */
  allTimers: () => [ROOT.timers] as const,
  /** A session's live presence. */
  presence: (contract: string, session: string) => [ROOT.presence, contract, session] as const,
  /** How many sessions of each contract have anyone present (the overview). */
  presenceSessions: () => [ROOT.presence, "sessions"] as const,
  /** Every presence read (a prefix). */
  allPresence: () => [ROOT.presence] as const,
};

/** Reads that no store change touches: the connection, the saved profiles and how a URL would open. */
const STEADY: readonly Root[] = [ROOT.connection, ROOT.profiles, ROOT.connectionDefault];

/** Keys a store change can make stale: all but the connection, the saved profiles and how a URL would open. */
export function changesWith(key: readonly unknown[]): boolean {
  return !STEADY.includes(key[0] as Root);
}

/** What an operator does that changes what the Studio shows. */
export type Change = "redrive" | "consume" | "clear" | "pause" | "timer" | "profiles";

/** The reads each change can make stale, by their key's first part. */
const TOUCHES: Record<Change, readonly Root[]> = {
  // A dead letter retried or skipped: the queue, its head, the session's and the store's counts, the attempts, the audit.
  redrive: [ROOT.deadLetters, ROOT.deadLetterGroups, ROOT.heads, ROOT.session, ROOT.sessions, ROOT.consumerOverview, ROOT.attempts, ROOT.throughput, ROOT.audit],
  // A cursor moved (running the consumer may append events): its heads, attempts and events, the counts, the audit.
  consume: [ROOT.heads, ROOT.attempts, ROOT.appended, ROOT.events, ROOT.session, ROOT.sessions, ROOT.contracts, ROOT.consumerOverview, ROOT.deadLetters, ROOT.deadLetterGroups, ROOT.throughput, ROOT.audit],
  // A session cleared through an index: its events, heads, dead letters and snapshots, and every count.
  clear: [ROOT.timers, ROOT.session, ROOT.sessions, ROOT.events, ROOT.heads, ROOT.snapshots, ROOT.deadLetters, ROOT.deadLetterGroups, ROOT.deadLetterEvent, ROOT.attempts, ROOT.appended, ROOT.consumerOverview, ROOT.throughput, ROOT.audit],
  // A consumer paused or resumed store-wide.
  pause: [ROOT.pauses, ROOT.consumerOverview, ROOT.audit],
  // A timer delivered now (its events appended, their consumers run) or cancelled.
  timer: [ROOT.timers, ROOT.events, ROOT.session, ROOT.sessions, ROOT.heads, ROOT.contracts, ROOT.consumerOverview, ROOT.audit],
  profiles: [ROOT.profiles],
};

/** Whether `change` can make the read under `key` stale. */
export function touchedBy(change: Change, key: readonly unknown[]): boolean {
  return TOUCHES[change].includes(key[0] as Root);
}
