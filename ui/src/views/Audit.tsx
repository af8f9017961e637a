// The audit log: every action taken through the Studio, the CLI or the API.
import { useInfiniteQuery } from "@tanstack/react-query";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatMoment } from "../format";
import { ErrorBox, Empty } from "../ui";
import { keys } from "../keys";

export function Audit() {
  const pages = useInfiniteQuery({
    queryKey: keys.audit(),
    initialPageParam: null as number | null,
    queryFn: ({ pageParam }) => unwrap(commands.auditList({ before: pageParam, limit: 100 })),
    getNextPageParam: (last) => (last.length === 100 ? last[last.length - 1].id : null),
  });
  const rows = pages.data?.pages.flat() ?? [];
  const now = pages.dataUpdatedAt;
  return (
    <div className="page">
      <h1>Audit</h1>
      <ErrorBox error={pages.error} />
      <table data-testid="audit-table">
        <thead>
          <tr>
            <th>When</th>
            <th>Who</th>
            <th>Action</th>
            <th>Target</th>
            <th>Parameters</th>
            <th>Outcome</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id} data-testid="audit-row">
              <td>{formatMoment(r.at, now)}</td>
              <td>
                {r.user}@{r.host}
              </td>
              <td>
                <code>{r.action}</code>
              </td>
              <td>{r.contract ? `${r.contract}${r.session ? `/${r.session}` : ""}` : "—"}</td>
              <td>
                <code>{r.parameters}</code>
              </td>
              <td>
                <code>{r.outcome}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && !pages.isLoading && <Empty>Nothing has been done through the operator API yet.</Empty>}
      {pages.hasNextPage && (
        <button type="button" onClick={() => void pages.fetchNextPage()}>
          Load more
        </button>
      )}
    </div>
  );
}
