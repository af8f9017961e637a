// The causality waterfall's layout maths, apart from React so Vitest can
// hold it: time to pixels and back, one row per consumer and lane with
// overlapping attempts stacked into tracks, zoom about a point, pan, and
// which bars a viewport shows (only those are drawn).
import type { Attempt, EventView, TimerView } from "./bindings";

/** What part of the time axis the chart shows, and how wide it is drawn. */
export type View = { from: number; to: number; width: number };

/** One attempt placed on the chart. */
export type Bar = { attempt: Attempt; row: number; track: number; start: number; end: number };

/** A row of the chart: one consumer (and lane), as many tracks tall as its attempts overlap. */
export type Row = { label: string; consumer: string; lane: string | null; tracks: number; top: number };

export type Layout = { rows: Row[]; bars: Bar[]; start: number; end: number; height: number };

/** The smallest span a zoom reaches: a millisecond is a long time for a no-op run. */
export const MIN_SPAN_MS = 5;
export const TRACK_PX = 14;
export const ROW_GAP_PX = 10;
/** A bar is never drawn thinner than this, so an instant attempt can still be clicked. */
export const MIN_BAR_PX = 3;

export function toX(view: View, t: number): number {
  return ((t - view.from) / (view.to - view.from)) * view.width;
}

export function toTime(view: View, x: number): number {
  return view.from + (x / view.width) * (view.to - view.from);
}

/** An attempt's start, or its end when no start is known (a superseded attempt nobody else recorded). */
export function startOf(a: Attempt): number {
  return a.started_at ?? a.ended_at;
}

export function rowLabel(consumer: string, lane: string | null): string {
  return lane === null ? consumer : `${consumer} [${lane}]`;
}

/**
 * Place attempts: rows by consumer then lane, in name order; within a row,
 * each attempt goes on the first track whose last bar ended before it began
 * (interval partitioning), so concurrent heads stack and never overlap.
 */
export function layout(attempts: Attempt[], moments: number[] = []): Layout {
  const byRow = new Map<string, { consumer: string; lane: string | null; items: Attempt[] }>();
  for (const a of attempts) {
    const key = `${a.consumer}\u0000${a.lane ?? ""}`;
    let row = byRow.get(key);
    if (!row) byRow.set(key, (row = { consumer: a.consumer, lane: a.lane, items: [] }));
    row.items.push(a);
  }
  const ordered = [...byRow.values()].sort((x, y) => (x.consumer === y.consumer ? (x.lane ?? "").localeCompare(y.lane ?? "") : x.consumer.localeCompare(y.consumer)));
  const rows: Row[] = [];
  const bars: Bar[] = [];
  let top = 0;
  let start = Infinity;
  let end = -Infinity;
  ordered.forEach((group, rowIndex) => {
    const items = [...group.items].sort((x, y) => startOf(x) - startOf(y) || x.ended_at - y.ended_at);
    const trackEnds: number[] = [];
    for (const a of items) {
      const s = startOf(a);
      let track = trackEnds.findIndex((e) => e <= s);
      if (track < 0) {
        track = trackEnds.length;
        trackEnds.push(a.ended_at);
      } else trackEnds[track] = a.ended_at;
      bars.push({ attempt: a, row: rowIndex, track, start: s, end: a.ended_at });
      start = Math.min(start, s);
      end = Math.max(end, a.ended_at);
    }
    const tracks = Math.max(1, trackEnds.length);
    rows.push({ label: rowLabel(group.consumer, group.lane), consumer: group.consumer, lane: group.lane, tracks, top });
    top += tracks * TRACK_PX + ROW_GAP_PX;
  });
  if (bars.length === 0) return { rows, bars, start: 0, end: 0, height: 0 };
  // Moments beside the bars (a timer due later) widen the span so a fit shows them.
  for (const t of moments) {
    start = Math.min(start, t);
    end = Math.max(end, t);
  }
  return { rows, bars, start, end, height: top };
}

/** The whole history with a margin on each side, or a minimal span around an instant. */
export function fit(l: Layout, width: number): View {
  const span = Math.max(l.end - l.start, MIN_SPAN_MS);
  const margin = span * 0.02;
  return { from: l.start - margin, to: l.start + span + margin, width };
}

/** Zoom by `factor` (< 1 in, > 1 out) keeping the time under `anchorX` where it is. */
export function zoom(view: View, factor: number, anchorX: number, bounds?: { start: number; end: number }): View {
  const anchor = toTime(view, anchorX);
  let span = (view.to - view.from) * factor;
  span = Math.max(span, MIN_SPAN_MS);
  if (bounds) span = Math.min(span, Math.max((bounds.end - bounds.start) * 1.5, MIN_SPAN_MS));
  const share = anchorX / view.width;
  const from = anchor - share * span;
  return { from, to: from + span, width: view.width };
}

/** Move the view by `dx` pixels (a drag to the right shows earlier times). */
export function pan(view: View, dx: number): View {
  const dt = (dx / view.width) * (view.to - view.from);
  return { from: view.from - dt, to: view.to - dt, width: view.width };
}

/** A bar's drawn rectangle: at least MIN_BAR_PX wide. */
export function barRect(view: View, bar: Bar, rows: Row[]): { x: number; y: number; w: number; h: number } {
  const x = toX(view, bar.start);
  const w = Math.max(toX(view, bar.end) - x, MIN_BAR_PX);
  const y = rows[bar.row].top + bar.track * TRACK_PX;
  return { x, y, w, h: TRACK_PX - 3 };
}

/**
 * The bars the viewport shows: overlapping the time range and the rows
 * scrolled into `[top, top + height)`. The chart draws these only, so a
 * session with 100k attempts paints a screenful.
 */
export function visibleBars(l: Layout, view: View, top: number, height: number): Bar[] {
  const pad = ((view.to - view.from) / view.width) * MIN_BAR_PX;
  return l.bars.filter((b) => {
    if (b.end < view.from - pad || b.start > view.to) return false;
    const y = l.rows[b.row].top + b.track * TRACK_PX;
    return y + TRACK_PX >= top && y <= top + height;
  });
}

/** Tick marks for the time axis: round steps (1, 2, 5 × 10^n ms) about every `px` pixels. */
export function ticks(view: View, px = 120): number[] {
  const span = view.to - view.from;
  const raw = (span / view.width) * px;
  const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const first = Math.ceil(view.from / step) * step;
  const out: number[] = [];
  for (let t = first; t <= view.to && out.length < 100; t += step) out.push(t);
  return out;
}

/** A duration as people read it: 12 ms, 1.4 s, 3 min. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/**
 * A timer on the chart: a pending one at its due time, or a delivered one at
 * the time its first event landed, linked to those events (the task itself
 * is gone once delivered; its events name it).
 */
export type TimerMark =
  | { state: "pending"; at: number; task: string; name: string; kind: string; overdue: boolean }
  | { state: "delivered"; at: number; task: string; name: string; index: number; count: number };

/** Pending timers (append and clear; a watchdog is no app's timer) and the delivered ones the events name. */
export function timerMarks(timers: TimerView[], events: EventView[]): TimerMark[] {
  const marks: TimerMark[] = timers
    .filter((t) => t.kind !== "drain")
    .map((t) => ({ state: "pending", at: t.due_at, task: t.id, name: t.name, kind: t.kind, overdue: t.overdue }));
  const delivered = new Map<string, TimerMark & { state: "delivered" }>();
  for (const e of events) {
    const by = e.scheduled_by;
    if (!by) continue;
    const seen = delivered.get(by.task);
    if (!seen) delivered.set(by.task, { state: "delivered", at: e.created_at, task: by.task, name: by.name, index: e.index, count: 1 });
    else {
      seen.count += 1;
      if (e.index < seen.index) {
        seen.index = e.index;
        seen.at = e.created_at;
      }
    }
  }
  return [...marks, ...delivered.values()].sort((a, b) => a.at - b.at);
}
