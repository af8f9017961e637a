// One session: its summary and actions, and tabs for events, consumer
// heads, dead letters and snapshots. The tab is part of the route.
import { Fragment, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import type { HeadView, SessionSummary } from "../bindings";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatAge, formatBytes, formatLag, formatMoment, formatRelative, formatTime } from "../format";
import { gate } from "../gate";
import { href, type SessionTab } from "../route";
import { ClearDialog, ConsumeDialog, CopyDialog, RedriveDialog } from "../actions";
import { JsonView } from "../json";
import { ActionButton, CopyButton, ErrorBox, Empty, GateNote, useConnection } from "../ui";
import { Events } from "./Events";
import { DeadLetterTable } from "./DeadLetters";
import { AttemptList } from "./Attempts";
import { Timeline } from "./Timeline";
import { TimerTable } from "./Timers";
import { Presence } from "./Presence";
import { keys } from "../keys";

const TABS: [SessionTab, string][] = [
  ["events", "Events"],
  ["consumers", "Consumers"],
  ["timeline", "Timeline"],
  ["dead-letters", "Dead letters"],
  ["timers", "Timers"],
  ["presence", "Presence"],
  ["snapshots", "Snapshots"],
];

export function Session({ contract, session, tab, index }: { contract: string; session: string; tab: SessionTab; index?: number }) {
  const connection = useConnection();
  const summary = useQuery({ queryKey: keys.session(contract, session), queryFn: () => unwrap(commands.sessionGet({ contract, session })) });
  const [clearing, setClearing] = useState(false);
  const [copying, setCopying] = useState(false);
  const clearGate = gate(connection, "clear");
  const s = summary.data;
  return (
    <div className="page">
      <h1>
        <a href={href({ view: "sessions", contract })}>{contract}</a> / {session} <CopyButton text={session} label="Copy id" />
      </h1>
      <ErrorBox error={summary.error} />
      {s && (
        <div className="summary" data-testid="session-summary">
          <span>
            head <b data-testid="session-head">{s.head}</b>
          </span>
          <span>cleared through {s.clear_index || "—"}</span>
          <span className={s.lag ? "warn" : ""}>{formatLag(s.lag)}</span>
          <span className={s.dead_letters ? "bad" : ""}>{s.dead_letters} dead letters</span>
          <span className="muted">last activity {formatMoment(s.updated_at, summary.dataUpdatedAt)}</span>
          <ActionButton gate={s.head > s.clear_index ? clearGate : { allowed: false, reason: "Nothing to clear." }} danger testId="clear-session" onClick={() => setClearing(true)}>
            Clear…
          </ActionButton>
          <button type="button" data-testid="copy-session" onClick={() => setCopying(true)} title="Read this session and write it into a local SQLite file">
            Copy to dev store…
          </button>
        </div>
      )}
      <GateNote gate={clearGate} />
      <nav className="tabs" role="tablist">
        {TABS.map(([id, label]) => (
          <a key={id} role="tab" aria-selected={tab === id} className={tab === id ? "on" : ""} href={href({ view: "session", contract, session, tab: id })}>
            {label}
          </a>
        ))}
      </nav>
      {s && tab === "events" && <Events summary={s} focus={index} />}
      {s && tab === "consumers" && <Heads summary={s} />}
      {tab === "timeline" && <Timeline contract={contract} session={session} />}
      {tab === "dead-letters" && <DeadLetterTable contract={contract} session={session} />}
      {tab === "timers" && <TimerTable contract={contract} session={session} />}
      {tab === "presence" && <Presence contract={contract} session={session} />}
      {tab === "snapshots" && <Snapshots contract={contract} session={session} />}
      {copying && <CopyDialog contract={contract} session={session} onClose={() => setCopying(false)} />}
      {clearing && s && (
        <ClearDialog
          contract={contract}
          session={session}
          head={s.head}
          onClose={() => setClearing(false)}
        />
      )}
    </div>
  );
}

function Heads({ summary }: { summary: SessionSummary }) {
  const { contract, session } = summary;
  const connection = useConnection();
  const heads = useQuery({ queryKey: keys.heads(contract, session), queryFn: () => unwrap(commands.headList({ contract, session })) });
  const [consume, setConsume] = useState<HeadView | null>(null);
  const [redrive, setRedrive] = useState<{ head: HeadView; action: "retry" | "skip" } | null>(null);
  const [opened, setOpened] = useState<string | null>(null);
  // Leases and retries are told relative to when the heads were read.
  const now = heads.dataUpdatedAt;
  const done = () => {
    setConsume(null);
    setRedrive(null);
  };
  return (
    <>
      <ErrorBox error={heads.error} />
      <table data-testid="heads-table">
        <thead>
          <tr>
            <th>Consumer</th>
            <th>Lane</th>
            <th className="num">Next</th>
            <th>Lag</th>
            <th>Oldest waiting</th>
            <th className="num">Attempts</th>
            <th className="num">Failures</th>
            <th>Lease</th>
            <th>Next retry</th>
            <th>Why it is not moving</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {heads.data?.map((h) => {
            const id = `${h.consumer}/${h.lane ?? ""}/${h.next_index}`;
            return (
            <Fragment key={id}>
            <tr className={h.dead ? "dead" : ""} data-testid="head-row" data-consumer={h.consumer}>
              <td>
                {h.consumer} <span className="muted">{h.kind}</span>
              </td>
              <td>{h.lane ?? "—"}</td>
              <td className="num">{h.next_index}</td>
              <td className={h.lag ? "warn" : "muted"} data-testid="head-lag">{formatLag(h.lag)}</td>
              <td>{formatAge(h.oldest_pending_age_ms)}</td>
              <td className="num">{h.attempt_count}</td>
              <td className="num">{h.failure_count}</td>
              <td>{h.lease_holder ? `${h.lease_holder} ${formatRelative(h.lease_expires_at, now)}` : "—"}</td>
              <td>{formatRelative(h.next_attempt_at, now)}</td>
              <td className="reason" title={h.last_error ?? ""} data-testid="head-reason">{h.reason}</td>
              <td className="actions">
                {h.kind === "log" && h.lag > 0 && (
                  <ActionButton gate={gate(connection, "consume")} testId="consume" onClick={() => setConsume(h)}>
                    Consume…
                  </ActionButton>
                )}
                {h.dead && (
                  <>
                    <ActionButton gate={gate(connection, "redrive")} onClick={() => setRedrive({ head: h, action: "retry" })}>
                      Retry
                    </ActionButton>
                    <ActionButton gate={gate(connection, "redrive")} danger onClick={() => setRedrive({ head: h, action: "skip" })}>
                      Skip
                    </ActionButton>
                  </>
                )}
                <button type="button" data-testid="open-attempts" aria-expanded={opened === id} onClick={() => setOpened(opened === id ? null : id)}>
                  Attempts
                </button>
              </td>
            </tr>
            {opened === id && (
              <tr className="detail-row">
                <td colSpan={11}>
                  <AttemptList contract={contract} session={session} consumer={h.consumer} index={h.next_index} />
                </td>
              </tr>
            )}
            </Fragment>
            );
          })}
        </tbody>
      </table>
      {heads.data?.length === 0 && <Empty>No consumer has a head in this session.</Empty>}
      {consume && <ConsumeDialog contract={contract} session={session} consumer={consume.consumer} head={summary.head} onClose={done} />}
      {redrive && (
        <RedriveDialog
          targets={[{ contract, session, consumer: redrive.head.consumer, index: redrive.head.next_index }]}
          action={redrive.action}
          onClose={done}
        />
      )}
    </>
  );
}

function Snapshots({ contract, session }: { contract: string; session: string }) {
  const snapshots = useQuery({ queryKey: keys.snapshots(contract, session), queryFn: () => unwrap(commands.snapshotList({ contract, session })) });
  return (
    <>
      <ErrorBox error={snapshots.error} />
      {snapshots.data?.length === 0 && <Empty>No reducer snapshots in this session.</Empty>}
      {snapshots.data?.map((s) => (
        <section key={`${s.reducer}/${s.index}`} className="card">
          <h3>
            {s.reducer} at index {s.index} <span className="muted">{formatBytes(s.size_bytes)}, {formatTime(s.created_at)}</span>
          </h3>
          {s.pins.length > 0 && (
            <p className="muted">
              pinned by {s.pins.map((p) => `${p.consumer}${p.lane ? `[${p.lane}]` : ""}@${p.index}`).join(", ")}
            </p>
          )}
          <JsonView text={s.state} />
        </section>
      ))}
    </>
  );
}
