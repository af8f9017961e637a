// Dead letters: the triage queue. Store-wide or for one session; select
// several and redrive them, or redrive everything matching as a job with
// progress, a stop-at count and cancel.
import { Fragment, useEffect, useState } from "react";
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import type { DeadLetter, DeadLetterGroup, HeadKey, JobView, RedriveAction } from "../bindings";
import { commands } from "../commands";
import { AttemptList, ErrorText } from "./Attempts";
import { JsonView } from "../json";
import { unwrap } from "../api";
import { formatCount, formatMoment, formatTime } from "../format";
import { gate, type Gate } from "../gate";
import { RedriveDialog, type Target } from "../actions";
import { ActionButton, ConfirmDialog, ErrorBox, Empty, GateNote, useConnection } from "../ui";
import { keys } from "../keys";
import { useCloseAfter } from "../live";
import { href } from "../route";


const PAGE = 100;
const keyOf = (d: DeadLetter) => `${d.contract}/${d.session}/${d.consumer}/${d.lane ?? ""}/${d.index}`;
const target = (d: DeadLetter): Target => ({ contract: d.contract, session: d.session, consumer: d.consumer, index: d.index });

export function DeadLetterTable({ contract, session }: { contract?: string; session?: string }) {
  const connection = useConnection();
  const redriveGate = gate(connection, "redrive");
  const [consumer, setConsumer] = useState("");
  const [cause, setCause] = useState<string | null>(null);
  const [grouped, setGrouped] = useState(false);
  const pages = useInfiniteQuery({
    queryKey: keys.deadLetters(contract ?? null, session ?? null, consumer, cause),
    initialPageParam: null as HeadKey | null,
    queryFn: ({ pageParam }) =>
      unwrap(
        commands.deadLetterList({ contract: contract ?? null, session: session ?? null, consumer: consumer || null, cause, after: pageParam, limit: PAGE }),
      ),
    getNextPageParam: (last) => last.next,
  });
  const [groupRedrive, setGroupRedrive] = useState<{ group: DeadLetterGroup; action: RedriveAction } | null>(null);
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
    setGroupRedrive(null);
    if (changed) setPicked(new Set());
  };
  return (
    <div>
      <div className="toolbar">
        {!session && (
          <label className="switch">
            <input type="checkbox" data-testid="group-by-cause" checked={grouped} onChange={(e) => setGrouped(e.target.checked)} /> Group by cause
          </label>
        )}
        <input placeholder="consumer" value={consumer} onChange={(e) => setConsumer(e.target.value)} aria-label="Filter by consumer" />
        {cause !== null && (
          <span className="chip" data-testid="cause-filter">
            cause: <code>{cause}</code>{" "}
            <button type="button" className="link" onClick={() => setCause(null)} aria-label="Clear the cause filter">
              ×
            </button>
          </span>
        )}
        <span className="muted">{formatCount(rows.length, pages.hasNextPage)} dead letters</span>
        {!grouped && (
          <>
            <ActionButton gate={selectionGate} testId="retry-selected" onClick={() => setDialog({ targets: pickedRows.map(target), action: "retry" })}>
              Retry selected ({pickedRows.length})
            </ActionButton>
            <ActionButton gate={selectionGate} danger testId="skip-selected" onClick={() => setDialog({ targets: pickedRows.map(target), action: "skip" })}>
              Skip selected
            </ActionButton>
          </>
        )}
        {!session && !grouped && (
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
      {grouped && !session && (
        <Groups
          contract={contract}
          consumer={consumer}
          redriveGate={redriveGate}
          onShow={(g) => {
            setCause(g.cause);
            setConsumer(g.consumer);
            setGrouped(false);
          }}
          onRedrive={(group, action) => setGroupRedrive({ group, action })}
        />
      )}
      <ErrorBox error={pages.error} />
      {!grouped && (
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
                      <a href={href({ view: "session", contract: d.contract, session: d.session, tab: "dead-letters" })}>
                        {d.contract}/{d.session}
                      </a>
                    </td>
                  )}
                  <td>
                    {d.consumer}
                    {d.lane ? <span className="muted">[{d.lane}]</span> : null}
                  </td>
                  <td className="num">
                    <a href={href({ view: "session", contract: d.contract, session: d.session, tab: "events", index: d.index })}>{d.index}</a>
                  </td>
                  <td>{d.type}</td>
                  <td className="num">{d.failure_count}</td>
                  <td className="error-text" title={d.last_error ?? ""}>
                    <button type="button" className="link" onClick={() => setOpen(open === key ? null : key)} data-testid="open-dead-letter">
                      {(d.last_error ?? "—").slice(0, 70)}
                    </button>
                  </td>
                  <td>{formatMoment(d.failed_at, pages.dataUpdatedAt)}</td>
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
                      <DeadLetterDetail letter={d} />
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
      )}
      {!grouped && rows.length === 0 && !pages.isLoading && <Empty>No dead letters. 🎉</Empty>}
      {pages.hasNextPage && (
        <button type="button" onClick={() => void pages.fetchNextPage()}>
          Load more
        </button>
      )}
      {dialog && <RedriveDialog targets={dialog.targets} action={dialog.action} onClose={done} />}
      {bulk && <BulkRedrive action={bulk} contract={contract} consumer={consumer || undefined} cause={cause ?? undefined} onClose={done} />}
      {groupRedrive && (
        <BulkRedrive
          action={groupRedrive.action}
          contract={groupRedrive.group.contract}
          consumer={groupRedrive.group.consumer}
          cause={groupRedrive.group.cause}
          onClose={done}
        />
      )}
    </div>
  );
}

/** The store-wide queue grouped by consumer and cause, largest first; a group opens, or is redriven whole. */
function Groups(props: {
  contract?: string;
  consumer: string;
  redriveGate: Gate;
  onShow: (group: DeadLetterGroup) => void;
  onRedrive: (group: DeadLetterGroup, action: RedriveAction) => void;
}) {
  const { contract, consumer, redriveGate, onShow, onRedrive } = props;
  const groups = useQuery({ queryKey: keys.deadLetterGroups(contract ?? null), queryFn: () => unwrap(commands.deadLetterGroups({ contract: contract ?? null })) });
  const shown = (groups.data ?? []).filter((g) => !consumer || g.consumer === consumer);
  return (
    <>
      <ErrorBox error={groups.error} />
      <table data-testid="dead-letter-groups">
        <thead>
          <tr>
            <th>Consumer</th>
            <th className="num">Dead letters</th>
            <th>Cause</th>
            <th>First failed</th>
            <th>Last failed</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {shown.map((g) => (
            <tr key={`${g.contract}/${g.consumer}/${g.cause}`} data-testid="dead-letter-group" data-consumer={g.consumer} data-count={g.count}>
              <td>
                {g.contract}/{g.consumer}
              </td>
              <td className="num" title={g.partial ? "At least: the grouping read its bound of dead letters, and there are more" : undefined}>
                {g.partial ? `≥ ${g.count}` : g.count}
              </td>
              <td className="error-text" title={g.sample_error}>
                <button type="button" className="link" data-testid="show-group" onClick={() => onShow(g)}>
                  <code>{g.cause || "(no error text)"}</code>
                </button>
              </td>
              <td>{formatTime(g.first_failed_at)}</td>
              <td>{formatTime(g.last_failed_at)}</td>
              <td className="actions">
                <ActionButton gate={redriveGate} testId="retry-group" onClick={() => onRedrive(g, "retry")}>
                  Retry group…
                </ActionButton>
                <ActionButton gate={redriveGate} danger testId="skip-group" onClick={() => onRedrive(g, "skip")}>
                  Skip group…
                </ActionButton>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown.some((g) => g.partial) && (
        <p className="muted" data-testid="groups-partial">
          Counted over a bounded read of the dead letters (the first by session), and there are more: each count is at
          least that. The list below pages through every one.
        </p>
      )}
      {groups.data && shown.length === 0 && <Empty>No dead letters. 🎉</Empty>}
    </>
  );
}

/** A dead letter opened: its event's payload, its whole last error, and its attempt history. */
function DeadLetterDetail({ letter: d }: { letter: DeadLetter }) {
  const event = useQuery({
    queryKey: keys.deadLetterEvent(d.contract, d.session, d.index),
    queryFn: () => unwrap(commands.eventList({ contract: d.contract, session: d.session, after: d.index - 1, before: d.index + 1, newest_first: false, limit: 1 })),
  });
  const payload = event.data?.[0]?.payload;
  return (
    <div className="dead-letter-detail">
      <dl className="facts" data-testid="dead-letter-detail">
        <dt>Event</dt>
        <dd>
          <code>{d.event_id}</code> <span className="muted">{d.type}</span>
        </dd>
        <dt>Attempts</dt>
        <dd>{d.attempt_count}</dd>
        <dt>Last error</dt>
        <dd>
          <ErrorText text={d.last_error} />
        </dd>
        <dt>Payload</dt>
        <dd data-testid="dead-letter-payload">{payload === undefined ? <span className="muted">…</span> : <JsonView text={payload} />}</dd>
      </dl>
      <h4>Attempt history</h4>
      <AttemptList contract={d.contract} session={d.session} consumer={d.consumer} index={d.index} />
    </div>
  );
}

function BulkRedrive(props: { action: RedriveAction; contract?: string; consumer?: string; cause?: string; onClose: (changed: boolean) => void }) {
  const { action, contract, consumer, cause } = props;
  const onClose = useCloseAfter("redrive", props.onClose);
  const [stopAt, setStopAt] = useState("");
  const [rate, setRate] = useState("");
  const [job, setJob] = useState<JobView | null>(null);
  useEffect(() => {
    if (!job || job.finished) return;
    const timer = setTimeout(() => void unwrap(commands.jobGet({ id: job.id })).then(setJob), 300);
    return () => clearTimeout(timer);
  }, [job]);
  const scope = `${consumer ? `consumer ${consumer}` : "every consumer"}${contract ? ` of ${contract}` : ", every contract"}${cause !== undefined ? ` failing with “${cause}”` : ""}`;
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
            cause: cause ?? null,
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
