// Who is serving: every engine process registered with this store (live, or
// gone within a day), where it runs, which build, which consumers, and when
// it last beat. A process three beats late is gone: its leases lapse and
// another process (or the next start) takes its work over.
import { Fragment, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatMoment } from "../format";
import { keys } from "../keys";
import { href } from "../route";
import { Empty, ErrorBox } from "../ui";

export function Processes() {
  const processes = useQuery({ queryKey: keys.processes(), queryFn: () => unwrap(commands.processList({ contract: null })) });
  const now = processes.dataUpdatedAt;
  const [open, setOpen] = useState<string | null>(null);
  return (
    <div className="page">
      <h1>Processes</h1>
      <p className="muted">
        Every server that runs a contract against this store beats every few seconds; one that missed three beats is
        gone. A clean shutdown removes its row; a crashed one stays listed here for a day.
      </p>
      <ErrorBox error={processes.error} />
      {processes.data?.length === 0 && <Empty>No process has registered with this store.</Empty>}
      {processes.data && processes.data.length > 0 && (
        <table data-testid="processes-table">
          <thead>
            <tr>
              <th>Process</th>
              <th>Contract</th>
              <th>Host</th>
              <th>Version</th>
              <th>Consumers</th>
              <th className="num">Max running</th>
              <th>Started</th>
              <th>Last seen</th>
              <th>State</th>
            </tr>
          </thead>
          <tbody>
            {processes.data.map((p) => (
              <Fragment key={p.id}>
              <tr
                data-testid="process-row"
                data-live={p.live}
                tabIndex={0}
                title="Show the heads it runs now"
                onClick={() => setOpen(open === p.id ? null : p.id)}
                onKeyDown={(e) => e.key === "Enter" && setOpen(open === p.id ? null : p.id)}
              >
                <td title={p.id}>
                  <code>{p.id.slice(0, 8)}</code>
                </td>
                <td>{p.contract}</td>
                <td>
                  {p.host} · pid {p.pid}
                </td>
                <td>{p.version}</td>
                <td>
                  {p.consumers.map((c) => (
                    <span key={c.name} className="chip" title={`${c.kind}${c.lane ? ` lane ${c.lane}` : ""}${c.types.length ? `: ${c.types.join(", ")}` : ""}`}>
                      {c.name}
                    </span>
                  ))}
                </td>
                <td className="num">{p.max_running}</td>
                <td>{formatMoment(p.started_at, now)}</td>
                <td>{formatMoment(p.last_seen, now)}</td>
                <td className={p.live ? "" : "bad"} data-testid="process-state">
                  {p.live ? "live" : "gone"}
                  {p.leads_upkeep && (
                    <small className="muted" title="Holds the contract's upkeep lease: refreshes the kept totals and prunes">
                      {" "}
                      · leads upkeep
                    </small>
                  )}
                </td>
              </tr>
              {open === p.id && (
                <tr>
                  <td colSpan={9}>
                    <ProcessHeads id={p.id} />
                  </td>
                </tr>
              )}
              </Fragment>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** The heads one process leases now: what it is running, each a link to its session. */
function ProcessHeads({ id }: { id: string }) {
  const heads = useQuery({ queryKey: keys.processHeads(id), queryFn: () => unwrap(commands.processHeads({ id })) });
  return (
    <div data-testid="process-heads">
      <ErrorBox error={heads.error} />
      {heads.data?.length === 0 && <Empty>It runs nothing right now.</Empty>}
      {heads.data && heads.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Session</th>
              <th>Consumer</th>
              <th className="num">Index</th>
              <th className="num">Attempt</th>
              <th>Leased until</th>
            </tr>
          </thead>
          <tbody>
            {heads.data.map((h) => (
              <tr key={`${h.contract}/${h.session_id}/${h.consumer}/${h.lane ?? ""}/${h.index}`} data-testid="process-head">
                <td>
                  <a href={href({ view: "session", contract: h.contract, session: h.session_id, tab: "consumers" })}>
                    {h.contract}/{h.session_id}
                  </a>
                </td>
                <td>
                  {h.consumer}
                  {h.lane ? ` · ${h.lane}` : ""}
                </td>
                <td className="num">{h.index}</td>
                <td className="num">{h.attempt}</td>
                <td>{formatMoment(h.lease_expires_at, heads.dataUpdatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
