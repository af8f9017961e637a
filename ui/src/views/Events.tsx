// A session's events, virtualised: only the rows on screen exist, and
// their pages (200 events) are fetched as they scroll into view, so a
// 1M-event session scrolls as smoothly as a short one.
import { useEffect, useEffectEvent, useMemo, useRef, useState } from "react";
import { useQueries } from "@tanstack/react-query";
import { useVirtualizer } from "@tanstack/react-virtual";
import type { EventFilterView, EventView, SessionSummary } from "../bindings";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatTime } from "../format";
import { href } from "../route";
import { JsonView } from "../json";
import { CopyButton, ErrorBox, Empty } from "../ui";
import { keys } from "../keys";

const PAGE = 200;
const ROW = 30;

export function Events({ summary, focus }: { summary: SessionSummary; focus?: number }) {
  const first = summary.clear_index + 1;
  const count = Math.max(0, summary.head - summary.clear_index);
  const scroller = useRef<HTMLDivElement>(null);
  // TanStack Virtual hands back functions whose results change without their identity changing, which the
  // React Compiler cannot memoise; this app does not run the compiler, and re-reads them every render.
  // eslint-disable-next-line react-hooks/incompatible-library -- justified above: no React Compiler in this app
  const virtual = useVirtualizer({ count, getScrollElement: () => scroller.current, estimateSize: () => ROW, overscan: 20 });
  const items = virtual.getVirtualItems();
  const pages = useMemo(() => {
    const wanted = new Set<number>();
    for (const item of items) wanted.add(Math.floor(item.index / PAGE));
    return [...wanted].sort((a, b) => a - b);
  }, [items]);
  const results = useQueries({
    queries: pages.map((page) => ({
      queryKey: keys.events(summary.contract, summary.session, page),
      queryFn: () =>
        unwrap(
          commands.eventList({
            contract: summary.contract,
            session: summary.session,
            after: first + page * PAGE - 1,
            before: null,
            newest_first: false,
            limit: PAGE,
          }),
        ),
      staleTime: 60_000,
    })),
  });
  const byIndex = new Map<number, EventView>();
  results.forEach((r) => r.data?.forEach((e) => byIndex.set(e.index, e)));
  const [selected, setSelected] = useState<number | undefined>(focus);
  const [jump, setJump] = useState("");

  const scrollTo = (index: number) => {
    if (index < first || index > summary.head) return;
    setSelected(index);
    virtual.scrollToIndex(index - first, { align: "center" });
  };
  // A route that names an index opens on it, once the list has rows to scroll.
  const scrollToFocus = useEffectEvent((index: number) => scrollTo(index));
  const hasRows = count > 0;
  useEffect(() => {
    if (focus && hasRows) scrollToFocus(focus);
  }, [focus, hasRows]);

  const chosen = selected !== undefined ? byIndex.get(selected) : undefined;
  const error = results.find((r) => r.error)?.error;
  if (count === 0) return <Empty>No events{summary.clear_index ? ` after the clear at ${summary.clear_index}` : ""}.</Empty>;
  return (
    <div className="events">
      <div className="toolbar">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            scrollTo(Number(jump));
          }}
        >
          <input placeholder={`jump to index (${first}–${summary.head})`} value={jump} onChange={(e) => setJump(e.target.value)} aria-label="Jump to index" />
          <button type="submit">Go</button>
        </form>
        <button type="button" onClick={() => scrollTo(first)}>Oldest</button>
        <button type="button" onClick={() => scrollTo(summary.head)}>Newest</button>
        <span className="muted">{count.toLocaleString()} events</span>
      </div>
      <EventFilterBar summary={summary} selected={selected} onJump={scrollTo} />
      <ErrorBox error={error} />
      <div className="split">
        <div className="event-list" ref={scroller} data-testid="event-list" tabIndex={0}
          onKeyDown={(e) => {
            if (e.key === "ArrowDown" || e.key === "j") scrollTo((selected ?? first - 1) + 1);
            if (e.key === "ArrowUp" || e.key === "k") scrollTo((selected ?? first + 1) - 1);
          }}>
          <div style={{ height: virtual.getTotalSize(), position: "relative" }}>
            {items.map((item) => {
              const index = first + item.index;
              const event = byIndex.get(index);
              return (
                <div
                  key={item.key}
                  className={`event-row ${index === selected ? "selected" : ""}`}
                  style={{ position: "absolute", top: 0, left: 0, right: 0, height: ROW, transform: `translateY(${item.start}px)` }}
                  onClick={() => setSelected(index)}
                >
                  <span className="idx">{index}</span>
                  <span className="type">{event?.type ?? "…"}</span>
                  <span className="muted">{event ? formatTime(event.created_at) : ""}</span>
                  <span className="muted cause">
                    {event?.cause ? `← ${event.cause.consumer} @${event.cause.index}` : event?.scheduled_by ? `⏰ ${event.scheduled_by.name}` : ""}
                  </span>
                </div>
              );
            })}
          </div>
        </div>
        <aside className="detail">
          {chosen ? (
            <>
              <h3>
                #{chosen.index} <code>{chosen.type}</code>
              </h3>
              <p>
                <code className="id">{chosen.id}</code> <CopyButton text={chosen.id} label="Copy id" />
              </p>
              <p className="muted">{formatTime(chosen.created_at)}</p>
              {chosen.cause && (
                <p>
                  Produced by{" "}
                  <a href={href({ view: "session", contract: summary.contract, session: summary.session, tab: "consumers" })}>
                    {chosen.cause.consumer}
                    {chosen.cause.lane ? `[${chosen.cause.lane}]` : ""}
                  </a>{" "}
                  handling{" "}
                  <button type="button" className="link" onClick={() => chosen.cause && scrollTo(chosen.cause.index)}>
                    event #{chosen.cause.index}
                  </button>{" "}
                  (attempt {chosen.cause.attempt})
                </p>
              )}
              {chosen.scheduled_by && (
                <p data-testid="scheduled-by">
                  Delivered by the timer <strong>{chosen.scheduled_by.name}</strong> <code className="id">{chosen.scheduled_by.task}</code>
                </p>
              )}
              <div className="row">
                <strong>Payload</strong> <CopyButton text={chosen.payload} label="Copy payload" />
              </div>
              <JsonView text={chosen.payload} />
            </>
          ) : (
            <Empty>Select an event to see its payload.</Empty>
          )}
        </aside>
      </div>
    </div>
  );
}

/** Matches shown at most; the filter stops walking the session there. */
const MAX_MATCHES = 500;

/**
 * Filter the session's events by type and a payload path (`$.customer = "c-7"`):
 * the matching indexes, each a jump into the list. Walks the session a chunk
 * of events a call, and can be stopped.
 */
function EventFilterBar({ summary, selected, onJump }: { summary: SessionSummary; selected?: number; onJump: (index: number) => void }) {
  const [type, setType] = useState("");
  const [path, setPath] = useState("");
  const [matches, setMatches] = useState<EventView[] | null>(null);
  const [state, setState] = useState<{ running: boolean; through: number; error: unknown }>({ running: false, through: 0, error: null });
  const stop = useRef(false);
  useEffect(() => () => void (stop.current = true), []);
  const run = async () => {
    stop.current = false;
    setMatches([]);
    setState({ running: true, through: summary.clear_index, error: null });
    let after: number | null = null;
    let found: EventView[] = [];
    try {
      do {
        const page: EventFilterView = await unwrap(
          commands.eventFilter({ contract: summary.contract, session: summary.session, payload: null, path: path || null, event_type: type || null, after, scan: null }),
        );
        found = [...found, ...page.events].slice(0, MAX_MATCHES);
        after = page.scanned_through;
        setMatches(found);
        setState({ running: after !== null, through: after ?? summary.head, error: null });
      } while (after !== null && !stop.current && found.length < MAX_MATCHES);
      setState((s) => ({ ...s, running: false }));
    } catch (error) {
      setState((s) => ({ ...s, running: false, error }));
    }
  };
  return (
    <>
      <form
        className="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          if (type || path) void run();
          else setMatches(null);
        }}
      >
        <input placeholder="type" value={type} onChange={(e) => setType(e.target.value)} aria-label="Filter by type" data-testid="filter-type" />
        <input placeholder='$.customer = "c-7"' value={path} onChange={(e) => setPath(e.target.value)} aria-label="Filter by payload path" data-testid="filter-path" spellCheck={false} />
        <button type="submit" disabled={state.running}>Filter</button>
        {state.running && (
          <button type="button" onClick={() => (stop.current = true)}>
            Stop
          </button>
        )}
        {matches && (
          <span className="muted" data-testid="filter-status">
            {matches.length}
            {matches.length >= MAX_MATCHES ? "+" : ""} match{matches.length === 1 ? "" : "es"}, looked through index {state.through}
            {state.running ? "…" : ""}
          </span>
        )}
      </form>
      <ErrorBox error={state.error} />
      {matches && matches.length > 0 && (
        <div className="chips matches" data-testid="filter-matches">
          {matches.map((m) => (
            <button key={m.index} type="button" className={m.index === selected ? "on" : ""} onClick={() => onJump(m.index)} title={m.payload}>
              #{m.index} {m.type}
            </button>
          ))}
        </div>
      )}
    </>
  );
}
