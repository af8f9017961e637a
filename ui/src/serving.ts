// Who serves a consumer, by the process registry: the first question on
// call is whether anything is working on it at all.
import type { CatalogConsumer, ConsumerTotal } from "./bindings";

export type Serving =
  | { kind: "served"; by: number }
  /** Work waits and no live process declares the consumer. */
  | { kind: "nobody" }
  /** Declared lately, nothing waiting, no live process now. */
  | { kind: "idle" }
  /** It has heads but no kept process ever declared it: a deploy removed it, or its processes are older than the registry. */
  | { kind: "undeclared" };

export function serving(total: ConsumerTotal, catalog: CatalogConsumer[]): Serving {
  const entry = catalog.find((c) => c.contract === total.contract && c.consumer.name === total.consumer);
  const waiting = total.total_lag > 0 || total.dead_letters > 0;
  if (entry && entry.served_by > 0) return { kind: "served", by: entry.served_by };
  if (waiting) return { kind: "nobody" };
  return entry ? { kind: "idle" } : { kind: "undeclared" };
}
