// Every refresh of what the Studio shows goes through here:
// - live: wait for the store's change counter to move (a Postgres
//   notification, an action, or a poll), then refetch what is on screen;
// - polls: the reads that move with the clock as well as with the store,
//   re-read on a timer while connected;
// - after an action: what that action can change, at once, without waiting
//   for the change counter;
// - switching stores: everything read from the previous store is dropped.
// Queries keep their data while refetching, so the operator's scroll and
// selection stay put.
import { useCallback, useEffect } from "react";
import { useQueryClient } from "@tanstack/react-query";
import type { ConnectionInfo } from "./bindings";
import { commands } from "./commands";
import { changesWith, keys, touchedBy, type Change } from "./keys";

export type { Change } from "./keys";

/** Reads re-read on a timer as well as on every change. */
const POLLS: { key: readonly unknown[]; every: number; replicaOnly?: true }[] = [
  // Kept totals are recomputed once older than 5 s (a replica shows them as they age).
  { key: keys.consumerOverview(), every: 5_000 },
  // Another process may pause or resume a consumer.
  { key: keys.pauses(), every: 5_000 },
  // Timers fall due (and become overdue) with the clock, not with the store.
  { key: keys.allTimers(), every: 5_000 },
  // Presence expires with the clock; on SQLite and memory another process's writes are only seen by reading.
  { key: keys.allPresence(), every: 2_000 },
  // Processes beat with the clock, in other processes.
  { key: keys.processes(), every: 5_000 },
  // A replica's delay behind its primary.
  { key: keys.connection(), every: 2_000, replicaOnly: true },
];

/** Keep what is on screen current while `connection` is open. */
export function useLiveRefresh(connection: ConnectionInfo | null) {
  const client = useQueryClient();
  const connected = connection !== null;
  const replica = connection?.replica ?? false;

  useEffect(() => {
    if (!connected) return;
    let stopped = false;
    let since = 0;
    void (async () => {
      while (!stopped) {
        const tick = await commands.changeWait({ since, timeout_ms: 25_000 });
        if (stopped) break;
        if (tick.status === "error") {
          await new Promise((r) => setTimeout(r, 3_000));
          continue;
        }
        if (tick.data.version !== since) {
          await client.invalidateQueries({ predicate: (q) => changesWith(q.queryKey) });
        }
        since = tick.data.version;
      }
    })();
    return () => {
      stopped = true;
    };
  }, [connected, client]);

  useEffect(() => {
    if (!connected) return;
    const timers = POLLS.filter((poll) => !poll.replicaOnly || replica).map((poll) =>
      // Only the reads on screen refetch; one still under way is left to finish.
      setInterval(() => void client.invalidateQueries({ queryKey: poll.key }, { cancelRefetch: false }), poll.every),
    );
    return () => timers.forEach(clearInterval);
  }, [connected, replica, client]);
}

/** Refresh, at once, what `change` can make stale. */
export function useRefreshAfter(): (change: Change) => void {
  const client = useQueryClient();
  return useCallback((change: Change) => void client.invalidateQueries({ predicate: (q) => touchedBy(change, q.queryKey) }), [client]);
}

/** A dialog's `onClose` that first refreshes what `change` touched, when the dialog says it changed something. */
export function useCloseAfter(change: Change, onClose: (changed: boolean) => void): (changed: boolean) => void {
  const refresh = useRefreshAfter();
  return (changed: boolean) => {
    if (changed) refresh(change);
    onClose(changed);
  };
}

/**
 * Open another store (or the same one another way, e.g. read-write): nothing
 * read from the previous one is kept. The connection's own query is updated
 * in place, not cleared and made anew, so the app re-renders with it even
 * when nothing else (a route) changes; every other query is dropped, and the
 * views fetch theirs again as they re-render.
 */
export function useSwitchConnection(): (next: ConnectionInfo | null) => void {
  const client = useQueryClient();
  return useCallback(
    (next: ConnectionInfo | null) => {
      const connection = keys.connection()[0];
      client.removeQueries({ predicate: (query) => query.queryKey[0] !== connection });
      client.setQueryData(keys.connection(), next);
    },
    [client],
  );
}
