/** @vitest-environment jsdom */
// The Timers view: overdue timers stand out, read-only and replica
// connections are offered no change, and "deliver now" sends exactly the
// timer confirmed and says what happened.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, screen, within } from "@testing-library/react";
import type { TimerView } from "../bindings";
import { setBackend } from "../commands";
import { TimerTable } from "./Timers";
import { FakeStudio, connectionInfo } from "../test/fakeStudio";
import { renderWithStudio } from "../test/render";

afterEach(() => {
  cleanup();
  setBackend(null);
});

function timer(id: string, over: Partial<TimerView> = {}): TimerView {
  return {
    id,
    contract: "shop",
    session: "order-1",
    name: "payment-reminder",
    kind: "append",
    due_at: 100_000,
    due_in_ms: 60_000,
    overdue: false,
    events: [{ id: `${id}-e`, type: "payment.reminder", payload: '{"order":"e-1"}' }],
    if_last_index: null,
    trigger: { event_id: "e-1", index: 1, consumer: "reminders" },
    created_at: 10_000,
    attempts: 0,
    last_error: null,
    lease_holder: null,
    lease_expires_at: null,
    ...over,
  };
}

function studio(): FakeStudio {
  return new FakeStudio().on("timer_list", () => ({
    items: [timer("t-late", { due_in_ms: -60_000, overdue: true }), timer("t-soon")],
    next: null,
  }));
}

describe("the timers table", () => {
  it("marks an overdue timer and says nobody is serving it", async () => {
    renderWithStudio(<TimerTable />, { studio: studio(), connection: connectionInfo({ read_only: false }) });
    const rows = await screen.findAllByTestId("timer-row");
    expect(rows.map((r) => r.className)).toEqual(["overdue", ""]);
    expect(within(rows[0]).getByText("overdue")).toBeTruthy();
    expect(screen.getByTestId("timers-overdue").textContent).toMatch(/1 overdue: no server/);
    expect(within(rows[1]).queryByText("overdue")).toBeNull();
  });

  it.each([
    ["read-only", connectionInfo({ read_only: true }), /read-only/i],
    ["a replica", connectionInfo({ kind: "postgres", read_only: true, replica: true, replica_delay_ms: 0 }), /replica/i],
  ])("offers no change on %s", async (_, connection, why) => {
    const fake = studio();
    const { user } = renderWithStudio(<TimerTable />, { studio: fake, connection });
    await screen.findAllByTestId("timer-row");
    const buttons = [...screen.getAllByTestId("timer-deliver"), ...screen.getAllByTestId("timer-cancel")];
    for (const button of buttons) {
      expect(button).toHaveProperty("disabled", true);
      expect(button.getAttribute("title")).toMatch(why);
      await user.click(button);
    }
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(fake.calls.filter((c) => /timer_(deliver|cancel)/.test(c.command))).toEqual([]);
  });

  it("delivers the confirmed timer now and says it was delivered", async () => {
    const fake = studio().on("timer_deliver", () => ({ timer: timer("t-soon"), delivered: true }));
    const { user } = renderWithStudio(<TimerTable />, { studio: fake, connection: connectionInfo({ read_only: false }) });
    const rows = await screen.findAllByTestId("timer-row");
    await user.click(within(rows[1]).getByTestId("timer-deliver"));
    const dialog = screen.getByRole("dialog", { name: "Deliver timer now" });
    expect(fake.calls.filter((c) => c.command === "timer_deliver")).toEqual([]);
    await user.click(within(dialog).getByRole("button", { name: "Deliver now" }));
    expect((await screen.findByTestId("outcome")).textContent).toMatch(/Delivered 'payment-reminder' to shop\/order-1/);
    expect(fake.calls.filter((c) => c.command === "timer_deliver").map((c) => c.request)).toEqual([{ id: "t-soon" }]);
  });
});
