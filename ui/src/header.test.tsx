/** @vitest-environment jsdom */
// The header says how the views refresh: live (notifications), or polling,
// and through a pooler, that the pooler is why.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanup, render, screen } from "@testing-library/react";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import type { ConnectionInfo } from "./bindings";
import { App } from "./App";
import { setBackend } from "./commands";
import { FakeStudio, connectionInfo } from "./test/fakeStudio";

function renderWith(info: ConnectionInfo) {
  const studio = new FakeStudio()
    .on("connection_get", () => info)
    .on("contract_list", () => [])
    .on("consumer_overview", () => ({ computed_at: 0, totals: [] }))
    .on("consumer_pause_list", () => [])
    .on("attempt_rates", () => [])
    .on("profile_list", () => ({ profiles: [], recent: [] }));
  setBackend(studio);
  render(
    <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
      <App transport="tauri" />
    </QueryClientProvider>,
  );
}

beforeEach(() => {
  window.location.hash = "#/overview";
});

afterEach(() => {
  cleanup();
  setBackend(null);
});

describe("the header's refresh state", () => {
  it("says live when notifications arrive", async () => {
    renderWith(connectionInfo({ kind: "postgres", live: true }));
    expect((await screen.findByTestId("live-state")).textContent).toBe("live");
  });

  it("says when PGSSLMODE, not the URL, chose the TLS mode", async () => {
    renderWith(connectionInfo({ kind: "postgres", tls: "encrypted", sslmode_from_env: "require" }));
    const badge = await screen.findByTestId("tls-badge");
    expect(badge.textContent).toBe("TLS unverified (PGSSLMODE=require)");
    expect(badge.getAttribute("title")).toMatch(/PGSSLMODE environment variable.*verify-full default/);
  });

  it("says nothing of the environment when the URL chose", async () => {
    renderWith(connectionInfo({ kind: "postgres", tls: "verified" }));
    expect((await screen.findByTestId("tls-badge")).textContent).toBe("TLS verified");
  });

  it("says a pooler is why it polls", async () => {
    renderWith(connectionInfo({ kind: "postgres", read_only: true, live: false, pooled: true }));
    const state = await screen.findByTestId("live-state");
    expect(state.textContent).toBe("polling (pooler)");
    expect(state.getAttribute("title")).toMatch(/pooler.*LISTEN.*listen_url/);
  });
});
