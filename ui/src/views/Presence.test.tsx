/** @vitest-environment jsdom */
// The Presence tab: each participant's live fields with their stamps and
// time left, grouped by participant; an empty session says no one is there.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, screen, within } from "@testing-library/react";
import type { PresenceCellView } from "../bindings";
import { setBackend } from "../commands";
import { Presence } from "./Presence";
import { FakeStudio, connectionInfo } from "../test/fakeStudio";
import { renderWithStudio } from "../test/render";

afterEach(() => {
  cleanup();
  setBackend(null);
});

function cell(participant: string, field: string, value: string, over: Partial<PresenceCellView> = {}): PresenceCellView {
  return { participant, field, value, seen: 4, at: 1_000, age_ms: 3_000, expires_at: 61_000, expires_in_ms: 57_000, ...over };
}

describe("the presence tab", () => {
  it("lists each participant's fields, named once, with age and time left", async () => {
    const studio = new FakeStudio().on("presence_list", (request) => {
      expect(request).toEqual({ contract: "shop", session: "order-3" });
      return [cell("agent-0", "typing", "true", { expires_in_ms: 5_000 }), cell("agent-0", "viewing", '"payment"'), cell("bob", "viewing", '"cart"', { age_ms: -2_000 })];
    });
    renderWithStudio(<Presence contract="shop" session="order-3" />, { studio, connection: connectionInfo({ read_only: true }) });
    const rows = await screen.findAllByTestId("presence-row");
    expect(rows.map((r) => [r.dataset.participant, r.dataset.field])).toEqual([["agent-0", "typing"], ["agent-0", "viewing"], ["bob", "viewing"]]);
    expect(screen.getByTestId("presence-count").textContent).toBe("2 participants present");
    expect(within(rows[0]).getByText("agent-0")).toBeTruthy();
    expect(within(rows[1]).queryByText("agent-0")).toBeNull();
    expect(within(rows[0]).getByText("3 s ago")).toBeTruthy();
    expect(within(rows[0]).getByText("5 s").className).toBe("warn");
    expect(within(rows[2]).getByText(/ahead \(sender's clock\)/)).toBeTruthy();
  });

  it("says so when no one is present", async () => {
    const studio = new FakeStudio().on("presence_list", () => []);
    renderWithStudio(<Presence contract="shop" session="order-2" />, { studio, connection: connectionInfo({ read_only: false }) });
    expect(await screen.findByText(/No one is present in this session/)).toBeTruthy();
  });
});
