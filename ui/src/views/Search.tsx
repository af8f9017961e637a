// Search a contract's sessions by what their events hold: a payload JSON
// containment, a type, an id. The Studio answers a chunk of sessions a call;
// this view walks the calls, shows how far it got, and stops when told.
import { useEffect, useRef, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { commands, type SearchHit, type SearchPage } from "../bindings";
import { unwrap } from "../api";
import { formatCount, formatTime } from "../format";
import { go, href } from "../route";
import { ErrorBox, Empty } from "../ui";
import { keys } from "../keys";

type Progress = { scanned: number; total: number; running: boolean; done: boolean };

export function Search(props: { contract: string; payload: string; type: string; id: string }) {
  const contracts = useQuery({ queryKey: keys.contracts(), queryFn: () => unwrap(commands.contractList({})) });
  const [contract, setContract] = useState(props.contract);
  const [payload, setPayload] = useState(props.payload);
  const [type, setType] = useState(props.type);
  const [id, setId] = useState(props.id);
  const [hits, setHits] = useState<SearchHit[]>([]);
  const [progress, setProgress] = useState<Progress>({ scanned: 0, total: 0, running: false, done: false });
  const [error, setError] = useState<unknown>(null);
  const stop = useRef(false);
  const chosen = contract || (contracts.data?.length === 1 ? contracts.data[0] : "");

  const run = async (target: string) => {
    stop.current = false;
    setHits([]);
    setError(null);
    setProgress({ scanned: 0, total: 0, running: true, done: false });
    let after: string | null = null;
    let scanned = 0;
    let total = 0;
    try {
      do {
        const page: SearchPage = await unwrap(
          commands.sessionSearch({ contract: target, payload: payload || null, event_type: type || null, event_id: id || null, after, scan: null }),
        );
        total = page.total ?? total;
        scanned += page.scanned;
        after = page.scanned_through;
        setHits((h) => [...h, ...page.found]);
        setProgress({ scanned, total, running: after !== null && !stop.current, done: after === null });
      } while (after !== null && !stop.current);
    } catch (e) {
      setError(e);
      setProgress((p) => ({ ...p, running: false }));
    }
  };

  // A search named in the address (from the palette or a link) starts at once.
  useEffect(() => {
    if (chosen && (props.payload || props.type || props.id)) void run(chosen);
    return () => {
      stop.current = true;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [chosen]);

  const submit = () => go({ view: "search", contract: chosen, payload, type, id });
  const pct = progress.total ? Math.min(100, (progress.scanned / progress.total) * 100) : 0;
  return (
    <div className="page">
      <h1>Search</h1>
      <form
        className="card filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (href({ view: "search", contract: chosen, payload, type, id }) === window.location.hash) void run(chosen);
          else submit();
        }}
      >
        <label className="field">
          Contract
          <select value={chosen} onChange={(e) => setContract(e.target.value)} data-testid="search-contract">
            <option value="">choose…</option>
            {contracts.data?.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <label className="field grow">
          Payload contains <small>(JSON)</small>
          <input value={payload} onChange={(e) => setPayload(e.target.value)} placeholder='{"customer": "c-7"}' data-testid="search-payload" spellCheck={false} />
        </label>
        <label className="field">
          Type
          <input value={type} onChange={(e) => setType(e.target.value)} placeholder="order.placed" data-testid="search-type" />
        </label>
        <label className="field">
          Event id
          <input value={id} onChange={(e) => setId(e.target.value)} data-testid="search-id" />
        </label>
        <button type="submit" className="primary" disabled={!chosen || progress.running} data-testid="search-run">
          Search
        </button>
        {progress.running && (
          <button type="button" onClick={() => (stop.current = true)} data-testid="search-stop">
            Stop
          </button>
        )}
      </form>
      <ErrorBox error={error} />
      {(progress.running || progress.done || progress.scanned > 0) && (
        <p className="progress" data-testid="search-progress">
          <progress max={100} value={pct} /> searched {formatCount(progress.scanned)} of {formatCount(progress.total)} sessions ·{" "}
          {formatCount(hits.length)} found{progress.done ? " — complete" : progress.running ? "…" : " — stopped"}
        </p>
      )}
      {progress.done && hits.length === 0 && <Empty>No session of {chosen} has an event like that.</Empty>}
      {hits.length > 0 && (
        <table data-testid="search-results">
          <thead>
            <tr>
              <th>Session</th>
              <th className="num">Matches</th>
              <th className="num">First</th>
              <th>Type</th>
              <th>When</th>
              <th>Payload</th>
            </tr>
          </thead>
          <tbody>
            {hits.map((h) => (
              <tr key={h.session} data-testid="search-hit" data-session={h.session}>
                <td>
                  <a href={href({ view: "session", contract: chosen, session: h.session, tab: "events", index: h.first.index })}>{h.session}</a>
                </td>
                <td className="num">{formatCount(h.matches)}</td>
                <td className="num">{h.first.index}</td>
                <td>{h.first.type}</td>
                <td>{formatTime(h.first.created_at)}</td>
                <td>
                  <code className="clip">{h.first.payload}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
