// Overview: contracts, consumers with total lag, lagging sessions and dead
// letters, each consumer's lag over time (sampled while the app is open), and
// its completions and failures per minute over the last hour.
import { useEffect, useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { commands, type PausedConsumer, type TotalsSnapshot } from "../bindings";
import { PauseDialog } from "../actions";
import { gate } from "../gate";
import { unwrap } from "../api";
import { formatAge, formatCount } from "../format";
import { go } from "../route";
import { ActionButton, ErrorBox, Empty, useConnection } from "../ui";
import { keys } from "../keys";

type Sample = { at: number; lag: number };

/** Kept totals older than this are recomputed (on a replica, which cannot, they are shown as stale). */
const KEPT_FOR_MS = 5_000;
const history = new Map<string, Sample[]>();
const KEPT = 240;

function record(snapshot: TotalsSnapshot) {
  for (const t of snapshot.totals) {
    const key = `${t.contract}/${t.consumer}`;
    const samples = history.get(key) ?? [];
    if (samples.at(-1)?.at !== snapshot.computed_at) samples.push({ at: snapshot.computed_at, lag: t.total_lag });
    if (samples.length > KEPT) samples.shift();
    history.set(key, samples);
  }
}

const COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777"];

function LagChart() {
  const series = [...history.entries()];
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

/** Running, or who paused it, when and why; with the button that flips it. */
function ConsumerState({ paused, onToggle }: { paused: PausedConsumer | null; onToggle: () => void }) {
  const connection = useConnection();
  return (
    <td data-testid="consumer-state">
      {paused ? (
        <span className="warn" data-testid="paused-note">
          paused by {paused.actor} {formatAge(Date.now() - paused.paused_at)} ago: {paused.reason}
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

export function Overview() {
  const contracts = useQuery({ queryKey: keys.contracts(), queryFn: () => unwrap(commands.contractList({})) });
  const connection = useConnection();
  const totals = useQuery({
    queryKey: keys.consumerOverview(),
    queryFn: () => unwrap(commands.consumerOverview({ contract: null, max_age_ms: KEPT_FOR_MS })),
    refetchInterval: 5_000,
  });
  const pauses = useQuery({
    queryKey: keys.pauses(),
    queryFn: () => unwrap(commands.consumerPauseList({ contract: null })),
    refetchInterval: 5_000,
  });
  const queryClient = useQueryClient();
  const [pausing, setPausing] = useState<{ contract: string; consumer: string; paused: PausedConsumer | null } | null>(null);
  const pausedOf = (contract: string, consumer: string) =>
    pauses.data?.find((p) => p.contract === contract && p.consumer === consumer) ?? null;
  const [, redraw] = useState(0);
  useEffect(() => {
    if (totals.data) {
      record(totals.data);
      redraw((n) => n + 1);
    }
  }, [totals.data]);

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
              <a href={`#/sessions/${encodeURIComponent(c)}`}>{c}</a>
            </li>
          ))}
        </ul>
      </section>
      <section className="card">
        <h2>
          Consumers{" "}
          {totals.data && <small className="muted">computed {formatAge(Date.now() - totals.data.computed_at)} ago</small>}
          {totals.data && connection?.replica && Date.now() - totals.data.computed_at > KEPT_FOR_MS && (
            <small className="warn" data-testid="totals-stale">
              {" "}
              stale: as the primary last refreshed them (a replica cannot refresh them)
            </small>
          )}
        </h2>
        <ErrorBox error={totals.error} />
        <table data-testid="consumers-table">
          <thead>
            <tr>
              <th>Contract</th>
              <th>Consumer</th>
              <th className="num">Sessions</th>
              <th className="num">Lagging</th>
              <th className="num">Total lag</th>
              <th className="num">Dead letters</th>
              <th>State</th>
            </tr>
          </thead>
          <tbody>
            {totals.data?.totals.map((t) => (
              <tr key={`${t.contract}/${t.consumer}`} data-testid="consumer-row" data-contract={t.contract} data-consumer={t.consumer} tabIndex={0} onKeyDown={(e) => e.key === "Enter" && e.target === e.currentTarget && go({ view: "sessions", contract: t.contract })}>
                <td>{t.contract}</td>
                <td>{t.consumer}</td>
                <td className="num">{formatCount(t.sessions)}</td>
                <td className="num">{formatCount(t.lagging_sessions)}</td>
                <td className="num" data-testid="total-lag" data-lag={t.total_lag}>{formatCount(t.total_lag)}</td>
                <td className="num">
                  {t.dead_letters > 0 ? <a href="#/dead-letters" className="bad">{formatCount(t.dead_letters)}</a> : 0}
                </td>
                <ConsumerState
                  paused={pausedOf(t.contract, t.consumer)}
                  onToggle={() => setPausing({ contract: t.contract, consumer: t.consumer, paused: pausedOf(t.contract, t.consumer) })}
                />
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {pausing && (
        <PauseDialog
          {...pausing}
          onClose={(changed) => {
            setPausing(null);
            if (changed) {
              void queryClient.invalidateQueries({ queryKey: keys.pauses() });
              void queryClient.invalidateQueries({ queryKey: keys.consumerOverview() });
            }
          }}
        />
      )}
      <div className="charts">
        <section className="card">
          <h2>Lag over time</h2>
          <LagChart />
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
function Throughput() {
  const rates = useQuery({ queryKey: keys.throughput(), queryFn: () => unwrap(commands.attemptRates({ contract: null, minutes: 60 })) });
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
