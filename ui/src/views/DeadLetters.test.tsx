/** @vitest-environment jsdom */
// Dead-letter selection: what is ticked is exactly what a redrive sends —
// some rows, all shown, none — and a redrive clears the selection and
// refreshes the queue.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, screen, waitFor, within } from "@testing-library/react";
import type { DeadLetterQuery, DeadLetterRef, RedriveMany, Redrive } from "../bindings";
import { setBackend } from "../commands";
import { DeadLetterTable } from "./DeadLetters";
import { FakeStudio, connectionInfo, deadLetter } from "../test/fakeStudio";
import { renderWithStudio } from "../test/render";

afterEach(() => {
  cleanup();
  setBackend(null);
});

const LETTERS = [deadLetter("o-1", "mailer", 3, { lane: "main" }), deadLetter("o-2", "charger", 5), deadLetter("o-3", "mailer", 8)];
const ref = (session: string, consumer: string, index: number): DeadLetterRef => ({ contract: "shop", session, consumer, index });

function studio(): FakeStudio {
  return new FakeStudio()
    .on("dead_letter_list", (request) => {
      const consumer = (request as DeadLetterQuery).consumer;
      return { items: LETTERS.filter((d) => !consumer || d.consumer === consumer), next: null };
    })
    .on("dead_letter_redrive", () => ({ redriven: true }))
    .on("dead_letter_redrive_many", (request) => ({ done: (request as RedriveMany).targets.length, total: (request as RedriveMany).targets.length, failed: 0 }));
}

async function show(fake = studio()) {
  const rendered = renderWithStudio(<DeadLetterTable />, { studio: fake, connection: connectionInfo({ read_only: false }) });
  await screen.findAllByTestId("dead-letter-row");
  return { ...rendered, fake };
}

const tick = (session: string, consumer: string, index: number) => screen.getByRole("checkbox", { name: `Select ${session} ${consumer} ${index}` });
const selectAll = () => screen.getByRole<HTMLInputElement>("checkbox", { name: "Select all shown" });
const retrySelected = () => screen.getByTestId("retry-selected");
const ticked = () => screen.getAllByRole<HTMLInputElement>("checkbox", { name: /^Select o-/ }).filter((c) => c.checked).map((c) => c.getAttribute("aria-label"));

describe("dead-letter selection", () => {
  it("starts empty: nothing to redrive until rows are ticked", async () => {
    await show();
    expect(ticked()).toEqual([]);
    expect(retrySelected().textContent).toBe("Retry selected (0)");
    expect(retrySelected()).toHaveProperty("disabled", true);
    expect(retrySelected().getAttribute("title")).toBe("Select dead letters first.");
    expect(screen.getByTestId("skip-selected")).toHaveProperty("disabled", true);
  });

  it("sends exactly the ticked rows, by contract, session, consumer and index", async () => {
    const { user, fake } = await show();
    await user.click(tick("o-1", "mailer", 3));
    await user.click(tick("o-3", "mailer", 8));
    expect(retrySelected().textContent).toBe("Retry selected (2)");
    expect(selectAll().checked).toBe(false);
    await user.click(retrySelected());
    const dialog = screen.getByRole("dialog", { name: "Redrive: retry" });
    expect(fake.sent("dead_letter_redrive_many")).toEqual([]);
    await user.click(within(dialog).getByRole("button", { name: "Retry 2" }));
    await within(dialog).findByTestId("outcome");
    expect(fake.sent("dead_letter_redrive_many")).toEqual([{ targets: [ref("o-1", "mailer", 3), ref("o-3", "mailer", 8)], action: "retry" } satisfies RedriveMany]);
    expect(fake.sent("dead_letter_redrive")).toEqual([]);
  });

  it("one ticked row is redriven on its own", async () => {
    const { user, fake } = await show();
    await user.click(tick("o-2", "charger", 5));
    await user.click(screen.getByTestId("skip-selected"));
    await user.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Skip 1" }));
    await screen.findByTestId("outcome");
    expect(fake.sent("dead_letter_redrive")).toEqual([{ target: ref("o-2", "charger", 5), action: "skip" } satisfies Redrive]);
  });

  it("selects all shown, and clears them all", async () => {
    const { user, fake } = await show();
    await user.click(selectAll());
    expect(ticked()).toHaveLength(3);
    expect(selectAll().checked).toBe(true);
    expect(retrySelected().textContent).toBe("Retry selected (3)");

    await user.click(tick("o-2", "charger", 5));
    expect(selectAll().checked).toBe(false);
    expect(retrySelected().textContent).toBe("Retry selected (2)");

    await user.click(selectAll());
    expect(ticked()).toHaveLength(3);
    await user.click(selectAll());
    expect(ticked()).toEqual([]);
    expect(retrySelected()).toHaveProperty("disabled", true);

    await user.click(selectAll());
    await user.click(screen.getByTestId("skip-selected"));
    await user.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Skip 3" }));
    await screen.findByTestId("outcome");
    expect(fake.sent("dead_letter_redrive_many")).toEqual([
      { targets: [ref("o-1", "mailer", 3), ref("o-2", "charger", 5), ref("o-3", "mailer", 8)], action: "skip" } satisfies RedriveMany,
    ]);
  });

  it("sends none of the ticked rows a filter hides", async () => {
    const { user, fake } = await show();
    await user.click(tick("o-1", "mailer", 3));
    await user.click(tick("o-2", "charger", 5));
    await user.type(screen.getByRole("textbox", { name: "Filter by consumer" }), "mailer");
    await waitFor(() => expect(screen.getAllByTestId("dead-letter-row")).toHaveLength(2));
    expect(retrySelected().textContent).toBe("Retry selected (1)");
    await user.click(retrySelected());
    await user.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Retry 1" }));
    await screen.findByTestId("outcome");
    expect(fake.sent("dead_letter_redrive")).toEqual([{ target: ref("o-1", "mailer", 3), action: "retry" }]);
    expect(fake.sent("dead_letter_redrive_many")).toEqual([]);
  });

  it("after a redrive, clears the selection and reads the queue again", async () => {
    const { user, fake } = await show();
    await user.click(selectAll());
    await user.click(retrySelected());
    await user.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Retry 3" }));
    await screen.findByTestId("outcome");
    const reads = fake.sent("dead_letter_list").length;
    await user.click(screen.getByRole("button", { name: "Close" }));
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(ticked()).toEqual([]);
    expect(retrySelected().textContent).toBe("Retry selected (0)");
    await waitFor(() => expect(fake.sent("dead_letter_list").length).toBeGreaterThan(reads));
  });

  it("keeps the selection when the dialog is cancelled", async () => {
    const { user, fake } = await show();
    await user.click(tick("o-3", "mailer", 8));
    await user.click(retrySelected());
    await user.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Cancel" }));
    expect(ticked()).toEqual(["Select o-3 mailer 8"]);
    expect(fake.sent("dead_letter_redrive")).toEqual([]);
  });
});

describe("dead-letter groups read with a bound", () => {
  const group = (cause: string, count: number, partial: boolean) => ({
    contract: "shop",
    consumer: "mailer",
    cause,
    count,
    first_failed_at: 1_700_000_000_000,
    last_failed_at: 1_700_000_100_000,
    sample_error: cause,
    sample: { session: "o-1", consumer: "mailer", lane: null, index: 3 },
    partial,
  });

  it("says a count is a lower bound when the grouping stopped at its bound", async () => {
    const fake = studio().on("dead_letter_groups", () => [group("smtp <n> refused", 9_000, true), group("timeout", 1_000, true)]);
    const { user } = await show(fake);
    await user.click(screen.getByTestId("group-by-cause"));
    const rows = await screen.findAllByTestId("dead-letter-group");
    expect(rows.map((r) => within(r).getAllByRole("cell")[1].textContent)).toEqual(["≥ 9000", "≥ 1000"]);
    expect(screen.getByTestId("groups-partial").textContent).toMatch(/bounded read.*at\s+least/s);
  });

  it("gives exact counts plainly", async () => {
    const fake = studio().on("dead_letter_groups", () => [group("timeout", 3, false)]);
    const { user } = await show(fake);
    await user.click(screen.getByTestId("group-by-cause"));
    const [row] = await screen.findAllByTestId("dead-letter-group");
    expect(within(row).getAllByRole("cell")[1].textContent).toBe("3");
    expect(screen.queryByTestId("groups-partial")).toBeNull();
  });
});
