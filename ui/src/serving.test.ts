import { describe, expect, it } from "vitest";
import type { CatalogConsumer, ConsumerTotal } from "./bindings";
import { serving } from "./serving";

const total = (lag: number, dead = 0): ConsumerTotal => ({
  contract: "shop",
  consumer: "mailer",
  sessions: 1,
  lagging_sessions: lag > 0 ? 1 : 0,
  total_lag: lag,
  dead_letters: dead,
});
const declared = (served_by: number): CatalogConsumer => ({
  contract: "shop",
  consumer: { name: "mailer", kind: "log", lane: "main", types: [] },
  served_by,
  last_served: 0,
});

describe("who serves a consumer", () => {
  it("counts the live processes that declare it", () => {
    expect(serving(total(3), [declared(2)])).toEqual({ kind: "served", by: 2 });
  });

  it("says nobody when work waits and no live process declares it", () => {
    expect(serving(total(3), [declared(0)])).toEqual({ kind: "nobody" });
    expect(serving(total(0, 1), [])).toEqual({ kind: "nobody" });
  });

  it("tells an idle consumer from one no process ever declared", () => {
    expect(serving(total(0), [declared(0)])).toEqual({ kind: "idle" });
    expect(serving(total(0), [])).toEqual({ kind: "undeclared" });
  });
});
