// The Studio's UI figures in Chromium against `a2 serve` (printed, never asserted):
//   node e2e/bench.mjs <url printed by `a2 serve`> <contract> <long session id> [<long history session id>]
// - first_session_list_ms: from navigation start to the first rendered row
//   of the sessions list (target ≤ 1500), median of 5 cold page loads;
// - scrolling the long session's virtualised events: long tasks (> 50 ms,
//   the browser's definition) and the longest, frame times (target: no long
//   task over 100 ms);
// - with a long history session: the timeline's first paint (first bar
//   drawn, target ≤ 1000) and the whole history read and laid out, median of 3.
import { chromium } from "playwright-core";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, contract, session, history] = process.argv.slice(2);
if (!url || !contract || !session) {
  console.error("usage: node e2e/bench.mjs <url> <contract> <long session id>");
  process.exit(2);
}
const base = `${new URL(url).origin}/`;
const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "a2-bench-")), {
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  viewport: { width: 1400, height: 900 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
context.setDefaultTimeout(60_000);
// The printed link's one-time code: the page trades it for the Studio's token, kept in this origin's storage
// for every later page and tab, which are opened from the origin.
const first = context.pages()[0] ?? (await context.newPage());
await first.goto(url);
await first.waitForFunction(() => Boolean(localStorage.getItem("a2.token")));
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
};

// First paint of the session list, cold, five times.
const loads = [];
for (let i = 0; i < 5; i++) {
  const page = await context.newPage();
  await page.goto(`${base}#/sessions/${encodeURIComponent(contract)}`);
  await page.locator("[data-testid=sessions-table] tbody tr").first().waitFor();
  loads.push(await page.evaluate(() => performance.now()));
  await page.close();
}
console.log(`bench studio-web first_session_list_ms p50=${quantile(loads, 0.5).toFixed(0)} max=${Math.max(...loads).toFixed(0)}`);

// Scroll the long session's events.
const page = await context.newPage();
await page.goto(`${base}#/session/${encodeURIComponent(contract)}/${encodeURIComponent(session)}/events`);
await page.locator(".event-row .type").first().waitFor();
await page.waitForFunction(() => !document.querySelector(".event-row .type")?.textContent?.includes("…"));
const figures = await page.evaluate(async () => {
  const list = document.querySelector("[data-testid=event-list]");
  const longTasks = [];
  const observer = new PerformanceObserver((entries) => entries.getEntries().forEach((e) => longTasks.push(e.duration)));
  observer.observe({ type: "longtask", buffered: false });
  const frames = [];
  let last = performance.now();
  let running = true;
  const tick = (now) => {
    frames.push(now - last);
    last = now;
    if (running) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  const pause = (ms) => new Promise((r) => setTimeout(r, ms));
  // Smooth scrolling down, like a wheel…
  for (let i = 0; i < 150; i++) {
    list.scrollTop += 900;
    await pause(16);
  }
  // …then jumps across the whole log, like dragging the scrollbar.
  for (let i = 0; i < 40; i++) {
    list.scrollTop = Math.random() * list.scrollHeight;
    await pause(50);
  }
  await pause(500);
  running = false;
  observer.disconnect();
  const rows = list.querySelectorAll(".event-row").length;
  return { longTasks, frames: frames.slice(1), rows, height: list.scrollHeight };
});
const over100 = figures.longTasks.filter((d) => d > 100).length;
console.log(
  `bench studio-web scroll events_rows_in_dom=${figures.rows} long_tasks=${figures.longTasks.length} long_tasks_over_100ms=${over100} ` +
    `max_long_task_ms=${Math.max(0, ...figures.longTasks).toFixed(0)} frame_p50_ms=${quantile(figures.frames, 0.5).toFixed(1)} ` +
    `frame_p95_ms=${quantile(figures.frames, 0.95).toFixed(1)} frame_max_ms=${Math.max(0, ...figures.frames).toFixed(0)}`,
);

if (history) {
  const paints = [];
  const wholes = [];
  let count = "";
  for (let i = 0; i < 3; i++) {
    const tab = await context.newPage();
    await tab.goto(`${base}#/session/${encodeURIComponent(contract)}/${encodeURIComponent(history)}/timeline`);
    await tab.locator("[data-testid=attempt-bar]").first().waitFor();
    paints.push(await tab.evaluate(() => performance.now()));
    await tab.waitForFunction(() => !/reading/.test(document.querySelector("[data-testid=timeline-count]")?.textContent ?? "reading"), null, { timeout: 300_000 });
    wholes.push(await tab.evaluate(() => performance.now()));
    count = (await tab.getByTestId("timeline-count").textContent()) ?? "";
    await tab.close();
  }
  const attempts = count.match(/^(\d+) attempts/)?.[1] ?? "?";
  console.log(
    `bench studio-web timeline attempts=${attempts} first_paint_ms p50=${quantile(paints, 0.5).toFixed(0)} max=${Math.max(...paints).toFixed(0)} ` +
      `whole_history_ms p50=${quantile(wholes, 0.5).toFixed(0)}`,
  );
}
await context.close();
