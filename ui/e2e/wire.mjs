// Browser end-to-end of the wire, in Debian's Chromium.
//   node e2e/wire.mjs <url printed by `a2 serve-app`> <url printed by `a2 serve`>
// Two pages of the app's example page follow one session over SSE; one
// pushes an order and its presence, the other sees the order, the events the
// consumers append after it (in index order) and the presence; a derived id
// is refused; then the Studio, on the same store, shows the participant in
// the session's Presence tab. Exits non-zero on the first failed expectation.
import { chromium } from "playwright-core";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [app, studio] = process.argv.slice(2);
if (!app || !studio) {
  console.error("usage: node e2e/wire.mjs <app url> <studio url>");
  process.exit(2);
}
const step = (text) => console.log(`[wire] ${text}`);
const session = `wire-${Date.now()}`;

const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "a2-chromium-")), {
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  viewport: { width: 1200, height: 800 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
context.setDefaultTimeout(15_000);
const pageErrors = [];

function expect(condition, message) {
  if (!condition) throw new Error(`expected: ${message}`);
}

async function client(participant) {
  const page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(app);
  await page.getByTestId("session").fill(session);
  await page.getByTestId("participant").fill(participant);
  await page.getByTestId("follow").click();
  await page.getByTestId("status").getByText("following").waitFor();
  return page;
}

const eventTypes = (page) => page.getByTestId("events").locator("li").evaluateAll((lis) => lis.map((li) => `${li.value}:${li.dataset.type}`));

const pages = [];
try {
  const writer = await client("ann");
  const follower = await client("bob");
  pages.push(writer, follower);
  step(`two clients follow session ${session}`);

  await writer.getByTestId("customer").fill("c-42");
  await writer.getByTestId("place").click();
  const placed = follower.getByTestId("events").locator("li[data-type='order.placed']");
  await placed.waitFor();
  expect((await placed.textContent()).includes("c-42"), "the follower sees the order's payload");
  // The consumers' events follow it (how many depends on the demo's
  // failure rolls): wait until both clients show the same, settled log.
  let seen = [];
  let mine = [];
  for (let settled = 0, tries = 0; settled < 3; tries += 1) {
    expect(tries < 60, `the two clients' logs settle: ${mine} / ${seen}`);
    await follower.waitForTimeout(500);
    const [now, theirs] = [await eventTypes(follower), await eventTypes(writer)];
    settled = now.length >= 2 && now.join() === seen.join() && theirs.join() === now.join() ? settled + 1 : 0;
    [seen, mine] = [now, theirs];
  }
  const indexes = seen.map((s) => Number(s.split(":")[0]));
  expect(seen[0] === "1:order.placed", `the order is the session's first event: ${seen}`);
  expect(indexes.every((index, i) => index === i + 1), `gap-free and in order: ${seen}`);
  step(`both clients saw ${seen.join(", ")}`);

  await follower.locator("[data-testid=presence] li[data-participant=ann]").getByText(`viewing="${session}"`).waitFor();
  await writer.getByTestId("typing").check();
  await follower.locator("[data-testid=presence] li[data-participant=ann]").getByText("typing=true").waitFor();
  step("the follower sees ann viewing the order, then typing");

  const refused = await writer.evaluate(async (session) => {
    const response = await fetch(`/shop/sessions/${session}/push`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ events: [{ type: "order.placed", id: "9b2e4f3a-1c2d-5e6f-8a9b-0c1d2e3f4a5b", payload: { customer: "x", amount: 1 } }] }),
    });
    return { status: response.status, body: await response.json() };
  }, session);
  expect(refused.status === 400 && refused.body.error.code === "INVALID_PAYLOAD", `a derived id is refused: ${JSON.stringify(refused)}`);
  step("a UUIDv5-shaped id is refused with INVALID_PAYLOAD");

  // The Studio on the same store shows who is here.
  const page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(`${studio.split("#")[0]}#/session/shop/${session}/presence`);
  await page.locator("[data-testid=presence-row][data-participant=ann][data-field=viewing]").waitFor();
  await page.locator("[data-testid=presence-row][data-participant=ann][data-field=typing]").waitFor();
  step("the Studio's Presence tab shows ann's viewing and typing");

  expect(pageErrors.length === 0, `no page errors: ${pageErrors.join("; ")}`);
  step("passed");
} catch (error) {
  for (const [i, page] of pages.entries()) {
    const shot = join(tmpdir(), `a2-wire-failure-${i}-${Date.now()}.png`);
    await page.screenshot({ path: shot }).catch(() => {});
    console.error(`[wire] screenshot: ${shot}`);
  }
  console.error(`[wire] FAILED: ${error.message}`);
  process.exitCode = 1;
} finally {
  await context.close();
}
