/** @vitest-environment jsdom */
// Live refresh owns the timers: the overview's totals and the pauses are
// re-read every 5 s while connected, a replica's delay every 2 s, and a read
// no change or timer touches is left alone.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { act, cleanup, render } from "@testing-library/react";
import { QueryClient, QueryClientProvider, useQuery } from "@tanstack/react-query";
import type { ConnectionInfo } from "./bindings";
import { commands, setBackend } from "./commands";
import { unwrap } from "./api";
import { keys } from "./keys";
import { useLiveRefresh } from "./live";
import { FakeStudio, connectionInfo } from "./test/fakeStudio";

function Reads({ connection }: { connection: ConnectionInfo | null }) {
  useLiveRefresh(connection);
  useQuery({ queryKey: keys.consumerOverview(), queryFn: () => unwrap(commands.consumerOverview({ contract: null, max_age_ms: 5_000 })) });
  useQuery({ queryKey: keys.pauses(), queryFn: () => unwrap(commands.consumerPauseList({ contract: null })) });
  useQuery({ queryKey: keys.connection(), queryFn: () => unwrap(commands.connectionGet({})) });
  useQuery({ queryKey: keys.contracts(), queryFn: () => unwrap(commands.contractList({})) });
  return null;
}

let studio: FakeStudio;

beforeEach(() => {
  vi.useFakeTimers();
  studio = new FakeStudio()
    .on("consumer_overview", () => ({ computed_at: 0, totals: [] }))
    .on("consumer_pause_list", () => [])
    .on("connection_get", () => null)
    .on("contract_list", () => []);
  setBackend(studio);
});

afterEach(() => {
  cleanup();
  setBackend(null);
  vi.useRealTimers();
});

async function after(ms: number) {
  await act(() => vi.advanceTimersByTimeAsync(ms));
}

function counts() {
  return ["consumer_overview", "consumer_pause_list", "connection_get", "contract_list"].map((c) => studio.sent(c).length);
}

describe("live refresh", () => {
  it("re-reads the totals and the pauses every 5 s while connected", async () => {
    render(
      <QueryClientProvider client={new QueryClient()}>
        <Reads connection={connectionInfo()} />
      </QueryClientProvider>,
    );
    await after(0);
    expect(counts()).toEqual([1, 1, 1, 1]);
    await after(5_000);
    expect(counts()).toEqual([2, 2, 1, 1]);
    await after(10_000);
    expect(counts()).toEqual([4, 4, 1, 1]);
  });

  it("re-reads a replica's connection (its delay) every 2 s", async () => {
    render(
      <QueryClientProvider client={new QueryClient()}>
        <Reads connection={connectionInfo({ replica: true, read_only: true })} />
      </QueryClientProvider>,
    );
    await after(0);
    await after(4_000);
    expect(counts()).toEqual([1, 1, 3, 1]);
  });

  it("polls nothing while disconnected", async () => {
    render(
      <QueryClientProvider client={new QueryClient()}>
        <Reads connection={null} />
      </QueryClientProvider>,
    );
    await after(0);
    await after(20_000);
    expect(counts()).toEqual([1, 1, 1, 1]);
    expect(studio.sent("change_wait")).toEqual([]);
  });
});
