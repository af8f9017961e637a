// Who is serving: every engine process registered with this store (live, or
// gone within a day), where it runs, which build, which consumers, and when
// it last beat. A process three beats late is gone: its leases lapse and
// another process (or the next start) takes its work over.
import { useQuery } from "@tanstack/react-query";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatRelative, formatTime } from "../format";
import { keys } from "../keys";
import { Empty, ErrorBox } from "../ui";

export function Processes() {
  const processes = useQuery({ queryKey: keys.processes(), queryFn: () => unwrap(commands.processList({ contract: null })) });
  const now = processes.dataUpdatedAt;
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
              <tr key={p.id} data-testid="process-row" data-live={p.live}>
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
                <td>{formatTime(p.started_at)}</td>
                <td>{formatRelative(p.last_seen, now)}</td>
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
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
