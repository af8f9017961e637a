/** @vitest-environment jsdom */
// The Overview says who keeps the consumer totals fresh and how often, from
// the leaders the operator names, and nothing when nobody leads.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, screen } from "@testing-library/react";
import type { RefreshedBy, TotalsSnapshot } from "../bindings";
import { setBackend } from "../commands";
import { refreshedBy, Overview } from "./Overview";
import { FakeStudio, connectionInfo } from "../test/fakeStudio";
import { renderWithStudio } from "../test/render";
import { LagHistoryContext, useConnectionLagHistory } from "../lagHistory";

/** The Overview inside the lag history the app gives it. */
function WithHistory() {
  const history = useConnectionLagHistory("test");
  return (
    <LagHistoryContext.Provider value={history}>
      <Overview />
    </LagHistoryContext.Provider>
  );
}

afterEach(() => {
  cleanup();
  setBackend(null);
});

function leader(over: Partial<RefreshedBy> = {}): RefreshedBy {
  return { contract: "shop", process: "p-1", host: "worker-1", pid: 4242, every_ms: 2_000, ...over };
}

function snapshot(refreshed_by: RefreshedBy[]): TotalsSnapshot {
  return { computed_at: Date.now() - 1_000, totals: [], catalog: [], origin: "kept", refreshed_by };
}

function studio(kept: TotalsSnapshot): FakeStudio {
  return new FakeStudio()
    .on("contract_list", () => ["shop"])
    .on("presence_sessions", () => [])
    .on("consumer_overview", () => kept)
    .on("consumer_pause_list", () => [])
    .on("attempt_rates", () => []);
}

describe("who refreshes the kept totals", () => {
  it("names the leading process and its period", async () => {
    renderWithStudio(<WithHistory />, { studio: studio(snapshot([leader()])), connection: connectionInfo({ read_only: true }) });
    expect((await screen.findByTestId("totals-refreshed-by")).textContent).toMatch(/refreshed by worker-1:4242 every 2 s/);
  });

  it("says nothing of a refresher when nobody leads", async () => {
    renderWithStudio(<WithHistory />, { studio: studio(snapshot([])), connection: connectionInfo({ read_only: true }) });
    await screen.findByTestId("totals-origin");
    expect(screen.queryByTestId("totals-refreshed-by")).toBeNull();
  });

  it("counts the leaders of several contracts, and leaves out a period not said", () => {
    expect(refreshedBy(snapshot([leader(), leader({ contract: "billing", pid: 7 })]))).toBe(
      "refreshed by 2 servers (one a contract)",
    );
    expect(refreshedBy(snapshot([leader({ every_ms: 0 })]))).toBe("refreshed by worker-1:4242");
  });
});
