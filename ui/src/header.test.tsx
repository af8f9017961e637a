/** @vitest-environment jsdom */
// The header says how the views refresh: live (notifications), or polling,
// and through a pooler, that the pooler is why.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import type { ConnectionInfo } from "./bindings";
import { App } from "./App";
import { setBackend } from "./commands";
import { FakeStudio, connectionInfo } from "./test/fakeStudio";

function renderWith(info: ConnectionInfo) {
  return renderOn(new FakeStudio(), info);
}

function renderOn(fake: FakeStudio, info: ConnectionInfo) {
  const studio = fake
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
  return studio;
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

describe("the read-only badge", () => {
  it("says how the store proved it refuses writes", async () => {
    renderWith(connectionInfo({ kind: "postgres", read_only: true, role_can_write: false, read_only_proof: ["role", "session_verified"] }));
    const badge = await screen.findByTestId("read-only-badge");
    expect(screen.getByTestId("read-only-proof").textContent).toMatch(/role cannot write, session verified/);
    expect(badge.getAttribute("title")).toMatch(/no write privilege.*SHOW transaction_read_only/);
  });

  it("says when only this app refuses", async () => {
    renderWith(connectionInfo({ kind: "memory", read_only: true }));
    const badge = await screen.findByTestId("read-only-badge");
    expect(screen.queryByTestId("read-only-proof")).toBeNull();
    expect(badge.getAttribute("title")).toMatch(/proved nothing/);
  });
});

describe("a SQLite file opened read-only", () => {
  it("becomes read-write only when asked, after saying what that changes", async () => {
    const file = connectionInfo({ kind: "sqlite", url: "sqlite:/home/me/orders.sqlite", read_only: true });
    let current = file;
    const fake = new FakeStudio().on("connection_open", () => {
      current = { ...file, read_only: false, migrated: [13] };
      return current;
    });
    const studio = renderOn(fake, file);
    studio.on("connection_get", () => current);
    fireEvent.click(await screen.findByTestId("open-read-write"));
    const dialog = await screen.findByRole("dialog");
    expect(dialog.textContent).toMatch(/orders\.sqlite.*change this file.*migrated/s);
    expect(studio.sent("connection_open")).toEqual([]);
    fireEvent.click(screen.getByRole("button", { name: "Open read-write" }));
    await waitFor(() => expect(screen.getByTestId("outcome").textContent).toMatch(/migrated \(13\)/));
    expect(studio.sent("connection_open")).toEqual([
      { url: "sqlite:/home/me/orders.sqlite", profile: null, password: null, read_only: false },
    ]);
    fireEvent.click(screen.getByRole("button", { name: "Close" }));
    await waitFor(() => expect(screen.queryByTestId("read-only-badge")).toBeNull());
    expect(screen.queryByTestId("open-read-write")).toBeNull();
  });

  it("offers nothing under a read-only ceiling, nor for Postgres", async () => {
    renderWith(connectionInfo({ kind: "sqlite", read_only: true, locked_read_only: true }));
    await screen.findByTestId("read-only-badge");
    expect(screen.queryByTestId("open-read-write")).toBeNull();
    cleanup();
    renderWith(connectionInfo({ kind: "postgres", read_only: true }));
    await screen.findByTestId("read-only-badge");
    expect(screen.queryByTestId("open-read-write")).toBeNull();
  });
});
