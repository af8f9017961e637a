// The Studio's frame: the connection bar (with the read-only badge and its
// warning), navigation, the palette, live refresh and the routed view.
import { useEffect, useState, type ReactNode } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { ConnectionInfo, ReadOnlyProof, TlsView } from "./bindings";
import { commands } from "./commands";
import { unwrap } from "./api";
import { gate } from "./gate";
import { useLiveRefresh, useSwitchConnection } from "./live";
import { OpenReadWrite } from "./OpenReadWrite";
import { Palette } from "./Palette";
import { go, href, useRoute } from "./route";
import type { Transport } from "./transport";
import { ConnectionContext, ErrorBox } from "./ui";
import { Audit } from "./views/Audit";
import { Timers } from "./views/Timers";
import { Processes } from "./views/Processes";
import { Connect } from "./views/Connect";
import { DeadLetters } from "./views/DeadLetters";
import { Overview } from "./views/Overview";
import { Search } from "./views/Search";
import { Session } from "./views/Session";
import { Sessions } from "./views/Sessions";
import { keys } from "./keys";
import { LagHistoryContext, useConnectionLagHistory, type LagHistory } from "./lagHistory";

/** What each TLS state checked, in the connection's badge. */
const TLS_LABEL: Record<TlsView, string> = {
  verified: "TLS verified",
  verified_ca_only: "TLS, host not checked",
  encrypted: "TLS unverified",
  off: "TLS off",
};
/** How the store itself was proved to refuse writes, as the read-only badge says it. */
const PROOF_LABEL: Record<ReadOnlyProof, string> = {
  role: "role cannot write",
  session_verified: "session verified",
  read_only_transactions: "read-only transactions",
  replica: "replica",
  read_only_file: "file opened read-only",
};

const PROOF_TITLE: Record<ReadOnlyProof, string> = {
  role: "the database role holds no write privilege on any A2 table, nor does any role it can SET ROLE to: Postgres refuses every write",
  session_verified: "every connection was checked with SHOW transaction_read_only as it was made",
  read_only_transactions: "through the pooler, every transaction begins READ ONLY, which no pooler can drop",
  replica: "a hot standby refuses every write",
  read_only_file: "the SQLite file was opened read-only",
};

function readOnlyTitle(proof: ReadOnlyProof[]): string {
  if (proof.length === 0) return "Every action is refused by this app; the store proved nothing of its own";
  return `Every action is refused, by this app and by the store: ${proof.map((p) => PROOF_TITLE[p]).join("; ")}`;
}

const TLS_TITLE: Record<TlsView, string> = {
  verified: "Encrypted; the server's certificate chains to a trusted CA and names this host (verify-full)",
  verified_ca_only:
    "Encrypted; the server's certificate chains to a trusted CA, but the host it names was not checked (verify-ca): any trusted certificate passes. Use verify-full",
  encrypted: "Encrypted, but the server's certificate was not checked (sslmode=require): use verify-full",
  off: "Plain text: passwords and data cross the network readable",
};

/** Why the views refresh as they do: notifications, or polling (and why there is no LISTEN). */
function liveTitle(info: ConnectionInfo): string {
  if (info.live) return "Changes arrive as they happen (LISTEN/NOTIFY)";
  if (info.pooled)
    return "Through a transaction-mode pooler (pgbouncer=true), which cannot carry LISTEN: the views poll. Add listen_url= (a direct URL) for live updates";
  if (info.replica) return "A hot standby receives no notifications: the views poll";
  return "This store sends no notifications: the views poll";
}

/** What every view may ask of the open connection: the connection itself and its lag history. */
function ConnectionScope({ info, lagHistory, children }: { info: ConnectionInfo | null; lagHistory: LagHistory; children: ReactNode }) {
  return (
    <ConnectionContext.Provider value={info}>
      <LagHistoryContext.Provider value={lagHistory}>{children}</LagHistoryContext.Provider>
    </ConnectionContext.Provider>
  );
}

export function App({ transport }: { transport: Transport }) {
  const client = useQueryClient();
  const route = useRoute();
  const connection = useQuery({
    queryKey: keys.connection(),
    queryFn: () => unwrap(commands.connectionGet({})),
  });
  const info = connection.data ?? null;
  const [palette, setPalette] = useState(false);
  const demoState = useQuery({
    queryKey: keys.demoTraffic(info?.url),
    queryFn: () => unwrap(commands.demoTraffic({ on: null })),
    enabled: info !== null && info.hosts_demo,
  });
  const demoOn = demoState.data?.on ?? false;
  useLiveRefresh(info);
  const switchConnection = useSwitchConnection();
  const lagHistory = useConnectionLagHistory(info?.url ?? null);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "k") {
        e.preventDefault();
        setPalette((open) => !open);
        return;
      }
      // Arrow keys walk the rows of any table whose rows take focus.
      const row = document.activeElement;
      if (row instanceof HTMLTableRowElement && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
        let next = e.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling;
        while (next && !(next instanceof HTMLTableRowElement && next.tabIndex >= 0)) {
          next = e.key === "ArrowDown" ? next.nextElementSibling : next.previousElementSibling;
        }
        if (next instanceof HTMLTableRowElement) {
          e.preventDefault();
          next.focus();
        }
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  const demo = useMutation({
    mutationFn: (on: boolean) => unwrap(commands.demoTraffic({ on })),
    onSuccess: (state) => client.setQueryData(keys.demoTraffic(info?.url), state),
  });
  const disconnect = useMutation({
    mutationFn: () => unwrap(commands.connectionClose({})),
    onSuccess: () => {
      switchConnection(null);
      go({ view: "connect" });
    },
  });
  const connected = (next: ConnectionInfo) => {
    switchConnection(next);
    go({ view: "overview" });
  };

  if (connection.isLoading) return <div className="loading">Loading…</div>;
  if (!info || route.view === "connect") {
    return (
      <ConnectionScope info={info} lagHistory={lagHistory}>
        <div className="app">
          <main className="full">
            {info && (
              <p>
                <a href={href({ view: "overview" })}>← back to {info.url}</a>
              </p>
            )}
            <ErrorBox error={connection.error} />
            <Connect transport={transport} onConnected={connected} />
          </main>
        </div>
      </ConnectionScope>
    );
  }
  const demoGate = gate(info, "demo");
  return (
    <ConnectionScope info={info} lagHistory={lagHistory}>
      <div className="app">
        <header className="bar">
          <strong className="brand">A2 Studio</strong>
          <span className="store" title={info.url}>
            {info.kind}: <code>{info.url}</code>
          </span>
          {info.read_only ? (
            <>
              <span className="badge ro" data-testid="read-only-badge" title={readOnlyTitle(info.read_only_proof)}>
                READ-ONLY
                {info.read_only_proof.length > 0 && (
                  <span className="proof" data-testid="read-only-proof">
                    {" "}
                    · {info.read_only_proof.map((p) => PROOF_LABEL[p]).join(", ")}
                  </span>
                )}
              </span>
              <OpenReadWrite info={info} onOpened={switchConnection} />
            </>
          ) : (
            <span className="badge rw">read-write</span>
          )}
          {info.tls && (
            <span
              className={`badge tls-${info.tls}`}
              data-testid="tls-badge"
              title={
                info.sslmode_from_env
                  ? `${TLS_TITLE[info.tls]}. sslmode=${info.sslmode_from_env} came from the PGSSLMODE environment variable, not the URL: the verify-full default for a remote host did not apply`
                  : TLS_TITLE[info.tls]
              }
            >
              {TLS_LABEL[info.tls]}
              {info.sslmode_from_env && ` (PGSSLMODE=${info.sslmode_from_env})`}
            </span>
          )}
          {info.warning && (
            <span className="badge warn" data-testid="role-warning" title={info.warning}>
              {info.role_can_write ? "⚠ role could write" : "⚠ role unchecked"}
            </span>
          )}
          {info.replica && (
            <span
              className="badge warn"
              data-testid="replica-badge"
              title="A hot standby: every action is refused here (act on the primary), and what it shows trails the primary by the replay delay"
            >
              replica, {info.replica_delay_ms === null ? "nothing replayed yet" : `${Math.round(info.replica_delay_ms / 1000)} s behind`}
            </span>
          )}
          <span className="muted" data-testid="live-state" title={liveTitle(info)}>
            {info.live ? "live" : info.pooled ? "polling (pooler)" : "polling"}
          </span>
          <span className="spacer" />
          {demoGate.allowed && (
            <label className="check" title="Append demo orders every 1.5 s; the app runs their consumers">
              <input type="checkbox" checked={demoOn} onChange={(e) => demo.mutate(e.target.checked)} data-testid="demo-traffic" /> demo traffic
            </label>
          )}
          <button type="button" onClick={() => setPalette(true)} title="Command palette">
            ⌘K
          </button>
          <button type="button" onClick={() => disconnect.mutate()}>
            Disconnect
          </button>
        </header>
        <nav className="side">
          <a href={href({ view: "overview" })} className={route.view === "overview" ? "on" : ""}>
            Overview
          </a>
          <a href={href({ view: "dead-letters" })} className={route.view === "dead-letters" ? "on" : ""}>
            Dead letters
          </a>
          <a href={href({ view: "search", contract: "", payload: "", type: "", id: "" })} className={route.view === "search" ? "on" : ""}>
            Search
          </a>
          <a href={href({ view: "timers" })} className={route.view === "timers" ? "on" : ""}>
            Timers
          </a>
          <a href={href({ view: "processes" })} className={route.view === "processes" ? "on" : ""}>
            Processes
          </a>
          <a href={href({ view: "audit" })} className={route.view === "audit" ? "on" : ""}>
            Audit
          </a>
          <a href={href({ view: "connect" })}>Connections</a>
        </nav>
        <main>
          <ErrorBox error={demo.error} />
          {route.view === "overview" && <Overview />}
          {route.view === "sessions" && <Sessions contract={route.contract} />}
          {route.view === "session" && <Session {...route} />}
          {route.view === "dead-letters" && <DeadLetters />}
          {route.view === "audit" && <Audit />}
          {route.view === "timers" && <Timers />}
          {route.view === "processes" && <Processes />}
          {route.view === "search" && <Search key={href(route)} {...route} />}
        </main>
        {palette && (
          <Palette
            onClose={() => setPalette(false)}
            extra={[
              ...(demoGate.allowed ? [{ label: demoOn ? "Stop demo traffic" : "Start demo traffic", run: () => demo.mutate(!demoOn) }] : []),
              { label: "Disconnect", run: () => disconnect.mutate() },
            ]}
          />
        )}
      </div>
    </ConnectionScope>
  );
}
