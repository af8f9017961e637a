// Who is in a session now: each participant's live presence fields (the
// app's second plane, never in the log), with the value, the log index the
// writer had seen, how long ago the sender stamped it and how long it lives
// without a refresh. Re-read on every store change and every 2 s, since
// values expire with the clock.
import { useQuery } from "@tanstack/react-query";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatAge, formatTime } from "../format";
import { JsonView } from "../json";
import { keys } from "../keys";
import { Empty, ErrorBox } from "../ui";

export function Presence({ contract, session }: { contract: string; session: string }) {
  const cells = useQuery({
    queryKey: keys.presence(contract, session),
    queryFn: () => unwrap(commands.presenceList({ contract, session })),
  });
  if (cells.error) return <ErrorBox error={cells.error} />;
  if (!cells.data) return <p className="muted">Reading who is here…</p>;
  if (cells.data.length === 0)
    return <Empty>No one is present in this session: no participant has a live presence value (they expire unless refreshed).</Empty>;
  const participants = new Set(cells.data.map((c) => c.participant)).size;
  return (
    <>
      <p className="muted" data-testid="presence-count">
        {participants} participant{participants === 1 ? "" : "s"} present
      </p>
      <table data-testid="presence-table">
        <thead>
          <tr>
            <th>Participant</th>
            <th>Field</th>
            <th>Value</th>
            <th>Seen</th>
            <th>Stamped</th>
            <th>Expires in</th>
          </tr>
        </thead>
        <tbody>
          {cells.data.map((c, i) => (
            <tr key={`${c.participant}/${c.field}`} data-testid="presence-row" data-participant={c.participant} data-field={c.field}>
                <td>{i === 0 || cells.data[i - 1].participant !== c.participant ? <strong>{c.participant}</strong> : ""}</td>
                <td>
                  <code>{c.field}</code>
                </td>
                <td>
                  <JsonView text={c.value} />
                </td>
                <td>#{c.seen}</td>
                <td title={formatTime(c.at)}>{c.age_ms >= 0 ? `${formatAge(c.age_ms)} ago` : `${formatAge(-c.age_ms)} ahead (sender's clock)`}</td>
                <td className={c.expires_in_ms < 10_000 ? "warn" : ""} title={formatTime(c.expires_at)}>
                  {formatAge(c.expires_in_ms)}
                </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
