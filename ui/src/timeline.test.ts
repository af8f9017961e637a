import { describe, expect, it } from "vitest";
import type { Attempt, AttemptOutcome, EventView, TimerView } from "./bindings";
import { barRect, fit, formatDuration, layout, MIN_BAR_PX, MIN_SPAN_MS, pan, ticks, timerMarks, toTime, toX, TRACK_PX, ROW_GAP_PX, visibleBars, zoom } from "./timeline";

function attempt(consumer: string, lane: string | null, index: number, start: number | null, end: number, outcome: AttemptOutcome = "completed"): Attempt {
  return { consumer, lane, index, attempt: 1, holder: "h", started_at: start, ended_at: end, outcome, error: null, appended: [] };
}

describe("the waterfall's layout", () => {
  it("maps time to pixels and back", () => {
    const view = { from: 1000, to: 2000, width: 500 };
    expect(toX(view, 1000)).toBe(0);
    expect(toX(view, 1500)).toBe(250);
    expect(toX(view, 2000)).toBe(500);
    expect(toTime(view, 250)).toBe(1500);
    expect(toTime(view, toX(view, 1234))).toBeCloseTo(1234);
  });

  it("gives each consumer and lane a row, in name order", () => {
    const l = layout([attempt("mailer", "main", 1, 0, 10), attempt("charger", null, 1, 0, 10), attempt("fulfilment", "w-1", 2, 5, 9), attempt("fulfilment", "w-0", 1, 0, 3)]);
    expect(l.rows.map((r) => r.label)).toEqual(["charger", "fulfilment [w-0]", "fulfilment [w-1]", "mailer [main]"]);
    expect(l.rows.map((r) => r.top)).toEqual([0, 1, 2, 3].map((i) => i * (TRACK_PX + ROW_GAP_PX)));
    expect([l.start, l.end]).toEqual([0, 10]);
  });

  it("stacks overlapping attempts into tracks and reuses a track once it is free", () => {
    const l = layout([
      attempt("t", null, 1, 0, 100),
      attempt("t", null, 2, 10, 50),
      attempt("t", null, 3, 20, 30),
      attempt("t", null, 4, 60, 70), // track 1 is free again at 50
      attempt("t", null, 5, 100, 120), // track 0 is free at 100
    ]);
    const tracks = Object.fromEntries(l.bars.map((b) => [b.attempt.index, b.track]));
    expect(tracks).toEqual({ 1: 0, 2: 1, 3: 2, 4: 1, 5: 0 });
    expect(l.rows[0].tracks).toBe(3);
    expect(l.height).toBe(3 * TRACK_PX + ROW_GAP_PX);
  });

  it("draws an attempt with no known start at its end, never thinner than a click", () => {
    const l = layout([attempt("c", "main", 1, null, 500, "superseded"), attempt("c", "main", 2, 0, 1000)]);
    const view = fit(l, 1000);
    const instant = l.bars.find((b) => b.attempt.index === 1);
    expect(instant?.start).toBe(500);
    const rect = barRect(view, instant!, l.rows);
    expect(rect.w).toBe(MIN_BAR_PX);
  });

  it("zooms about the pointer: the time under it stays put", () => {
    const view = { from: 0, to: 1000, width: 1000 };
    const zoomed = zoom(view, 0.5, 250);
    expect(toTime(zoomed, 250)).toBeCloseTo(250);
    expect(zoomed.to - zoomed.from).toBe(500);
    const out = zoom(zoomed, 4, 800);
    expect(toTime(out, 800)).toBeCloseTo(toTime(zoomed, 800));
  });

  it("stops zooming in at the minimal span and out at the history's bounds", () => {
    const view = { from: 0, to: 1000, width: 1000 };
    const deep = zoom(view, 1e-6, 500);
    expect(deep.to - deep.from).toBe(MIN_SPAN_MS);
    const wide = zoom(view, 100, 500, { start: 0, end: 1000 });
    expect(wide.to - wide.from).toBe(1500);
  });

  it("pans: a drag to the right shows earlier times", () => {
    const view = { from: 1000, to: 2000, width: 500 };
    const moved = pan(view, 50);
    expect([moved.from, moved.to]).toEqual([900, 1900]);
  });

  it("draws only the bars in the viewport's time range and rows", () => {
    const many = Array.from({ length: 100_000 }, (_, i) => attempt(`c${String(i % 50).padStart(2, "0")}`, null, i, i * 10, i * 10 + 5));
    const l = layout(many);
    expect(l.rows).toHaveLength(50);
    const view = { from: 0, to: 10_000, width: 1000 };
    const shown = visibleBars(l, view, 0, 5 * (TRACK_PX + ROW_GAP_PX));
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.length).toBeLessThan(200);
    expect(shown.every((b) => b.start <= 10_000 && b.row <= 5)).toBe(true);
  });

  it("puts round ticks on the axis", () => {
    expect(ticks({ from: 0, to: 1000, width: 1000 }, 100)).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
    expect(ticks({ from: 3, to: 1003, width: 500 }, 100)).toEqual([200, 400, 600, 800, 1000]);
  });

  it("says durations as people read them", () => {
    expect(formatDuration(12)).toBe("12 ms");
    expect(formatDuration(1400)).toBe("1.40 s");
    expect(formatDuration(90_000)).toBe("1.5 min");
  });
});

function pending(id: string, due: number, kind = "append", overdue = false): TimerView {
  return {
    id, contract: "shop", session: "s", name: `n-${id}`, kind, due_at: due, due_in_ms: 0, overdue, events: [], if_last_index: null,
    trigger: null, created_at: 0, attempts: 0, last_error: null, lease_holder: null, lease_expires_at: null,
  };
}

function event(index: number, at: number, task: string | null): EventView {
  return { index, id: `e${index}`, type: "tick", payload: "{}", created_at: at, cause: null, scheduled_by: task ? { task, name: `n-${task}` } : null };
}

describe("the timer strip", () => {
  it("marks pending timers at their due time and leaves the watchdog out", () => {
    const marks = timerMarks([pending("b", 900), pending("a", 500, "clear", true), pending("w", 700, "drain")], []);
    expect(marks.map((m) => [m.state, m.task, m.at])).toEqual([["pending", "a", 500], ["pending", "b", 900]]);
    expect(marks[0]).toMatchObject({ kind: "clear", overdue: true });
  });

  it("marks a delivered timer once, where its first event landed, linked to that event", () => {
    const marks = timerMarks([pending("p", 9_000)], [event(7, 300, "t"), event(6, 200, "t"), event(5, 100, null), event(8, 400, "u")]);
    expect(marks).toEqual([
      { state: "delivered", at: 200, task: "t", name: "n-t", index: 6, count: 2 },
      { state: "delivered", at: 400, task: "u", name: "n-u", index: 8, count: 1 },
      { state: "pending", at: 9_000, task: "p", name: "n-p", kind: "append", overdue: false },
    ]);
  });

  it("widens the chart's span to the timers beside the bars", () => {
    const l = layout([attempt("t", null, 1, 100, 200)], [50, 5_000]);
    expect([l.start, l.end]).toEqual([50, 5_000]);
  });
});
