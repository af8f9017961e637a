// Browser end-to-end of the Studio's web mode, in Debian's Chromium.
//   node e2e/browser.mjs <url printed by `a2 serve`> <rw|ro>
// rw: open a dead letter (payload, attempt history), a session's timeline
// (zoom, open a failed attempt), redrive one with skip and one with retry
// (each leaves the list and appears in the audit), retry a group of the queue
// grouped by cause, the rest as a bulk job, consume a lagging consumer
// through an index, clear a session.
// ro: every action is disabled in the UI and refused by the HTTP API, and
// the store is unchanged; then a session is copied into a SQLite file and
// the copy opened.
// ops (against `a2 serve --demo-traffic`): a payload search from the palette,
// a session's events filtered by a payload path; pause a consumer from the
// overview (its lag grows while traffic flows), resume it (the lag drains);
// open Timers (the serving process runs the demo contract), deliver a payment
// reminder now and find its event in the session and the delivery in the audit.
// Exits non-zero on the first failed expectation.
import { chromium } from "playwright-core";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, mode] = process.argv.slice(2);
if (!url || !["rw", "ro", "ops"].includes(mode)) {
  console.error("usage: node e2e/browser.mjs <url> <rw|ro|ops>");
  process.exit(2);
}
const base = `${new URL(url).origin}/`;
const step = (text) => console.log(`[browser ${mode}] ${text}`);

const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "a2-chromium-")), {
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  viewport: { width: 1400, height: 900 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
context.setDefaultTimeout(15_000);
const page = context.pages()[0] ?? (await context.newPage());
const pageErrors = [];
page.on("pageerror", (e) => pageErrors.push(e.message));
// The printed link's one-time code: the page trades it for the Studio's token, kept in this origin's storage
// for every later page and tab, which are opened from the origin.
await page.goto(url);
await page.waitForFunction(() => Boolean(localStorage.getItem("a2.token")));
expect(new URL(page.url()).search === "", `the code left the address bar: ${page.url()}`);

function expect(condition, message) {
  if (!condition) throw new Error(`expected: ${message}`);
}

// A page load each time (a query of its own: a change of hash alone would keep the page and its cached reads).
let loads = 0;
async function open(hash) {
  loads += 1;
  await page.goto(`${base}?load=${loads}${hash}`);
}

const rows = () => page.locator("[data-testid=dead-letter-row]");
async function rowKeys() {
  return rows().evaluateAll((trs) => trs.map((tr) => `${tr.dataset.session}/${tr.dataset.consumer}/${tr.dataset.index}`));
}
async function api(command, request) {
  return page.evaluate(
    async ([command, request]) => {
      const response = await fetch(`/api/${command}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-a2-token": localStorage.getItem("a2.token") ?? "" },
        body: JSON.stringify({ request }),
      });
      return { status: response.status, body: await response.json() };
    },
    [command, request],
  );
}

async function redriveFirst(action) {
  const row = rows().first();
  const key = `${await row.getAttribute("data-session")}/${await row.getAttribute("data-consumer")}/${await row.getAttribute("data-index")}`;
  await row.getByTestId(action === "skip" ? "skip-one" : "retry-one").click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("button", { name: action === "skip" ? "Skip 1" : "Retry 1" }).click();
  await dialog.getByTestId("outcome").waitFor();
  const outcome = await dialog.getByTestId("outcome").textContent();
  expect(/Redriven/.test(outcome ?? ""), `the ${action} outcome says redriven: ${outcome}`);
  await dialog.getByRole("button", { name: "Close" }).click();
  await page.waitForFunction((k) => ![...document.querySelectorAll("[data-testid=dead-letter-row]")].some((tr) => `${tr.dataset.session}/${tr.dataset.consumer}/${tr.dataset.index}` === k), key);
  step(`${action}: ${key} left the list`);
  return key;
}

/** The overview's total lag of one consumer, as shown. */
async function lagOf(consumer) {
  const cell = page.locator(`[data-testid=consumer-row][data-consumer=${consumer}] [data-testid=total-lag]`);
  return Number(await cell.getAttribute("data-lag"));
}

/** Wait (totals refresh every few seconds) until the shown lag of `consumer` passes `test`. */
async function lagUntil(consumer, test, what) {
  for (let i = 0; i < 60; i++) {
    const lag = await lagOf(consumer);
    if (test(lag)) return lag;
    await page.waitForTimeout(1_000);
  }
  throw new Error(`expected: ${what} (lag now ${await lagOf(consumer)})`);
}

async function pauseAndResume() {
  await open("#/");
  const row = page.locator("[data-testid=consumer-row][data-consumer=mailer]");
  await row.waitFor();
  await row.getByTestId("pause").click();
  const dialog = page.getByRole("dialog");
  await dialog.getByTestId("pause-reason").fill("e2e: mail provider down");
  await dialog.getByRole("button", { name: "Pause", exact: true }).click();
  await dialog.getByTestId("outcome").waitFor();
  await dialog.getByRole("button", { name: "Close" }).click();
  await row.getByTestId("paused-note").waitFor();
  const note = (await row.getByTestId("paused-note").textContent()) ?? "";
  expect(/paused by .+: e2e: mail provider down/.test(note), `the row says who paused it and why: ${note}`);
  const atPause = await lagOf("mailer");
  step(`paused mailer at lag ${atPause}: ${note}`);
  await page.screenshot({ path: process.env.A2_SCREENSHOT_DIR ? join(process.env.A2_SCREENSHOT_DIR, "consumer-paused.png") : join(tmpdir(), "consumer-paused.png") });
  const peak = await lagUntil("mailer", (lag) => lag >= atPause + 3, "mailer's lag grows while it is paused");
  step(`lag grew to ${peak} while paused`);
  const paused = (await api("consumer_pause_list", { contract: "shop" })).body;
  expect(paused.length === 1 && paused[0].consumer === "mailer", `the store lists the pause: ${JSON.stringify(paused)}`);

  await row.getByTestId("resume").click();
  await dialog.getByRole("button", { name: "Resume", exact: true }).click();
  await dialog.getByTestId("outcome").waitFor();
  await dialog.getByRole("button", { name: "Close" }).click();
  await row.getByTestId("pause").waitFor();
  const drained = await lagUntil("mailer", (lag) => lag < peak - 2, "mailer drains after it is resumed");
  step(`resumed: lag drained from ${peak} to ${drained}`);
  await open("#/audit");
  await page.getByTestId("audit-row").first().waitFor();
  const audit = (await page.getByTestId("audit-table").textContent()) ?? "";
  expect(audit.includes("pause") && audit.includes("resume"), "the audit lists the pause and the resume");
}

/** The palette starts a payload search; it finds the demo's sessions of a customer; one opens, and its events filter. */
async function searchPayloads() {
  await open("#/");
  await page.getByTestId("consumer-row").first().waitFor();
  await page.keyboard.press("Control+k");
  const palette = page.getByRole("dialog", { name: "Command palette" });
  await palette.locator("input").fill('{"customer": "customer-3"}');
  await palette.locator("input").press("Enter");
  await page.waitForFunction(() => / — complete$/.test(document.querySelector("[data-testid=search-progress]")?.textContent ?? ""));
  const progress = (await page.getByTestId("search-progress").textContent()) ?? "";
  const sessions = await page.getByTestId("search-hit").evaluateAll((rows) => rows.map((r) => r.dataset.session));
  expect(sessions.includes("order-00003") && sessions.includes("order-00020"), `the search finds customer-3's sessions: ${sessions}`);
  step(`payload search: ${progress.trim()}: ${sessions.join(", ")}`);
  await page.screenshot({ path: join(process.env.A2_SCREENSHOT_DIR ?? tmpdir(), "search.png") });
  await page.locator("[data-testid=search-hit][data-session=order-00003] a").click();
  await page.getByTestId("event-list").waitFor();
  await page.getByTestId("filter-path").fill('$.customer = "customer-3"');
  await page.getByTestId("filter-type").fill("order.placed");
  await page.getByTestId("filter-type").press("Enter");
  await page.getByTestId("filter-matches").waitFor();
  const status = (await page.getByTestId("filter-status").textContent()) ?? "";
  expect(/^[1-9]\d* match/.test(status), `the session's events filter by path: ${status}`);
  step(`filtered order-00003's events: ${status}`);
}

try {
  if (mode === "ops") {
    await searchPayloads();
    await pauseAndResume();
    await deliverTimerNow();
    await presenceTab();
    await whoServes();
  }
  else await deadLettersAndActions();
  expect(pageErrors.length === 0, `no page errors: ${pageErrors.join("; ")}`);
  step("passed");
} catch (error) {
  const shot = join(tmpdir(), `a2-browser-failure-${mode}-${Date.now()}.png`);
  await page.screenshot({ path: shot }).catch(() => {});
  console.error(`[browser ${mode}] FAILED: ${error.message} (screenshot: ${shot})`);
  process.exitCode = 1;
} finally {
  await context.close();
}

/** rw and ro: the dead-letter queue, a session's actions, the audit; or that read-only refuses them all. */
async function deadLettersAndActions() {
  await open("#/dead-letters");
  await rows().first().waitFor();
  const before = await rowKeys();
  expect(before.length >= 2, `at least two dead letters to work on, found ${before.length}`);
  step(`${before.length} dead letters listed`);

  if (mode === "rw") {
    // Open a dead letter.
    await rows().first().getByTestId("open-dead-letter").click();
    const detail = page.getByTestId("dead-letter-detail");
    await detail.waitFor();
    expect(/poison|refused/.test((await detail.textContent()) ?? ""), "the dead letter shows its error");
    await page.getByTestId("dead-letter-payload").locator(".json, pre, code, span").first().waitFor();
    const history = page.getByTestId("attempt-list").getByTestId("attempt-row");
    await history.first().waitFor();
    const outcomes = await history.evaluateAll((trs) => trs.map((tr) => tr.dataset.outcome));
    expect(outcomes.length >= 10 && outcomes[0] === "failed", `the dead letter's attempt history, newest first: ${outcomes}`);
    step(`opened a dead letter: payload shown, ${outcomes.length} attempts in its history`);
    const deadSession = await rows().first().getAttribute("data-session");
    await showGroupsByCause();
    await timeline(deadSession);
    await open("#/dead-letters");
    await rows().first().waitFor();

    const skipped = await redriveFirst("skip");
    const retried = await redriveFirst("retry");
    await open("#/dead-letters");
    await rows().first().waitFor();
    await retryGroupByCause();

    // Everything still dead, as a job with a progress bar.
    const left = (await rowKeys()).length;
    await page.getByTestId("retry-all").click();
    await page.getByRole("dialog").getByRole("button", { name: "Start job" }).click();
    await page.waitForFunction(() => / — finished$/.test(document.querySelector("[data-testid=job-status]")?.textContent ?? ""));
    const status = (await page.getByTestId("job-status").textContent()) ?? "";
    expect(status.startsWith(`${left} of ${left} done`), `the job redrove all ${left} left: ${status}`);
    await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=dead-letter-row]").length === 0);
    step(`bulk retry job: ${status}`);

    // The audit log has them all.
    await open("#/audit");
    await page.getByTestId("audit-row").first().waitFor();
    const audit = (await page.getByTestId("audit-table").textContent()) ?? "";
    expect(audit.includes("redrive.skip") && audit.includes("redrive.retry") && audit.includes("redrive.all.retry"), "the audit lists the skip, the retry and the job");
    const [skipSession] = skipped.split("/");
    const [retrySession] = retried.split("/");
    expect(audit.includes(skipSession) && audit.includes(retrySession), "the audit names the sessions");
    step("audit entries appeared");

    // A session's heads and lag; consume the lagging mailer through its head.
    await open("#/sessions/shop");
    await page.getByRole("link", { name: "order-00007", exact: true }).click();
    await page.getByRole("tab", { name: "Consumers" }).click();
    const mailer = page.locator("[data-testid=head-row][data-consumer=mailer]");
    await mailer.waitFor();
    const lag = (await mailer.getByTestId("head-lag").textContent()) ?? "";
    expect(/behind/.test(lag), `mailer lags in order-00007: ${lag}`);
    expect(((await mailer.getByTestId("head-reason").textContent()) ?? "").length > 0, "the head says why it is not moving");
    await mailer.getByTestId("open-attempts").click();
    await page.getByTestId("attempt-list").waitFor();
    await mailer.getByTestId("open-attempts").click();
    step(`order-00007 heads shown, mailer ${lag}`);
    await mailer.getByTestId("consume").click();
    const dialog = page.getByRole("dialog");
    await dialog.getByTestId("consume-mode").selectOption("ack");
    await dialog.getByTestId("consume-preview").waitFor();
    const preview = (await dialog.getByTestId("consume-preview").textContent()) ?? "";
    expect(/\d+\s*events from index/.test(preview), `the consume previews its events: ${preview}`);
    await dialog.getByRole("button", { name: /^Consume \d+ events$/ }).click();
    await dialog.getByTestId("outcome").waitFor();
    await dialog.getByRole("button", { name: "Close" }).click();
    await page.waitForFunction(() => document.querySelector("[data-testid=head-row][data-consumer=mailer] [data-testid=head-lag]")?.textContent === "caught up");
    step("consumed mailer through the head: caught up");

    // Clear the session through the head it shows.
    const head = Number(await page.getByTestId("session-head").textContent());
    await page.getByTestId("clear-session").click();
    await page.getByRole("dialog").getByRole("button", { name: `Clear through ${head}` }).click();
    await page.getByRole("dialog").getByTestId("outcome").waitFor();
    const cleared = (await page.getByRole("dialog").getByTestId("outcome").textContent()) ?? "";
    expect(cleared.startsWith("Cleared"), `the clear outcome: ${cleared}`);
    await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    await page.waitForFunction((h) => document.querySelector("[data-testid=session-summary]")?.textContent?.includes(`cleared through ${h}`), head);
    step(`cleared order-00007 through ${head}`);
    const attached = (await api("connection_get", {})).body;
    if (attached.kind === "postgres") {
      // Writing to Postgres is a step of its own: from the connect screen, asking
      // read-write opens it read-only and names the database, host and server first.
      await page.getByRole("button", { name: "Disconnect" }).click();
      await page.getByRole("button", { name: "Postgres", exact: true }).click();
      await page.getByTestId("postgres-url").fill(attached.url);
      const roSwitch = page.getByTestId("read-only-switch");
      await page.waitForFunction(() => document.querySelector("[data-testid=read-only-switch]")?.checked === true);
      await roSwitch.uncheck();
      await page.getByTestId("connect").click();
      const confirm = page.getByTestId("confirm-read-write");
      await confirm.waitFor();
      const named = (await confirm.textContent()) ?? "";
      const server = attached.server;
      expect(named.includes(server.database) && named.includes(server.host) && named.includes(server.version), `the step names what it writes to: ${named}`);
      await page.getByTestId("confirm-read-write-yes").click();
      await page.locator(".badge.rw").waitFor();
      step(`read-write confirmed by name: ${named.trim()}`);
    }
  } else {
    await page.getByTestId("read-only-badge").waitFor();
    const connection = (await api("connection_get", {})).body;
    if (connection.kind === "postgres" && connection.role_can_write) {
        // The test role could write: the Studio must say read-only rests on the session setting.
        await page.getByTestId("role-warning").waitFor();
        step("the role-could-write warning is shown");
    }
    for (const id of ["retry-one", "skip-one", "retry-all"]) {
      expect(await page.getByTestId(id).first().isDisabled(), `${id} is disabled read-only`);
    }
    step("actions disabled in the dead-letter queue");
    await open("#/session/shop/order-00007/consumers");
    await page.getByTestId("session-summary").waitFor();
    expect(await page.getByTestId("clear-session").isDisabled(), "clear is disabled read-only");
    const consume = page.locator("[data-testid=head-row][data-consumer=mailer]").getByTestId("consume");
    expect(await consume.isDisabled(), "consume is disabled read-only");
    step("session actions disabled");

    const [session, consumer, index] = before[0].split("/");
    const target = { contract: "shop", session, consumer, index: Number(index) };
    const refusals = [
      await api("dead_letter_redrive", { target, action: "skip" }),
      await api("dead_letter_redrive_many", { targets: [target], action: "retry" }),
      await api("job_redrive_all", { contract: null, consumer: null, action: "skip", stop_at: null, rate: null }),
      await api("session_clear", { contract: "shop", session: "order-00007", if_last_index: null }),
      await api("session_consume", { contract: "shop", session: "order-00007", consumer: "mailer", through: null, mode: "ack", export_path: null }),
      await api("demo_traffic", { on: true }),
      await api("timer_deliver", { id: "any" }),
      await api("timer_cancel", { id: "any" }),
    ];
    for (const r of refusals) expect(r.status === 403 && r.body.code === "READ_ONLY", `the API refuses with READ_ONLY: ${JSON.stringify(r)}`);
    step("the HTTP API refused every action with READ_ONLY");
    // `a2 serve --read-only` is a ceiling: the page cannot reopen its store read-write.
    const raise = await api("connection_open", { url: connection.url, profile: null, read_only: false });
    expect(raise.status === 403 && raise.body.code === "READ_ONLY", `read-write refused under the ceiling: ${JSON.stringify(raise)}`);
    expect(connection.locked_read_only, "the connection says it is locked read-only");
    if (connection.kind === "postgres") {
      const tls = (await page.getByTestId("tls-badge").textContent()) ?? "";
      // sslmode=prefer to this machine: encrypted when the server offers TLS, never verified.
      expect(tls === "TLS off" || tls === "TLS unverified", `the TLS badge tells this machine's Postgres: ${tls}`);
    }
    expect(!page.url().includes("token=") && !page.url().includes("code="), `no token or code in the address bar: ${page.url()}`);
    step("read-only is a ceiling; TLS state and token handling as expected");
    await open("#/dead-letters");
    await rows().first().waitFor();
    const after = await rowKeys();
    expect(JSON.stringify(after) === JSON.stringify(before), "the dead letters are unchanged");
    step("store unchanged");
    await copyHome(connection);
  }
}

/** ops: the Timers view lists the demo's reminders; one delivered now appears in its session. */
async function deliverTimerNow() {
  await open("#/session/shop/order-00003/timeline");
  const pendingMarks = page.locator("[data-testid=timer-mark][data-state=pending][data-name=payment-reminder]");
  await pendingMarks.first().waitFor();
  const pendingBefore = await pendingMarks.count();
  step(`order-00003's Timeline marks its ${pendingBefore} pending payment reminders`);
  await open("#/timers");
  const timerRows = page.getByTestId("timer-row");
  await timerRows.first().waitFor();
  const count = await timerRows.count();
  // order-00000 was cleared by the seed: a reminder there is delivered as a no-op.
  const row = page.locator("[data-testid=timer-row]", { hasText: "order-00003" }).first();
  const id = await row.getAttribute("data-timer");
  expect(((await row.textContent()) ?? "").includes("payment-reminder"), "the demo's payment reminder is listed");
  await row.getByTestId("timer-deliver").click();
  const dialog = page.getByRole("dialog", { name: "Deliver timer now" });
  await dialog.getByRole("button", { name: "Deliver now" }).click();
  await dialog.getByTestId("outcome").waitFor();
  const outcome = (await dialog.getByTestId("outcome").textContent()) ?? "";
  expect(outcome.startsWith("Delivered 'payment-reminder' to shop/order-00003"), `the deliver outcome: ${outcome}`);
  await dialog.getByRole("button", { name: "Close" }).click();
  await page.waitForFunction((t) => !document.querySelector(`[data-testid=timer-row][data-timer="${t}"]`), id);
  step(`${count} timers listed; delivered ${id} now`);
  await open("#/session/shop/order-00003/timeline");
  const delivered = page.locator("[data-testid=timer-mark][data-state=delivered][data-name=payment-reminder]");
  await delivered.waitFor();
  await page.waitForFunction(
    (n) => document.querySelectorAll("[data-testid=timer-mark][data-state=pending][data-name=payment-reminder]").length === n,
    pendingBefore - 1,
  );
  await delivered.dispatchEvent("click");
  await page.getByTestId("scheduled-by").waitFor();
  expect(((await page.getByTestId("scheduled-by").textContent()) ?? "").includes("payment-reminder"), "the event names the timer that appended it");
  await page.locator(".event-row.selected .type", { hasText: "payment.reminder" }).waitFor();
  await open("#/audit");
  await page.getByTestId("audit-row").first().waitFor();
  expect(((await page.getByTestId("audit-table").textContent()) ?? "").includes("timer.deliver"), "the audit lists the delivery");
  step("the Timeline marks it delivered and links to its payment.reminder event in order-00003; the audit says who delivered it");
}

/** ops: the demo traffic's server registered itself: the Processes view lists it live with its consumers, and the overview lists every consumer it declares (fulfilment too) as served by it. */
async function whoServes() {
  await open("#/processes");
  const live = page.locator("[data-testid=process-row][data-live=true]").first();
  await live.waitFor();
  const text = (await live.textContent()) ?? "";
  expect(text.includes("shop") && text.includes("fulfilment") && text.includes("live"), `a live shop process with its consumers: ${text}`);
  expect(text.includes("leads upkeep"), `the only shop process leads its upkeep: ${text}`);
  await live.click();
  await page.getByTestId("process-heads").waitFor();
  await open("#/overview");
  const fulfilment = page.locator("[data-testid=consumer-row][data-consumer=fulfilment]");
  await fulfilment.waitFor();
  const served = (await fulfilment.getByTestId("served-by").textContent()) ?? "";
  await page.waitForFunction(() =>
    /this minute|min ago/.test(document.querySelector("[data-testid=consumer-row][data-consumer=fulfilment] [data-testid=last-completion]")?.textContent ?? ""),
  );
  expect(/^\d+ process(es)?$/.test(served.trim()), `fulfilment is served: ${served}`);
  step(`the Processes view lists ${text.slice(0, 60)}…; the overview says fulfilment is served by ${served}`);
}

/** ops: the overview counts sessions with someone present; order-00003's Presence tab shows its agent live. */
async function presenceTab() {
  await open("#/overview");
  const count = page.getByTestId("contract-presence").first();
  await count.waitFor();
  const counted = (await count.textContent()) ?? "";
  expect(/[1-9]\d* with presence/.test(counted), `the overview counts sessions with presence: ${counted}`);
  await open("#/session/shop/order-00003/presence");
  await page.locator("[data-testid=presence-row][data-participant=agent-0][data-field=viewing]").waitFor();
  // The demo traffic has agents follow orders too: at least the seeded agent's two fields.
  const rows = await page.getByTestId("presence-row").count();
  expect(rows >= 2, `agent-0's viewing and typing fields: ${rows} rows`);
  await open("#/session/shop/order-00000/presence");
  await page.getByText("No one is present in this session").waitFor();
  step(`the overview says shop has ${counted.replace(/^\W+/, "")}; order-00003's Presence tab shows ${rows} fields, agent-0's among them; order-00000 (which the traffic never touches) has no one`);
}

/** A session's causality waterfall: bars by outcome; a failed one opens with its error; the wheel zooms. */
async function timeline(session) {
  await open(`#/session/shop/${encodeURIComponent(session)}/timeline`);
  const chart = page.getByTestId("causality-waterfall");
  await chart.waitFor();
  const outcomes = await chart.getByTestId("attempt-bar").evaluateAll((bars) => [...new Set(bars.map((b) => b.dataset.outcome))]);
  expect(outcomes.includes("failed") && outcomes.includes("completed"), `the timeline draws failed and completed attempts: ${outcomes}`);
  const axis = async () => page.locator(".timeline-axis .tick-label").allTextContents();
  const before = await axis();
  const box = await chart.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + 5);
  await page.mouse.wheel(0, -600);
  await page.waitForFunction((b) => JSON.stringify([...document.querySelectorAll(".timeline-axis .tick-label")].map((t) => t.textContent)) !== b, JSON.stringify(before));
  step(`zoomed the timeline: axis ${before[1]} → ${(await axis())[1]}`);
  await page.getByRole("button", { name: "Fit" }).click();
  // Dispatched, not a pointer click: at the fitted zoom a thin bar may lie under its neighbour.
  await chart.locator("[data-testid=attempt-bar][data-outcome=failed]").last().dispatchEvent("click");
  const detail = page.getByTestId("attempt-detail");
  await detail.waitFor();
  const error = (await detail.getByTestId("attempt-error").textContent()) ?? "";
  expect(/poison|timeout/.test(error), `the attempt shows its error: ${error}`);
  expect((await detail.getByTestId("attempt-outcome").textContent()) === "failed", "the opened attempt is the failed one");
  await chart.locator("[data-testid=attempt-bar][data-outcome=failed]").last().hover({ force: true });
  step(`timeline of ${session}: ${outcomes.join(", ")}; a failed attempt opened: ${error.split("\n")[0]}`);
  await page.screenshot({ path: join(process.env.A2_SCREENSHOT_DIR ?? tmpdir(), "timeline.png") });
}

/** The groups as listed: consumer, count and cause of each. */
async function groupsListed() {
  const groups = page.getByTestId("dead-letter-group");
  await groups.first().waitFor();
  return groups.evaluateAll((trs) => trs.map((tr) => ({ consumer: tr.dataset.consumer, count: Number(tr.dataset.count), cause: tr.querySelector("code")?.textContent })));
}

/** The queue grouped by cause counts every dead letter; a group opens as the list filtered to it. */
async function showGroupsByCause() {
  await page.getByTestId("group-by-cause").check();
  const listed = await groupsListed();
  const total = listed.reduce((n, g) => n + g.count, 0);
  const all = (await api("dead_letter_list", { contract: null, session: null, consumer: null, cause: null, after: null, limit: 500 })).body.items;
  expect(total === all.length, `the groups count every dead letter (${total} of ${all.length})`);
  step(`grouped by cause: ${listed.map((g) => `${g.consumer} ×${g.count} “${g.cause}”`).join("; ")}`);
  await page.screenshot({ path: join(process.env.A2_SCREENSHOT_DIR ?? tmpdir(), "dead-letter-groups.png") });
  await page.getByTestId("dead-letter-group").first().getByTestId("show-group").click();
  await page.getByTestId("cause-filter").waitFor();
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=dead-letter-row]").length === n, listed[0].count);
  const consumers = await rows().evaluateAll((trs) => [...new Set(trs.map((tr) => tr.dataset.consumer))]);
  expect(consumers.length === 1 && consumers[0] === listed[0].consumer, `the group's list is its consumer's: ${consumers}`);
  step(`opened group ${listed[0].consumer}: ${listed[0].count} dead letters`);
  await page.getByRole("button", { name: "Clear the cause filter" }).click();
}

/** The smallest group retried as one job leaves the grouped queue; the others stay. */
async function retryGroupByCause() {
  await page.getByTestId("group-by-cause").check();
  const groups = page.getByTestId("dead-letter-group");
  const listed = await groupsListed();
  const smallest = listed.reduce((best, g, i) => (g.count < listed[best].count ? i : best), 0);
  const group = listed[smallest];
  await groups.nth(smallest).getByTestId("retry-group").click();
  const dialog = page.getByRole("dialog");
  expect(((await dialog.textContent()) ?? "").includes(group.cause), "the job names the cause it redrives");
  await dialog.getByRole("button", { name: "Start job" }).click();
  await page.waitForFunction(() => / — finished$/.test(document.querySelector("[data-testid=job-status]")?.textContent ?? ""));
  const status = (await page.getByTestId("job-status").textContent()) ?? "";
  expect(status.startsWith(`${group.count} of ${group.count} done`), `the job retried the group's ${group.count}: ${status}`);
  await dialog.getByRole("button", { name: "Close" }).click();
  await page.waitForFunction(
    (g) => ![...document.querySelectorAll("[data-testid=dead-letter-group]")].some((tr) => tr.dataset.consumer === g.consumer && tr.querySelector("code")?.textContent === g.cause),
    group,
  );
  const left = await groups.count();
  expect(left === listed.length - 1, `the other groups stay: ${left} of ${listed.length}`);
  step(`retried group ${group.consumer} “${group.cause}” as one job: ${status}`);
  await page.getByTestId("group-by-cause").uncheck();
}

/** Read-only still copies: a session into a SQLite file beside the server, then open the copy. */
async function copyHome(source) {
  await open("#/session/shop/order-00007/consumers");
  await page.getByTestId("session-summary").waitFor();
  const sourceHeads = (await api("head_list", { contract: "shop", session: "order-00007" })).body;
  await page.getByTestId("copy-session").click();
  const dialog = page.getByRole("dialog");
  const file = `order-00007-${source.kind}-${Date.now()}.sqlite`;
  await dialog.getByTestId("copy-to").fill(file);
  await dialog.getByTestId("copy-as").fill("order-00007-home");
  await dialog.getByRole("button", { name: "Copy", exact: true }).click();
  await dialog.getByTestId("outcome").waitFor();
  const outcome = (await dialog.getByTestId("outcome").textContent()) ?? "";
  expect(/^Copied \d+ events, \d+ heads/.test(outcome) && outcome.includes(file), `the copy says what it wrote: ${outcome}`);
  step(`copied from ${source.kind} read-only: ${outcome}`);
  await page.screenshot({ path: join(process.env.A2_SCREENSHOT_DIR ?? tmpdir(), "copy-to-dev-store.png") });
  await dialog.getByTestId("open-copy").click();
  // The source's own heads are on the page until the copy opens: wait for the copy's route first.
  await page.waitForURL(/order-00007-home/);
  await page.locator("[data-testid=head-row]").first().waitFor();
  const now = (await api("connection_get", {})).body;
  expect(now.kind === "sqlite" && now.url.endsWith(file), `the copy is the open store: ${now.url}`);
  expect(page.url().includes("order-00007-home"), `the copied session is shown: ${page.url()}`);
  const copiedHeads = (await api("head_list", { contract: "shop", session: "order-00007-home" })).body;
  const shape = (heads) => JSON.stringify(heads.map((h) => [h.consumer, h.lane, h.next_index, h.failure_count, h.dead]));
  expect(shape(copiedHeads) === shape(sourceHeads), `the copy has the source's heads: ${shape(copiedHeads)} vs ${shape(sourceHeads)}`);
  step("opened the copy: the same heads, dead letters included");
}
