// A session's causality waterfall: time across, one row per consumer (and
// lane), a bar per attempt coloured by how it ended, a tick where an attempt
// appended events. The wheel zooms about the pointer, a drag pans, hovering
// tells the attempt, a click opens it. Only the bars in view are drawn. A
// strip above marks the session's timers: pending ones at their due time
// (a click opens them in Timers), delivered ones where their events landed
// (a click opens those events).
import { useEffect, useMemo, useRef, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import type { Attempt, AttemptKey, AttemptPage } from "../bindings";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatTime } from "../format";
import { keys } from "../keys";
import { go } from "../route";
import { barRect, fit, formatDuration, layout, pan, ticks, timerMarks, toX, visibleBars, zoom, type Bar, type TimerMark, type View } from "../timeline";
import { ErrorBox, Empty } from "../ui";
import { AttemptDetail, duration } from "./Attempts";

const LABEL_PX = 190;
const AXIS_PX = 22;
const VIEWPORT_PX = 420;
const PAGE = 500;
/** A session's history is read whole up to this many attempts (200 calls). */
const MAX_ATTEMPTS = 100_000;
/** Delivered timers are found among the session's newest events, this many. */
const TIMER_EVENTS = 500;
const STRIP_PX = 18;

type History = { attempts: Attempt[]; done: boolean; truncated: boolean; error: unknown };
const EMPTY: History = { attempts: [], done: false, truncated: false, error: null };

/**
 * A session's whole attempt history, oldest first, a page of 500 a call; the
 * chart paints from the first page and fills in as pages arrive (every 20
 * pages, so a long history is laid out a few times, not hundreds).
 */
function useHistory(contract: string, session: string, generation: number): History {
  // The history read for one (contract, session, generation); another's reads as empty until its first page.
  const wanted = JSON.stringify([contract, session, generation]);
  const [read, setRead] = useState<{ of: string; history: History }>({ of: wanted, history: EMPTY });
  useEffect(() => {
    let cancelled = false;
    const show = (history: History) => setRead({ of: wanted, history });
    void (async () => {
      const attempts: Attempt[] = [];
      let after: AttemptKey | null = null;
      try {
        for (let pages = 1; ; pages++) {
          const page: AttemptPage = await unwrap(commands.attemptList({ contract, session, consumer: null, index: null, after, oldest_first: true, limit: PAGE }));
          if (cancelled) return;
          attempts.push(...page.items);
          const done = !page.next || attempts.length >= MAX_ATTEMPTS;
          if (pages === 1 || done || pages % 20 === 0) show({ attempts: [...attempts], done, truncated: done && page.next !== null, error: null });
          if (done) return;
          after = page.next;
        }
      } catch (error) {
        if (!cancelled) show({ attempts: [...attempts], done: true, truncated: false, error });
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [contract, session, generation, wanted]);
  return read.of === wanted ? read.history : EMPTY;
}

/** The session's timers, pending and recently delivered, as chart marks. */
function useTimerMarks(contract: string, session: string): TimerMark[] {
  const timers = useQuery({
    queryKey: keys.timers(contract, session),
    queryFn: () => unwrap(commands.timerList({ contract, session, after: null, limit: 500 })),
  });
  const events = useQuery({
    queryKey: keys.timelineEvents(contract, session),
    queryFn: () => unwrap(commands.eventList({ contract, session, after: null, before: null, newest_first: true, limit: TIMER_EVENTS })),
  });
  return useMemo(() => timerMarks(timers.data?.items ?? [], events.data ?? []), [timers.data, events.data]);
}

function TimerStrip({ marks, view, contract, session }: { marks: TimerMark[]; view: View; contract: string; session: string }) {
  const y = STRIP_PX / 2;
  return (
    <div className="timeline-timers" style={{ height: STRIP_PX }}>
      <div className="timeline-label" style={{ width: LABEL_PX - 12 }}>
        timers
      </div>
      <svg width={view.width} height={STRIP_PX} style={{ marginLeft: LABEL_PX }} data-testid="timer-strip">
        {marks
          .filter((m) => m.at >= view.from)
          .map((m) => {
            const later = m.at > view.to;
            const x = later ? view.width - 7 : toX(view, m.at);
            const open = () =>
              go(
                m.state === "pending"
                  ? { view: "session", contract, session, tab: "timers" }
                  : { view: "session", contract, session, tab: "events", index: m.index },
              );
            const title =
              m.state === "pending"
                ? `${m.name} (${m.kind}) due ${formatTime(m.at)}${m.overdue ? ", overdue" : ""}${later ? " (past the view)" : ""}: open in Timers`
                : `${m.name} delivered ${formatTime(m.at)}: ${m.count} event${m.count === 1 ? "" : "s"} from #${m.index}`;
            return (
              <path
                key={`${m.state}/${m.task}`}
                d={`M${x},${y - 6} L${x + 6},${y} L${x},${y + 6} L${x - 6},${y} Z`}
                className={`timer-mark timer-${m.state}${m.state === "pending" && m.overdue ? " timer-overdue" : ""}${later ? " timer-later" : ""}`}
                data-testid="timer-mark"
                data-state={m.state}
                data-name={m.name}
                role="link"
                aria-label={title}
                onClick={open}
              >
                <title>{title}</title>
              </path>
            );
          })}
      </svg>
    </div>
  );
}

export function Timeline({ contract, session }: { contract: string; session: string }) {
  const [generation, setGeneration] = useState(0);
  const history = useHistory(contract, session, generation);
  const marks = useTimerMarks(contract, session);
  // The fit takes in delivered and overdue timers; one due a day from now would squash the bars to slivers,
  // so pending timers past the view are drawn at its right edge instead.
  const l = useMemo(() => layout(history.attempts, marks.filter((m) => m.state === "delivered" || m.overdue).map((m) => m.at)), [history.attempts, marks]);
  // Once the reader zooms or pans, arriving pages no longer refit the chart.
  const touched = useRef(false);
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(900);
  const [view, setView] = useState<View | null>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [hover, setHover] = useState<{ bar: Bar; x: number; y: number } | null>(null);
  const [picked, setPicked] = useState<Attempt | null>(null);
  const drag = useRef<{ x: number; moved: boolean } | null>(null);

  // The chart's box exists once there are bars: measure it then, and as it resizes.
  const drawn = l.bars.length > 0;
  useEffect(() => {
    const el = box.current;
    if (!drawn || !el) return;
    const measure = () => setWidth(Math.max(el.clientWidth - LABEL_PX, 200));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [drawn]);

  // A new history (or width) fits the whole of it, until the reader moves the view.
  useEffect(() => {
    if (l.bars.length && !touched.current) setView(fit(l, width));
  }, [l, width]);

  // The wheel zooms: a listener of our own, since React's is passive and cannot keep the page from scrolling.
  useEffect(() => {
    const el = box.current?.querySelector<HTMLElement>("[data-chart]");
    if (!el) return;
    const onWheel = (e: WheelEvent) => {
      if (e.shiftKey) return;
      e.preventDefault();
      touched.current = true;
      const x = e.clientX - el.getBoundingClientRect().left;
      setView((v) => (v ? zoom(v, Math.exp(e.deltaY * 0.002), x, l) : v));
    };
    el.addEventListener("wheel", onWheel, { passive: false });
    return () => el.removeEventListener("wheel", onWheel);
  });

  if (history.error && l.bars.length === 0) return <ErrorBox error={history.error} />;
  if (!history.done && l.bars.length === 0) return <p className="muted">Reading the attempt history…</p>;
  if (l.bars.length === 0) return <Empty>No attempt recorded in this session yet.</Empty>;
  const v = view ?? fit(l, width);
  const shown = visibleBars(l, v, scrollTop, VIEWPORT_PX);
  const axis = ticks(v);
  const start = l.start;
  return (
    <div ref={box} className="timeline">
      <div className="toolbar">
        <span className="muted" data-testid="timeline-count">
          {l.bars.length} attempts{history.done ? "" : " so far (reading…)"} in {l.rows.length} rows
          {history.truncated ? ` (the first ${MAX_ATTEMPTS})` : ""}, {formatDuration(l.end - l.start)} from {formatTime(l.start)}
        </span>
        <button
          type="button"
          onClick={() => {
            touched.current = false;
            setView(fit(l, width));
          }}
        >
          Fit
        </button>
        <button type="button" disabled={!history.done} onClick={() => setGeneration((g) => g + 1)} title="Read the history again">
          Reload
        </button>
        <span className="legend">
          {(["completed", "failed", "aborted", "lapsed", "superseded", "cleared"] as const).map((o) => (
            <span key={o} className={`swatch bar-${o}`}>
              {o}
            </span>
          ))}
        </span>
      </div>
      <div className="timeline-axis" style={{ marginLeft: LABEL_PX, height: AXIS_PX }}>
        <svg width={width} height={AXIS_PX}>
          {axis.map((t) => (
            <g key={t} transform={`translate(${toX(v, t)},0)`}>
              <line y1={AXIS_PX - 6} y2={AXIS_PX} className="tick" />
              <text y={12} className="tick-label">
                {t < start ? "−" : "+"}
                {formatDuration(Math.abs(t - start))}
              </text>
            </g>
          ))}
        </svg>
      </div>
      {marks.length > 0 && <TimerStrip marks={marks} view={v} contract={contract} session={session} />}
      <div className="timeline-scroll" style={{ maxHeight: VIEWPORT_PX }} onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}>
        <div className="timeline-body" style={{ height: l.height }}>
          <div className="timeline-labels" style={{ width: LABEL_PX }}>
            {l.rows.map((r) => (
              <div key={r.label} className="timeline-label" style={{ top: r.top, height: r.tracks * 14 }} title={r.label}>
                {r.label}
              </div>
            ))}
          </div>
          <svg
            data-chart
            data-testid="causality-waterfall"
            width={width}
            height={l.height}
            style={{ marginLeft: LABEL_PX }}
            className="timeline-chart"
            onMouseDown={(e) => (drag.current = { x: e.clientX, moved: false })}
            onMouseMove={(e) => {
              const d = drag.current;
              if (!d) return;
              const dx = e.clientX - d.x;
              if (Math.abs(dx) < 3 && !d.moved) return;
              d.moved = true;
              touched.current = true;
              d.x = e.clientX;
              setView((cur) => (cur ? pan(cur, dx) : cur));
            }}
            onMouseUp={() => setTimeout(() => (drag.current = null))}
            onMouseLeave={() => {
              drag.current = null;
              setHover(null);
            }}
          >
            {axis.map((t) => (
              <line key={t} x1={toX(v, t)} x2={toX(v, t)} y1={0} y2={l.height} className="grid" />
            ))}
            {shown.map((bar) => {
              const r = barRect(v, bar, l.rows);
              const a = bar.attempt;
              return (
                <g key={`${a.consumer}/${a.lane ?? ""}/${a.index}/${a.attempt}`}>
                  <rect
                    x={r.x}
                    y={r.y}
                    width={r.w}
                    height={r.h}
                    rx={2}
                    className={`bar bar-${a.outcome}${picked === a ? " picked" : ""}`}
                    data-testid="attempt-bar"
                    data-outcome={a.outcome}
                    data-consumer={a.consumer}
                    data-index={a.index}
                    onMouseEnter={(e) => setHover({ bar, x: e.clientX, y: e.clientY })}
                    onMouseLeave={() => setHover(null)}
                    onClick={() => {
                      if (!drag.current?.moved) setPicked(a);
                    }}
                  />
                  {a.appended.length > 0 && <line x1={r.x + r.w} x2={r.x + r.w} y1={r.y - 2} y2={r.y + r.h + 2} className="appended-tick" />}
                </g>
              );
            })}
          </svg>
        </div>
      </div>
      {hover && (
        <div className="timeline-tip" style={{ left: Math.min(hover.x + 12, window.innerWidth - 440), top: hover.y + 12 }} role="tooltip">
          <b>
            {hover.bar.attempt.consumer}
            {hover.bar.attempt.lane ? ` [${hover.bar.attempt.lane}]` : ""} @{hover.bar.attempt.index} #{hover.bar.attempt.attempt}
          </b>
          <div>
            {hover.bar.attempt.outcome}, {duration(hover.bar.attempt)}
            {hover.bar.attempt.appended.length ? `, appended ${hover.bar.attempt.appended.length}` : ""}
          </div>
          {hover.bar.attempt.error && <div className="error-text">{hover.bar.attempt.error.split("\n")[0].slice(0, 120)}</div>}
        </div>
      )}
      <ErrorBox error={history.error} />
      {picked && <AttemptDetail contract={contract} session={session} attempt={picked} />}
    </div>
  );
}
