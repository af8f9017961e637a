/** @vitest-environment jsdom */
// The overview's lag over time is the open store's alone: after connecting to
// another store, none of the previous store's samples are drawn.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanup, render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import type { TotalsSnapshot } from "./bindings";
import { withSnapshot } from "./lagHistory";
import { App } from "./App";
import { setBackend } from "./commands";
import { FakeStudio, connectionInfo } from "./test/fakeStudio";

function totals(contract: string, consumers: string[], at: number): TotalsSnapshot {
  return {
    computed_at: at,
    totals: consumers.map((consumer, i) => ({ contract, consumer, sessions: 3, lagging_sessions: 1, total_lag: 10 + i, dead_letters: 0 })),
  };
}

function legend(): string[] {
  return [...document.querySelectorAll("figure.chart figcaption .legend")].map((l) => l.textContent?.trim() ?? "");
}

function renderApp() {
  const user = userEvent.setup();
  render(
    <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
      <App transport="tauri" />
    </QueryClientProvider>,
  );
  return user;
}

let studio: FakeStudio;

beforeEach(() => {
  window.location.hash = "#/overview";
  studio = new FakeStudio();
  setBackend(studio);
});

afterEach(() => {
  cleanup();
  setBackend(null);
});

describe("lag history", () => {
  it("starts empty when the app connects to another store", async () => {
    let store: "a" | "b" = "a";
    const a = connectionInfo({ url: "sqlite:a.sqlite" });
    const b = connectionInfo({ url: "sqlite:b.sqlite" });
    studio
      .on("connection_get", () => (store === "a" ? a : b))
      .on("contract_list", () => [store === "a" ? "alpha" : "beta"])
      .on("consumer_overview", () => (store === "a" ? totals("alpha", ["a-one", "a-two"], 1_000) : totals("beta", ["b-one", "b-two"], 2_000)))
      .on("consumer_pause_list", () => [])
      .on("attempt_rates", () => [])
      .on("connection_close", () => true)
      .on("profile_list", () => ({ profiles: [], recent: [] }))
      .on("connection_default", () => ({ read_only: false, locked: false, reason: "a local file" }))
      .on("connection_open", () => {
        store = "b";
        return b;
      });
    const user = renderApp();

    await waitFor(() => expect(legend()).toEqual(["alpha/a-one", "alpha/a-two"]));

    await user.click(await screen.findByRole("button", { name: "Disconnect" }));
    await user.click(await screen.findByTestId("connect"));
    await waitFor(() => expect(legend()).toContain("beta/b-one"));
    expect(legend()).toEqual(["beta/b-one", "beta/b-two"]);
  });

  it("keeps the open store's samples while the operator looks at other views", async () => {
    let reads = 0;
    studio
      .on("connection_get", () => connectionInfo({ url: "sqlite:a.sqlite" }))
      .on("contract_list", () => ["alpha"])
      .on("consumer_overview", () => totals("alpha", ["a-one"], ++reads * 1_000))
      .on("consumer_pause_list", () => [])
      .on("attempt_rates", () => [])
      .on("audit_list", () => []);
    const user = renderApp();
    // Each visit of the overview reads the totals afresh: a sample a visit.
    for (let visit = 1; visit <= 3; visit++) {
      if (visit > 1) {
        await user.click(screen.getByRole("link", { name: "Audit" }));
        await screen.findByTestId("audit-table");
        await user.click(screen.getByRole("link", { name: "Overview" }));
      }
      await waitFor(() => expect(reads).toBe(visit));
    }
    await waitFor(() => expect(legend()).toEqual(["alpha/a-one"]));
    const line = document.querySelector("figure.chart polyline")?.getAttribute("points") ?? "";
    expect(line.split(" ")).toHaveLength(3);
  });

  it("adds a snapshot's totals once, and keeps the newest samples", () => {
    const once = withSnapshot(new Map(), totals("alpha", ["a-one", "a-two"], 1_000));
    expect(withSnapshot(once, totals("alpha", ["a-one", "a-two"], 1_000))).toBe(once);
    let series = once;
    for (let at = 2_000; at <= 6_000; at += 1_000) series = withSnapshot(series, totals("alpha", ["a-one"], at), 3);
    expect(series.get("alpha/a-one")?.map((s) => s.at)).toEqual([4_000, 5_000, 6_000]);
    expect(series.get("alpha/a-two")?.map((s) => s.at)).toEqual([1_000]);
    expect(once.get("alpha/a-one")).toHaveLength(1);
  });
});
