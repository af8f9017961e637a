// A head's attempts, newest first (outcome, duration, holder, error, what it
// appended), and the detail of one attempt: shared by the heads table, the
// dead-letter detail and the timeline.
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import type { Attempt } from "../bindings";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatMoment, formatTime } from "../format";
import { formatDuration } from "../timeline";
import { CopyButton, ErrorBox, Empty } from "../ui";
import { keys } from "../keys";
import { href } from "../route";

export const OUTCOME_CLASS: Record<Attempt["outcome"], string> = {
  completed: "ok",
  failed: "bad",
  lapsed: "warn",
  superseded: "muted",
  aborted: "warn",
  cleared: "muted",
};

export function duration(a: Attempt): string {
  return a.started_at === null ? "—" : formatDuration(a.ended_at - a.started_at);
}

export function AttemptList({ contract, session, consumer, index }: { contract: string; session: string; consumer: string; index: number }) {
  const attempts = useQuery({
    queryKey: keys.attempts(contract, session, consumer, index),
    queryFn: () => unwrap(commands.attemptList({ contract, session, consumer, index, after: null, oldest_first: false, limit: 100 })),
  });
  const [open, setOpen] = useState<number | null>(null);
  const items = attempts.data?.items ?? [];
  return (
    <div data-testid="attempt-list">
      <ErrorBox error={attempts.error} />
      {items.length === 0 && !attempts.isLoading && <Empty>No attempt recorded for this head yet.</Empty>}
      {items.length > 0 && (
        <table className="attempts">
          <thead>
            <tr>
              <th className="num">#</th>
              <th>Outcome</th>
              <th>Duration</th>
              <th>Holder</th>
              <th>Ended</th>
              <th>Appended</th>
              <th>Error</th>
            </tr>
          </thead>
          <tbody>
            {items.map((a) => (
              <tr key={a.attempt} data-testid="attempt-row" data-outcome={a.outcome} onClick={() => setOpen(open === a.attempt ? null : a.attempt)}>
                <td className="num">{a.attempt}</td>
                <td className={OUTCOME_CLASS[a.outcome]}>{a.outcome}</td>
                <td>{duration(a)}</td>
                <td className="muted">{a.holder?.slice(0, 8) ?? "—"}</td>
                <td>{formatMoment(a.ended_at, attempts.dataUpdatedAt)}</td>
                <td className="num">{a.appended.length || "—"}</td>
                <td className="error-text">
                  {open === a.attempt ? <ErrorText text={a.error} /> : (a.error ?? "—").split("\n")[0].slice(0, 80)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** An error whole, monospace, with a copy button. */
export function ErrorText({ text }: { text: string | null }) {
  if (!text) return <span className="muted">—</span>;
  return (
    <div className="error-whole">
      <pre data-testid="attempt-error">{text}</pre>
      <CopyButton text={text} label="Copy error" />
    </div>
  );
}

/** One attempt, opened from the timeline: its facts, its error, and links to what it read and wrote. */
export function AttemptDetail({ contract, session, attempt }: { contract: string; session: string; attempt: Attempt }) {
  // The events it appended come after its trigger: find their indexes among the next events.
  const appended = useQuery({
    enabled: attempt.appended.length > 0,
    queryKey: keys.appended(contract, session, attempt.index, attempt.appended),
    queryFn: () => unwrap(commands.eventList({ contract, session, after: attempt.index, before: null, newest_first: false, limit: 500 })),
  });
  const at = new Map(appended.data?.map((e) => [e.id, e.index]));
  const events = (index: number) => href({ view: "session", contract, session, tab: "events", index });
  return (
    <dl className="facts" data-testid="attempt-detail">
      <dt>Head</dt>
      <dd>
        {attempt.consumer}
        {attempt.lane ? ` [${attempt.lane}]` : ""} at <a href={events(attempt.index)} data-testid="attempt-trigger">event {attempt.index}</a>, attempt {attempt.attempt}
      </dd>
      <dt>Outcome</dt>
      <dd className={OUTCOME_CLASS[attempt.outcome]} data-testid="attempt-outcome">
        {attempt.outcome}
      </dd>
      <dt>Ran</dt>
      <dd>
        {attempt.started_at === null ? "start unknown" : formatTime(attempt.started_at)} → {formatTime(attempt.ended_at)} ({duration(attempt)})
      </dd>
      <dt>Holder</dt>
      <dd>
        <code>{attempt.holder ?? "—"}</code>
      </dd>
      <dt>Appended</dt>
      <dd>
        {attempt.appended.length === 0
          ? "—"
          : attempt.appended.map((id) => {
              const index = at.get(id);
              return (
                <span key={id} className="chip">
                  {index === undefined ? <code>{id}</code> : <a href={events(index)}>#{index}</a>}
                </span>
              );
            })}
      </dd>
      <dt>Error</dt>
      <dd>
        <ErrorText text={attempt.error} />
      </dd>
    </dl>
  );
}
