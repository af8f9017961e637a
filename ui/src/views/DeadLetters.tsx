// Dead letters: the triage queue. Store-wide or for one session; select
// several and redrive them, or redrive everything matching as a job with
// progress, a stop-at count and cancel.
import { Fragment, useEffect, useState } from "react";
import { useInfiniteQuery, useQueryClient } from "@tanstack/react-query";
import { commands, type DeadLetter, type HeadKey, type JobView, type RedriveAction } from "../bindings";
import { unwrap } from "../api";
import { formatCount, formatTime } from "../format";
import { gate, type Gate } from "../gate";
import { RedriveDialog, type Target } from "../actions";
import { ActionButton, ConfirmDialog, ErrorBox, Empty, GateNote, useConnection } from "../ui";
import { keys } from "../keys";

const PAGE = 100;
const keyOf = (d: DeadLetter) => `${d.contract}/${d.session}/${d.consumer}/${d.lane ?? ""}/${d.index}`;
const target = (d: DeadLetter): Target => ({ contract: d.contract, session: d.session, consumer: d.consumer, index: d.index });

export function DeadLetterTable({ contract, session }: { contract?: string; session?: string }) {
  const client = useQueryClient();
  const connection = useConnection();
  const redriveGate = gate(connection, "redrive");
  const [consumer, setConsumer] = useState("");
  const pages = useInfiniteQuery({
    queryKey: keys.deadLetters(contract ?? null, session ?? null, consumer),
    initialPageParam: null as HeadKey | null,
    queryFn: ({ pageParam }) =>
      unwrap(commands.deadLetterList({ contract: contract ?? null, session: session ?? null, consumer: consumer || null, after: pageParam, limit: PAGE })),
    getNextPageParam: (last) => last.next,
  });
  const rows = pages.data?.pages.flatMap((p) => p.items) ?? [];
  const [picked, setPicked] = useState<Set<string>>(new Set());
  const [dialog, setDialog] = useState<{ targets: Target[]; action: RedriveAction } | null>(null);
  const [bulk, setBulk] = useState<RedriveAction | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const pickedRows = rows.filter((d) => picked.has(keyOf(d)));
  const selectionGate: Gate =
    redriveGate.allowed && pickedRows.length === 0 ? { allowed: false, reason: "Select dead letters first." } : redriveGate;
  const done = (changed: boolean) => {
    setDialog(null);
    setBulk(null);
    if (changed) {
      setPicked(new Set());
      void client.invalidateQueries();
    }
  };
  return (
    <div>
      <div className="toolbar">
        <input placeholder="consumer" value={consumer} onChange={(e) => setConsumer(e.target.value)} aria-label="Filter by consumer" />
        <span className="muted">{formatCount(rows.length, pages.hasNextPage)} dead letters</span>
        <ActionButton gate={selectionGate} testId="retry-selected" onClick={() => setDialog({ targets: pickedRows.map(target), action: "retry" })}>
          Retry selected ({pickedRows.length})
        </ActionButton>
        <ActionButton gate={selectionGate} danger testId="skip-selected" onClick={() => setDialog({ targets: pickedRows.map(target), action: "skip" })}>
          Skip selected
        </ActionButton>
        {!session && (
          <>
            <ActionButton gate={redriveGate} testId="retry-all" onClick={() => setBulk("retry")}>
              Retry all matching…
            </ActionButton>
            <ActionButton gate={redriveGate} danger onClick={() => setBulk("skip")}>
              Skip all matching…
            </ActionButton>
          </>
        )}
      </div>
      <GateNote gate={redriveGate} />
      <ErrorBox error={pages.error} />
      <table data-testid="dead-letters-table">
        <thead>
          <tr>
            <th>
              <input
                type="checkbox"
                aria-label="Select all shown"
                checked={rows.length > 0 && pickedRows.length === rows.length}
                onChange={(e) => setPicked(new Set(e.target.checked ? rows.map(keyOf) : []))}
              />
            </th>
            {!session && <th>Session</th>}
            <th>Consumer</th>
            <th className="num">Index</th>
            <th>Type</th>
            <th className="num">Failures</th>
            <th>Last error</th>
            <th>Failed at</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((d) => {
            const key = keyOf(d);
            return (
              <Fragment key={key}>
                <tr
                  className={open === key ? "selected" : ""}
                  tabIndex={0}
                  onKeyDown={(e) => e.key === "Enter" && e.target === e.currentTarget && setOpen(open === key ? null : key)}
                  data-testid="dead-letter-row" data-session={d.session} data-consumer={d.consumer} data-index={d.index}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select ${d.session} ${d.consumer} ${d.index}`}
                      checked={picked.has(key)}
                      onChange={(e) => {
                        const next = new Set(picked);
                        if (e.target.checked) next.add(key);
                        else next.delete(key);
                        setPicked(next);
                      }}
                    />
                  </td>
                  {!session && (
                    <td>
                      <a href={`#/session/${encodeURIComponent(d.contract)}/${encodeURIComponent(d.session)}/dead-letters`}>
                        {d.contract}/{d.session}
                      </a>
                    </td>
                  )}
                  <td>
                    {d.consumer}
                    {d.lane ? <span className="muted">[{d.lane}]</span> : null}
                  </td>
                  <td className="num">
                    <a href={`#/session/${encodeURIComponent(d.contract)}/${encodeURIComponent(d.session)}/events?index=${d.index}`}>{d.index}</a>
                  </td>
                  <td>{d.type}</td>
                  <td className="num">{d.failure_count}</td>
                  <td className="error-text" title={d.last_error ?? ""}>
                    <button type="button" className="link" onClick={() => setOpen(open === key ? null : key)} data-testid="open-dead-letter">
                      {(d.last_error ?? "—").slice(0, 70)}
                    </button>
                  </td>
                  <td>{formatTime(d.failed_at)}</td>
                  <td className="actions">
                    <ActionButton gate={redriveGate} testId="retry-one" onClick={() => setDialog({ targets: [target(d)], action: "retry" })}>
                      Retry
                    </ActionButton>
                    <ActionButton gate={redriveGate} danger testId="skip-one" onClick={() => setDialog({ targets: [target(d)], action: "skip" })}>
                      Skip
                    </ActionButton>
                  </td>
                </tr>
                {open === key && (
                  <tr className="detail-row">
                    <td colSpan={session ? 8 : 9}>
                      <dl className="facts" data-testid="dead-letter-detail">
                        <dt>Event</dt>
                        <dd><code>{d.event_id}</code></dd>
                        <dt>Attempts</dt>
                        <dd>{d.attempt_count}</dd>
                        <dt>Error</dt>
                        <dd className="error-text">{d.last_error ?? "—"}</dd>
                      </dl>
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
      {rows.length === 0 && !pages.isLoading && <Empty>No dead letters. 🎉</Empty>}
      {pages.hasNextPage && (
        <button type="button" onClick={() => void pages.fetchNextPage()}>
          Load more
        </button>
      )}
      {dialog && <RedriveDialog targets={dialog.targets} action={dialog.action} onClose={done} />}
      {bulk && <BulkRedrive action={bulk} contract={contract} consumer={consumer || undefined} onClose={done} />}
    </div>
  );
}

function BulkRedrive({ action, contract, consumer, onClose }: { action: RedriveAction; contract?: string; consumer?: string; onClose: (changed: boolean) => void }) {
  const [stopAt, setStopAt] = useState("");
  const [rate, setRate] = useState("");
  const [job, setJob] = useState<JobView | null>(null);
  useEffect(() => {
    if (!job || job.finished) return;
    const timer = setTimeout(() => void unwrap(commands.jobGet({ id: job.id })).then(setJob), 300);
    return () => clearTimeout(timer);
  }, [job]);
  const scope = `${consumer ? `consumer ${consumer}` : "every consumer"}${contract ? ` of ${contract}` : ", every contract"}`;
  if (job) {
    const p = job.progress;
    const share = p.total ? Math.round(((p.done + p.failed) / p.total) * 100) : 100;
    return (
      <div className="modal-backdrop">
        <div className="modal" role="dialog" aria-label="Bulk redrive">
          <h2>Redrive all matching: {action}</h2>
          <progress max={100} value={share} data-testid="job-progress" />
          <p data-testid="job-status">
            {p.done} of {p.total} done{p.failed ? `, ${p.failed} failed` : ""}
            {job.finished ? (job.cancelled ? " — cancelled" : " — finished") : "…"}
          </p>
          <ErrorBox error={job.error ? new Error(`${job.error.code}: ${job.error.message}`) : null} />
          <div className="modal-actions">
            {!job.finished && (
              <button type="button" className="danger" onClick={() => void unwrap(commands.jobCancel({ id: job.id })).then(setJob)}>
                Cancel job
              </button>
            )}
            <button type="button" disabled={!job.finished} onClick={() => onClose(true)}>
              Close
            </button>
          </div>
        </div>
      </div>
    );
  }
  return (
    <ConfirmDialog
      title={`Redrive all matching: ${action}`}
      confirm="Start job"
      danger={action === "skip"}
      onClose={onClose}
      run={async () => {
        const started = await unwrap(
          commands.jobRedriveAll({
            contract: contract ?? null,
            consumer: consumer ?? null,
            action,
            stop_at: stopAt ? Number(stopAt) : null,
            rate: rate ? Number(rate) : null,
          }),
        );
        setJob(started);
        return "Started.";
      }}
    >
      <p>
        Every dead letter of {scope}, as they stand now, is {action === "retry" ? "run again with a fresh failure budget" : "settled without running"}.
      </p>
      <label className="field">
        Stop after (optional)
        <input type="number" min={1} value={stopAt} onChange={(e) => setStopAt(e.target.value)} />
      </label>
      <label className="field">
        At most per second (optional)
        <input type="number" min={0.1} step="any" value={rate} onChange={(e) => setRate(e.target.value)} />
      </label>
    </ConfirmDialog>
  );
}

export function DeadLetters() {
  return (
    <div className="page">
      <h1>Dead letters</h1>
      <DeadLetterTable />
    </div>
  );
}
