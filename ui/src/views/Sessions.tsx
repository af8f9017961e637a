// Sessions of a contract: keyset pages with filters and sort. Counts read
// "50+" while more pages remain, never a slow exact count.
import { useState } from "react";
import { useInfiniteQuery } from "@tanstack/react-query";
import type { SessionSort } from "../bindings";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatCount, formatLag, formatMoment } from "../format";
import { go, href } from "../route";
import { ErrorBox, Empty } from "../ui";
import { keys } from "../keys";

const PAGE = 100;

export function Sessions({ contract }: { contract: string }) {
  const [prefix, setPrefix] = useState("");
  const [hasDead, setHasDead] = useState(false);
  const [lagging, setLagging] = useState(false);
  const [sort, setSort] = useState<SessionSort>("id");
  const filtered = prefix !== "" || hasDead || lagging;
  const effectiveSort: SessionSort = filtered ? "id" : sort;
  const pages = useInfiniteQuery({
    queryKey: keys.sessions(contract, prefix, hasDead, lagging, effectiveSort),
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }) =>
      unwrap(
        commands.sessionList({
          contract,
          id_prefix: prefix || null,
          has_dead_letters: hasDead,
          lagging,
          sort: effectiveSort,
          after: pageParam,
          limit: PAGE,
        }),
      ),
    getNextPageParam: (last) => last.next,
  });
  const rows = pages.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <div className="page">
      <h1>
        Sessions of <code>{contract}</code>{" "}
        <small className="muted" data-testid="session-count">
          {formatCount(rows.length, pages.hasNextPage)} shown
        </small>
      </h1>
      <div className="toolbar">
        <input placeholder="id prefix" value={prefix} onChange={(e) => setPrefix(e.target.value)} aria-label="Session id prefix" />
        <label className="check">
          <input type="checkbox" checked={hasDead} onChange={(e) => setHasDead(e.target.checked)} /> has dead letters
        </label>
        <label className="check">
          <input type="checkbox" checked={lagging} onChange={(e) => setLagging(e.target.checked)} /> lagging
        </label>
        <label>
          Sort{" "}
          <select value={effectiveSort} disabled={filtered} onChange={(e) => setSort(e.target.value as SessionSort)} title={filtered ? "Filters list by id" : undefined}>
            <option value="id">by id</option>
            <option value="activity">by last activity</option>
          </select>
        </label>
      </div>
      <ErrorBox error={pages.error} />
      <table data-testid="sessions-table">
        <thead>
          <tr>
            <th>Session</th>
            <th className="num">Head</th>
            <th className="num">Cleared through</th>
            <th>Lag</th>
            <th className="num">Dead letters</th>
            <th>Last activity</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => {
            const open = () => go({ view: "session", contract, session: s.session, tab: "events" });
            return (
              <tr key={s.session} className="clickable" tabIndex={0} onClick={open} onKeyDown={(e) => e.key === "Enter" && open()}>
                <td>
                  <a href={href({ view: "session", contract, session: s.session, tab: "events" })}>{s.session}</a>
                </td>
                <td className="num">{s.head}</td>
                <td className="num">{s.clear_index || "—"}</td>
                <td className={s.lag > 0 ? "warn" : "muted"}>{formatLag(s.lag)}</td>
                <td className={`num ${s.dead_letters > 0 ? "bad" : ""}`}>{s.dead_letters}</td>
                <td>{formatMoment(s.updated_at, pages.dataUpdatedAt)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {rows.length === 0 && !pages.isLoading && <Empty>No sessions match.</Empty>}
      {pages.hasNextPage && (
        <button type="button" onClick={() => void pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
          {pages.isFetchingNextPage ? "Loading…" : "Load more"}
        </button>
      )}
    </div>
  );
}
