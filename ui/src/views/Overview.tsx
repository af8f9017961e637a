// Overview: contracts, consumers with total lag, lagging sessions and dead
// letters, each consumer's lag over time (sampled while the app is open), and
// its completions and failures per minute over the last hour.
import { useEffect, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import type { PausedConsumer, Serving, TotalsSnapshot } from "../bindings";
import { commands } from "../commands";
import { PauseDialog } from "../actions";
import { gate } from "../gate";
import { unwrap } from "../api";
import { formatAge, formatCount } from "../format";
import { go, href } from "../route";
import { ActionButton, ConfirmDialog, ErrorBox, Empty, useConnection } from "../ui";
import { keys } from "../keys";
import { useLagHistory, useLagSeries, type LagHistory } from "../lagHistory";

/** Kept totals older than this are recomputed (on a replica, which cannot, they are shown as stale). */
const KEPT_FOR_MS = 5_000;
/** Kept totals older than this mean no server is refreshing them. */
const STALE_AFTER_MS = 30_000;

const COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777"];

function LagChart({ history }: { history: LagHistory }) {
  const series = [...useLagSeries(history).entries()];
  const all = series.flatMap(([, s]) => s);
  if (all.length < 2) return <Empty>Lag over time appears here as samples come in (every few seconds).</Empty>;
  const t0 = Math.min(...all.map((s) => s.at));
  const t1 = Math.max(...all.map((s) => s.at), t0 + 1);
  const top = Math.max(1, ...all.map((s) => s.lag));
  const W = 640;
  const H = 160;
  const x = (t: number) => ((t - t0) / (t1 - t0)) * (W - 40) + 36;
  const y = (v: number) => H - 18 - (v / top) * (H - 30);
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label="Lag over time per consumer">
        <line x1={36} y1={H - 18} x2={W - 4} y2={H - 18} className="axis" />
        <text x={2} y={y(top) + 4} className="tick">{formatCount(top)}</text>
        <text x={2} y={H - 14} className="tick">0</text>
        <text x={W - 4} y={H - 2} className="tick" textAnchor="end">now</text>
        <text x={36} y={H - 2} className="tick">{formatAge(t1 - t0)} ago</text>
        {series.map(([key, samples], i) => (
          <polyline
            key={key}
            fill="none"
            stroke={COLOURS[i % COLOURS.length]}
            strokeWidth={2}
            points={samples.map((s) => `${x(s.at).toFixed(1)},${y(s.lag).toFixed(1)}`).join(" ")}
          />
        ))}
      </svg>
      <figcaption>
        {series.map(([key], i) => (
          <span key={key} className="legend">
            <i style={{ background: COLOURS[i % COLOURS.length] }} /> {key}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

/** When the consumer last completed an attempt, to the minute; beyond the hour the chart keeps, it says so. */
function LastCompletion({ at, now }: { at: number | null; now: number }) {
  if (at === null) {
    return (
      <td data-testid="last-completion" className="muted">
        none in the last hour
      </td>
    );
  }
  const minutes = Math.max(0, Math.floor((now - at) / 60_000));
  return <td data-testid="last-completion">{minutes === 0 ? "this minute" : `${minutes} min ago`}</td>;
}

/** How many live processes declare the consumer; in red when work waits and none does. */
function ServedBy({ serving }: { serving: Serving | null }) {
  if (serving === null) {
    return (
      <td data-testid="served-by" className="muted" title="The process registry could not be read">
        —
      </td>
    );
  }
  switch (serving.kind) {
    case "served":
      return (
        <td data-testid="served-by">
          <a href={href({ view: "processes" })}>{serving.by === 1 ? "1 process" : `${serving.by} processes`}</a>
        </td>
      );
    case "nobody":
      return (
        <td data-testid="served-by" className="bad">
          nobody serves it
        </td>
      );
    case "idle":
      return (
        <td data-testid="served-by" className="muted">
          no live process
        </td>
      );
    case "undeclared":
      return (
        <td data-testid="served-by" className="warn" title="It has heads, but no registered process declares it: a deploy removed it, or the processes that ran it stopped">
          not declared
        </td>
      );
  }
}

/** Running, or who paused it, when (as of `readAt`, when the pauses were read) and why; with the button that flips it. */
function ConsumerState({ paused, readAt, onToggle }: { paused: PausedConsumer | null; readAt: number; onToggle: () => void }) {
  const connection = useConnection();
  return (
    <td data-testid="consumer-state">
      {paused ? (
        <span className="warn" data-testid="paused-note">
          paused by {paused.actor} {formatAge(readAt - paused.paused_at)} ago: {paused.reason}
        </span>
      ) : (
        <span className="muted">running</span>
      )}{" "}
      <ActionButton gate={gate(connection, "pause")} testId={paused ? "resume" : "pause"} onClick={onToggle}>
        {paused ? "Resume" : "Pause"}
      </ActionButton>
    </td>
  );
}

/** Who keeps the totals fresh: "refreshed by host:pid every 2 s", or how many servers do (one a contract). */
export function refreshedBy(snapshot: TotalsSnapshot): string {
  const by = snapshot.refreshed_by ?? [];
  if (by.length !== 1) return `refreshed by ${by.length} servers (one a contract)`;
  const [one] = by;
  const every = one.every_ms > 0 ? ` every ${formatAge(one.every_ms)}` : "";
  return `refreshed by ${one.host}:${one.pid}${every}`;
}

export function Overview() {
  const contracts = useQuery({ queryKey: keys.contracts(), queryFn: () => unwrap(commands.contractList({})) });
  const present = useQuery({ queryKey: keys.presenceSessions(), queryFn: () => unwrap(commands.presenceSessions({})) });
  const presentIn = (contract: string) => present.data?.find((p) => p.contract === contract)?.sessions ?? 0;
  const connection = useConnection();
  const totals = useQuery({
    queryKey: keys.consumerOverview(),
    queryFn: () => unwrap(commands.consumerOverview({ contract: null, max_age_ms: KEPT_FOR_MS, live: false })),
  });
  // Computed on request where none are kept (read-only): shown until kept ones appear.
  const [computed, setComputed] = useState<TotalsSnapshot | null>(null);
  const [computing, setComputing] = useState(false);
  const shown = totals.data?.origin === "missing" && computed ? computed : totals.data;
  // The throughput panel's own read (one request for both): each consumer's newest minute with a completion.
  const rates = useThroughput();
  const lastCompleted = (contract: string, consumer: string) => {
    const minutes = (rates.data ?? []).filter((r) => r.contract === contract && r.consumer === consumer && r.completed > 0);
    return minutes.length === 0 ? null : Math.max(...minutes.map((r) => r.bucket_start));
  };
  const pauses = useQuery({
    queryKey: keys.pauses(),
    queryFn: () => unwrap(commands.consumerPauseList({ contract: null })),
  });
  const [pausing, setPausing] = useState<{ contract: string; consumer: string; paused: PausedConsumer | null } | null>(null);
  const pausedOf = (contract: string, consumer: string) =>
    pauses.data?.find((p) => p.contract === contract && p.consumer === consumer) ?? null;
  // Ages are as of the read (re-read every few seconds), so rendering stays pure.
  const totalsAge = shown ? totals.dataUpdatedAt - shown.computed_at : 0;
  const lagHistory = useLagHistory();
  useEffect(() => {
    if (shown && shown.origin !== "missing") lagHistory.record(shown);
  }, [shown, lagHistory]);

  return (
    <div className="page">
      <h1>Overview</h1>
      <section className="card">
        <h2>Contracts</h2>
        <ErrorBox error={contracts.error} />
        {contracts.data?.length === 0 && <Empty>This store has no sessions yet.</Empty>}
        <ul className="chips">
          {contracts.data?.map((c) => (
            <li key={c}>
              <a href={href({ view: "sessions", contract: c })}>{c}</a>
              {presentIn(c) > 0 && (
                <small className="muted" data-testid="contract-presence" title="Sessions with someone present now">
                  {" "}
                  · {presentIn(c)} with presence
                </small>
              )}
            </li>
          ))}
        </ul>
      </section>
      <section className="card">
        <h2>
          Consumers{" "}
          {shown?.origin === "kept" && <small className="muted" data-testid="totals-origin">kept {formatAge(totalsAge)} ago</small>}
          {(shown?.refreshed_by ?? []).length > 0 && shown && (
            <small className="muted" data-testid="totals-refreshed-by">
              {" "}
              · {refreshedBy(shown)}
            </small>
          )}
          {shown?.origin === "live" && <small className="muted" data-testid="totals-origin">computed {shown === computed ? "on request" : "now"}</small>}
          {shown?.origin === "kept" && connection?.replica && totalsAge > KEPT_FOR_MS && (
            <small className="warn" data-testid="totals-stale">
              {" "}
              stale: as the primary last refreshed them (a replica cannot refresh them)
            </small>
          )}
          {shown?.origin === "kept" && !connection?.replica && totalsAge > STALE_AFTER_MS && (
            <small className="warn" data-testid="totals-stale">
              {" "}
              no server is refreshing these totals
            </small>
          )}
        </h2>
        <ErrorBox error={totals.error} />
        {shown?.origin === "missing" && (
          <Empty>
            <span data-testid="totals-missing">
              No totals are kept in this store: no server of it has refreshed them. A read-only connection does not
              compute them by itself.{" "}
            </span>
            <button type="button" data-testid="compute-totals" onClick={() => setComputing(true)}>
              Compute now…
            </button>
          </Empty>
        )}
        <table data-testid="consumers-table">
          <thead>
            <tr>
              <th>Contract</th>
              <th>Consumer</th>
              <th className="num">Sessions</th>
              <th className="num">Lagging</th>
              <th className="num">Total lag</th>
              <th className="num">Dead letters</th>
              <th>Served by</th>
              <th title="The newest minute in which one of its attempts completed (the last hour is kept per minute)">Last completion</th>
              <th>State</th>
            </tr>
          </thead>
          <tbody>
            {shown?.totals.map((t) => (
              <tr key={`${t.contract}/${t.consumer}`} data-testid="consumer-row" data-contract={t.contract} data-consumer={t.consumer} tabIndex={0} onKeyDown={(e) => e.key === "Enter" && e.target === e.currentTarget && go({ view: "sessions", contract: t.contract })}>
                <td>{t.contract}</td>
                <td>{t.consumer}</td>
                <td className="num">{formatCount(t.sessions)}</td>
                <td className="num">{formatCount(t.lagging_sessions)}</td>
                <td className="num" data-testid="total-lag" data-lag={t.total_lag}>{formatCount(t.total_lag)}</td>
                <td className="num">
                  {t.dead_letters > 0 ? <a href={href({ view: "dead-letters" })} className="bad">{formatCount(t.dead_letters)}</a> : 0}
                </td>
                <ServedBy serving={t.served ?? null} />
                <LastCompletion at={lastCompleted(t.contract, t.consumer)} now={rates.dataUpdatedAt} />
                <ConsumerState
                  paused={pausedOf(t.contract, t.consumer)}
                  readAt={pauses.dataUpdatedAt}
                  onToggle={() => setPausing({ contract: t.contract, consumer: t.consumer, paused: pausedOf(t.contract, t.consumer) })}
                />
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {computing && (
        <ConfirmDialog
          title="Compute the consumer totals now"
          confirm="Compute"
          run={async () => {
            const live = await unwrap(commands.consumerOverview({ contract: null, max_age_ms: 0, live: true }));
            setComputed(live);
            return `computed: ${live.totals.length} consumers`;
          }}
          onClose={() => setComputing(false)}
        >
          This reads every cursor of every session in the store once: on a large production database, seconds of work
          for it. Nothing is written.
        </ConfirmDialog>
      )}
      {pausing && (
        <PauseDialog
          {...pausing}
          onClose={() => setPausing(null)}
        />
      )}
      <div className="charts">
        <section className="card">
          <h2>Lag over time</h2>
          <LagChart history={lagHistory} />
        </section>
        <section className="card">
          <h2>Throughput, the last hour</h2>
          <Throughput />
        </section>
      </div>
    </div>
  );
}

/** Each consumer's completions and failures per minute over the last hour, from the attempt history. */
/** The last hour of completions and failures per consumer and minute: the panel's read, and the table's last completions. */
function useThroughput() {
  return useQuery({ queryKey: keys.throughput(), queryFn: () => unwrap(commands.attemptRates({ contract: null, minutes: 60 })) });
}

function Throughput() {
  const rates = useThroughput();
  if (rates.error) return <ErrorBox error={rates.error} />;
  const data = rates.data ?? [];
  if (data.length === 0) return <Empty>No attempt ended in the last hour.</Empty>;
  const consumers = [...new Set(data.map((r) => `${r.contract}/${r.consumer}`))].sort();
  const now = Math.max(...data.map((r) => r.bucket_start));
  const W = 180;
  const H = 36;
  const minutes = 60;
  const x = (at: number) => W - ((now - at) / 60_000 + 1) * (W / minutes);
  return (
    <table data-testid="throughput">
      <thead>
        <tr>
          <th>Consumer</th>
          <th className="num">Completed</th>
          <th className="num">Failed</th>
          <th title="Completed above the line, failed below, a bar a minute">Per minute</th>
        </tr>
      </thead>
      <tbody>
        {consumers.map((name) => {
          const series = data.filter((r) => `${r.contract}/${r.consumer}` === name);
          const top = Math.max(1, ...series.map((r) => Math.max(r.completed, r.failed)));
          const completed = series.reduce((n, r) => n + r.completed, 0);
          const failed = series.reduce((n, r) => n + r.failed, 0);
          return (
            <tr key={name} data-testid="throughput-row" data-consumer={name} data-completed={completed} data-failed={failed}>
              <td>{name}</td>
              <td className="num">{formatCount(completed)}</td>
              <td className={failed ? "num bad" : "num muted"}>{formatCount(failed)}</td>
              <td>
                <svg width={W} height={H} role="img" aria-label={`${name}: completions and failures per minute`}>
                  <line x1={0} x2={W} y1={H / 2} y2={H / 2} className="axis" />
                  {series.map((r) => (
                    <g key={r.bucket_start}>
                      <title>{`${new Date(r.bucket_start).toLocaleTimeString()}: ${r.completed} completed, ${r.failed} failed`}</title>
                      <rect x={x(r.bucket_start)} width={W / minutes - 1} y={H / 2 - (r.completed / top) * (H / 2 - 2)} height={(r.completed / top) * (H / 2 - 2)} className="bar-completed" />
                      <rect x={x(r.bucket_start)} width={W / minutes - 1} y={H / 2} height={(r.failed / top) * (H / 2 - 2)} className="bar-failed" />
                    </g>
                  ))}
                </svg>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
