// Each consumer's total lag over time, sampled from the overview's totals
// while the app is open. It belongs to one connection: the app makes a new
// history whenever it connects to a store, so one store's samples are never
// drawn with another's.
import { createContext, useContext, useState, useSyncExternalStore } from "react";
import type { TotalsSnapshot } from "./bindings";

export type Sample = { at: number; lag: number };
/** Samples by `contract/consumer`, oldest first. */
export type LagSeries = ReadonlyMap<string, readonly Sample[]>;

/** Samples kept per consumer (about 20 minutes at one every 5 s). */
export const KEPT = 240;

/** The series with a snapshot's totals added (the same object when the snapshot was already recorded). */
export function withSnapshot(series: LagSeries, snapshot: TotalsSnapshot, kept = KEPT): LagSeries {
  let next: Map<string, readonly Sample[]> | null = null;
  for (const t of snapshot.totals) {
    const key = `${t.contract}/${t.consumer}`;
    const samples = series.get(key) ?? [];
    if (samples.at(-1)?.at === snapshot.computed_at) continue;
    next ??= new Map(series);
    next.set(key, [...samples, { at: snapshot.computed_at, lag: t.total_lag }].slice(-kept));
  }
  return next ?? series;
}

/** One connection's lag history: recorded by the overview, drawn by its chart. */
export class LagHistory {
  private series: LagSeries = new Map();
  private readonly listeners = new Set<() => void>();

  record(snapshot: TotalsSnapshot): void {
    const next = withSnapshot(this.series, snapshot);
    if (next === this.series) return;
    this.series = next;
    for (const listener of this.listeners) listener();
  }

  readonly read = (): LagSeries => this.series;

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };
}

export const LagHistoryContext = createContext<LagHistory | null>(null);

/** A history for the connection to `store` (its URL; null when none is open), new whenever it changes. */
export function useConnectionLagHistory(store: string | null): LagHistory {
  const [held, setHeld] = useState(() => ({ store, history: new LagHistory() }));
  if (held.store === store) return held.history;
  // Another store: start over (state adjusted while rendering, as React recommends over an effect).
  const fresh = { store, history: new LagHistory() };
  setHeld(fresh);
  return fresh.history;
}

/** The open connection's lag history. */
export function useLagHistory(): LagHistory {
  const history = useContext(LagHistoryContext);
  if (!history) throw new Error("useLagHistory outside the app's LagHistoryContext");
  return history;
}

/** The series as they are now, re-rendering as samples come in. */
export function useLagSeries(history: LagHistory): LagSeries {
  return useSyncExternalStore(history.subscribe, history.read);
}
