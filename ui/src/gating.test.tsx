/** @vitest-environment jsdom */
// Action gating: on a read-only connection or a replica every action is
// disabled, says why, and sends nothing; read-write, the same actions open
// their dialogs, and a refusal by the Studio is shown with its code.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, screen, within } from "@testing-library/react";
import type { ConnectionInfo, HeadView, SessionSummary } from "./bindings";
import { setBackend } from "./commands";
import { ConsumeDialog } from "./actions";
import { DeadLetterTable } from "./views/DeadLetters";
import { Session } from "./views/Session";
import { Overview } from "./views/Overview";
import { LagHistory, LagHistoryContext } from "./lagHistory";
import { FakeStudio, connectionInfo, deadLetter, refusal } from "./test/fakeStudio";
import { renderWithStudio } from "./test/render";

afterEach(() => {
  cleanup();
  setBackend(null);
});

const READ_ONLY = connectionInfo({ read_only: true });
const REPLICA = connectionInfo({ kind: "postgres", read_only: true, replica: true, replica_delay_ms: 1_200 });
const READ_WRITE = connectionInfo({ read_only: false });

function queue(): FakeStudio {
  return new FakeStudio().on("dead_letter_list", () => ({ items: [deadLetter("o-1", "mailer", 3), deadLetter("o-2", "charger", 5)], next: null }));
}

function session(): FakeStudio {
  const summary: SessionSummary = { contract: "shop", session: "o-1", head: 9, clear_index: 0, created_at: 0, updated_at: 0, dead_letters: 1, lag: 4 };
  const head = (consumer: string, over: Partial<HeadView>): HeadView => ({
    consumer,
    kind: "log",
    lane: null,
    next_index: 6,
    session_head: 9,
    lag: 4,
    oldest_pending_age_ms: 1_000,
    attempt_count: 1,
    failure_count: 0,
    last_error: null,
    failed_at: null,
    dead: false,
    lease_holder: null,
    lease_expires_at: null,
    next_attempt_at: null,
    reason: "waiting",
    ...over,
  });
  return new FakeStudio()
    .on("session_get", () => summary)
    .on("head_list", () => [head("mailer", {}), head("charger", { dead: true, failed_at: 1_000, failure_count: 10, reason: "dead-lettered" })]);
}

/** Every button of the queue that changes the store. */
async function queueActions() {
  await screen.findAllByTestId("dead-letter-row");
  return [
    ...screen.getAllByTestId("retry-one"),
    ...screen.getAllByTestId("skip-one"),
    screen.getByTestId("retry-selected"),
    screen.getByTestId("skip-selected"),
    screen.getByTestId("retry-all"),
    screen.getByRole("button", { name: "Skip all matching…" }),
  ];
}

const sentActions = (studio: FakeStudio) => studio.calls.filter((c) => /redrive|consume|clear|pause|resume/.test(c.command));

describe.each([
  ["a read-only connection", READ_ONLY, /read-only/i],
  ["a replica", REPLICA, /replica.*primary/i],
] as [string, ConnectionInfo, RegExp][])("action gating on %s", (_, connection, why) => {
  it("disables every redrive of the dead-letter queue, says why, and sends nothing", async () => {
    const studio = queue();
    const { user } = renderWithStudio(<DeadLetterTable />, { studio, connection });
    const buttons = await queueActions();
    for (const button of buttons) {
      expect(button).toHaveProperty("disabled", true);
      expect(button.getAttribute("title")).toMatch(why);
    }
    expect(screen.getByText(why, { selector: ".gate-note" })).toBeTruthy();
    // Selecting rows does not enable them either.
    await user.click(screen.getByRole("checkbox", { name: "Select all shown" }));
    expect(screen.getByTestId("retry-selected")).toHaveProperty("disabled", true);
    for (const button of buttons) await user.click(button);
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(sentActions(studio)).toEqual([]);
  });

  it("disables pausing a consumer in the overview", async () => {
    const studio = new FakeStudio()
      .on("contract_list", () => ["shop"])
      .on("consumer_overview", () => ({ computed_at: 1_000, totals: [{ contract: "shop", consumer: "mailer", sessions: 2, lagging_sessions: 1, total_lag: 4, dead_letters: 0 }] }))
      .on("consumer_pause_list", () => [])
      .on("attempt_rates", () => []);
    renderWithStudio(
      <LagHistoryContext.Provider value={new LagHistory()}>
        <Overview />
      </LagHistoryContext.Provider>,
      { studio, connection },
    );
    const pause = await screen.findByTestId("pause");
    expect(pause).toHaveProperty("disabled", true);
    expect(pause.getAttribute("title")).toMatch(why);
  });

  it("disables clearing a session, consuming and redriving its heads", async () => {
    const studio = session();
    renderWithStudio(<Session contract="shop" session="o-1" tab="consumers" />, { studio, connection });
    await screen.findAllByTestId("head-row");
    const clear = screen.getByTestId("clear-session");
    expect(clear).toHaveProperty("disabled", true);
    expect(clear.getAttribute("title")).toMatch(why);
    const mailer = screen.getAllByTestId("head-row").find((r) => r.dataset.consumer === "mailer");
    const charger = screen.getAllByTestId("head-row").find((r) => r.dataset.consumer === "charger");
    expect(within(mailer!).getByTestId("consume")).toHaveProperty("disabled", true);
    for (const name of ["Retry", "Skip"]) expect(within(charger!).getByRole("button", { name })).toHaveProperty("disabled", true);
    // Copying only reads the session: it stays offered.
    expect(screen.getByTestId("copy-session")).toHaveProperty("disabled", false);
  });
});

describe("action gating read-write", () => {
  it("offers the same actions, each through its dialog", async () => {
    const studio = queue();
    const { user } = renderWithStudio(<DeadLetterTable />, { studio, connection: READ_WRITE });
    const [retryOne] = await queueActions();
    expect(retryOne).toHaveProperty("disabled", false);
    expect(screen.getByTestId("retry-all")).toHaveProperty("disabled", false);
    expect(document.querySelector(".gate-note")).toBeNull();
    await user.click(retryOne);
    expect(screen.getByRole("dialog", { name: "Redrive: retry" })).toBeTruthy();
    expect(sentActions(studio)).toEqual([]);
  });

  it("shows the Studio's READ_ONLY refusal when it refuses all the same", async () => {
    const studio = queue().on("dead_letter_redrive", () => {
      throw refusal("READ_ONLY", "this store is attached read-only");
    });
    const { user } = renderWithStudio(<DeadLetterTable />, { studio, connection: READ_WRITE });
    const [retryOne] = await queueActions();
    await user.click(retryOne);
    await user.click(screen.getByRole("button", { name: "Retry 1" }));
    const alert = await within(screen.getByRole("dialog")).findByRole("alert");
    expect(alert.textContent).toContain("READ_ONLY");
    expect(within(screen.getByRole("dialog")).queryByTestId("outcome")).toBeNull();
  });

  it("offers running a consumer's own code only where this app hosts it", async () => {
    const studio = new FakeStudio().on("consume_preview", () => ({ events: 3, from_index: 6, through_index: 9 }));
    const dialog = <ConsumeDialog contract="shop" session="o-1" consumer="mailer" head={9} onClose={() => {}} />;
    const runOption = () => within(screen.getByTestId("consume-mode")).getByRole<HTMLOptionElement>("option", { name: /^run/ });

    renderWithStudio(dialog, { studio, connection: READ_WRITE });
    await screen.findByTestId("consume-preview");
    expect(screen.getByTestId<HTMLSelectElement>("consume-mode").value).toBe("ack");
    expect(runOption().disabled).toBe(true);
    cleanup();

    renderWithStudio(dialog, { studio, connection: connectionInfo({ read_only: false, hosts_demo: true }) });
    await screen.findByTestId("consume-preview");
    expect(screen.getByTestId<HTMLSelectElement>("consume-mode").value).toBe("run");
    expect(runOption().disabled).toBe(false);
  });
});
