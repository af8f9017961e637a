// Search a contract's sessions by what their events hold: a payload JSON
// containment, a type, an id. The Studio answers a chunk of sessions a call;
// this view walks the calls, shows how far it got, and stops when told.
import { useCallback, useEffect, useRef, useState, type RefObject } from "react";
import { useQuery } from "@tanstack/react-query";
import type { SearchHit, SearchPage } from "../bindings";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatCount, formatTime } from "../format";
import { go, href } from "../route";
import { ErrorBox, Empty } from "../ui";
import { keys } from "../keys";

type Progress = { scanned: number; total: number; running: boolean; done: boolean };
type Criteria = { contract: string; payload: string; type: string; id: string };
/** A walk over the sessions: `stopped` by the Stop button (it says so), `cancelled` when another starts or the view goes. */
type Walk = { stopped: boolean; cancelled: boolean };

/** The search's pages, a chunk of sessions a call, until the contract's end. */
async function* searchPages(criteria: Criteria): AsyncGenerator<SearchPage> {
  let after: string | null = null;
  do {
    const page: SearchPage = await unwrap(
      commands.sessionSearch({
        contract: criteria.contract,
        payload: criteria.payload || null,
        event_type: criteria.type || null,
        event_id: criteria.id || null,
        after,
        scan: null,
      }),
    );
    yield page;
    after = page.scanned_through;
  } while (after !== null);
}

/** Start a walk, cancelling any under way. */
function begin(current: RefObject<Walk>): Walk {
  current.current.cancelled = true;
  current.current = { stopped: false, cancelled: false };
  return current.current;
}

const IDLE: Progress = { scanned: 0, total: 0, running: false, done: false };

export function Search(props: Criteria) {
  const contracts = useQuery({ queryKey: keys.contracts(), queryFn: () => unwrap(commands.contractList({})) });
  const [contract, setContract] = useState(props.contract);
  const [payload, setPayload] = useState(props.payload);
  const [type, setType] = useState(props.type);
  const [id, setId] = useState(props.id);
  const [hits, setHits] = useState<SearchHit[]>([]);
  const [progress, setProgress] = useState<Progress>(IDLE);
  const [error, setError] = useState<unknown>(null);
  const current = useRef<Walk>({ stopped: false, cancelled: false });
  const chosen = contract || (contracts.data?.length === 1 ? contracts.data[0] : "");

  /** Walk the search's pages into the view; its first page replaces what an earlier search showed. */
  const walk = useCallback(async (criteria: Criteria, walk: Walk) => {
    let scanned = 0;
    let total = 0;
    let first = true;
    try {
      for await (const page of searchPages(criteria)) {
        if (walk.cancelled) return;
        total = page.total ?? total;
        scanned += page.scanned;
        const found = page.found;
        const fresh = first;
        first = false;
        setHits((h) => (fresh ? found : [...h, ...found]));
        const done = page.scanned_through === null;
        setProgress({ scanned, total, running: !done && !walk.stopped, done });
        if (walk.stopped) return;
      }
    } catch (e) {
      if (walk.cancelled) return;
      setError(e);
      setProgress((p) => ({ ...p, running: false }));
    }
  }, []);

  const run = (target: string) => {
    const started = begin(current);
    setHits([]);
    setError(null);
    setProgress({ ...IDLE, running: true });
    void walk({ contract: target, payload, type, id }, started);
  };

  // A search named in the address (from the palette or a link) starts at once, in the contract chosen.
  const named = Boolean(props.payload || props.type || props.id);
  useEffect(() => {
    if (!chosen || !named) return;
    const started = begin(current);
    void walk({ contract: chosen, payload: props.payload, type: props.type, id: props.id }, started);
    return () => {
      started.cancelled = true;
    };
  }, [chosen, named, props.payload, props.type, props.id, walk]);

  const submit = () => go({ view: "search", contract: chosen, payload, type, id });
  const pct = progress.total ? Math.min(100, (progress.scanned / progress.total) * 100) : 0;
  return (
    <div className="page">
      <h1>Search</h1>
      <form
        className="card filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (href({ view: "search", contract: chosen, payload, type, id }) === window.location.hash) run(chosen);
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
          <button type="button" onClick={() => (current.current.stopped = true)} data-testid="search-stop">
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
