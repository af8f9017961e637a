// Connect: saved profiles, recent stores, and a new connection (a SQLite
// file or a Postgres URL). Whether a URL opens read-only is the Studio's
// decision (`connection_default`): every Postgres does. Writing to Postgres
// is a step of its own: the store opens read-only first, then the person
// confirms the database, host and server it will write to. Passwords go to
// the driver and the OS keychain, never into a URL or the profile file.
import { useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import type { ConnectionInfo, ConnectionOpen } from "../bindings";
import { commands } from "../commands";
import { unwrap } from "../api";
import { ErrorBox } from "../ui";
import type { Transport } from "../transport";
import { keys } from "../keys";
import { useRefreshAfter } from "../live";

async function pickSqliteFile(): Promise<string | null> {
  const { open } = await import("@tauri-apps/plugin-dialog");
  const chosen = await open({
    multiple: false,
    directory: false,
    filters: [{ name: "SQLite store", extensions: ["sqlite", "sqlite3", "db"] }],
  });
  return typeof chosen === "string" ? chosen : null;
}

export function Connect({ transport, onConnected }: { transport: Transport; onConnected: (info: ConnectionInfo) => void }) {
  const refreshAfter = useRefreshAfter();
  const profiles = useQuery({ queryKey: keys.profiles(), queryFn: () => unwrap(commands.profileList({})) });
  const [kind, setKind] = useState<"sqlite" | "postgres">("sqlite");
  const [path, setPath] = useState(".a2/dev.sqlite");
  const [pgUrl, setPgUrl] = useState("postgres://127.0.0.1:5432/test");
  const [password, setPassword] = useState("");
  const [readOnly, setReadOnly] = useState<boolean | null>(null);
  const [profileName, setProfileName] = useState("");

  // A Postgres the person asked to write to, opened read-only until they confirm it by name.
  const [confirmWrite, setConfirmWrite] = useState<{ info: ConnectionInfo; request: ConnectionOpen } | null>(null);

  const url = kind === "sqlite" ? `sqlite:${path}` : pgUrl;
  const defaults = useQuery({
    queryKey: keys.connectionDefault(url),
    queryFn: () => unwrap(commands.connectionDefault({ url })),
  });
  const locked = defaults.data?.locked ?? false;
  const effectiveReadOnly = locked || (readOnly ?? defaults.data?.read_only ?? true);

  const finish = (info: ConnectionInfo) => onConnected(info);
  /** `wantWrite`: the person asked to write to a Postgres; it opens read-only, then they confirm by name. */
  const open = useMutation({
    mutationFn: ({ request }: { request: ConnectionOpen; wantWrite: boolean }) => unwrap(commands.connectionOpen(request)),
    onSuccess: (info, { request, wantWrite }) => {
      if (wantWrite && info.server) {
        setConfirmWrite({ info, request: { ...request, read_only: false } });
        return;
      }
      finish(info);
    },
  });
  const openWrite = useMutation({
    mutationFn: (request: ConnectionOpen) => unwrap(commands.connectionOpen(request)),
    onSuccess: finish,
  });
  const connect = () => {
    const wantWrite = kind === "postgres" && readOnly === false;
    const request: ConnectionOpen = {
      url,
      profile: null,
      password: kind === "postgres" && password ? password : null,
      // null: as the Studio decides; only a switch the person moved is sent.
      read_only: wantWrite ? null : readOnly,
    };
    open.mutate({ request, wantWrite });
  };
  const devStore = useMutation({ mutationFn: () => unwrap(commands.devStoreOpen({})), onSuccess: finish });
  const openNamed = (request: ConnectionOpen) => open.mutate({ request, wantWrite: false });
  const save = useMutation({
    mutationFn: () =>
      unwrap(commands.profileSave({ name: profileName.trim(), url, password: password || null, read_only: effectiveReadOnly })),
    onSuccess: () => refreshAfter("profiles"),
  });
  const remove = useMutation({
    mutationFn: (name: string) => unwrap(commands.profileDelete({ name })),
    onSuccess: () => refreshAfter("profiles"),
  });

  return (
    <div className="connect">
      <h1>Connect to an A2 store</h1>
      <section className="card">
        <h2>New connection</h2>
        <div className="segmented" role="tablist">
          <button type="button" className={kind === "sqlite" ? "on" : ""} onClick={() => setKind("sqlite")}>
            SQLite file
          </button>
          <button type="button" className={kind === "postgres" ? "on" : ""} onClick={() => setKind("postgres")}>
            Postgres
          </button>
        </div>
        {kind === "sqlite" ? (
          <label className="field">
            File
            <span className="row">
              <input value={path} onChange={(e) => setPath(e.target.value)} aria-label="SQLite file" data-testid="sqlite-path" />
              {transport === "tauri" && (
                <button
                  type="button"
                  onClick={() => void pickSqliteFile().then((chosen) => chosen && setPath(chosen))}
                >
                  Choose…
                </button>
              )}
            </span>
          </label>
        ) : (
          <>
            <label className="field">
              URL
              <input
                value={pgUrl}
                onChange={(e) => setPgUrl(e.target.value)}
                placeholder="postgres://user@host:5432/db"
                aria-label="Postgres URL"
                data-testid="postgres-url"
              />
            </label>
            <label className="field">
              Password <small>(kept in the OS keychain when saved)</small>
              <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete="off" />
            </label>
          </>
        )}
        <label className="check">
          <input
            type="checkbox"
            checked={effectiveReadOnly}
            disabled={locked}
            onChange={(e) => setReadOnly(e.target.checked === defaults.data?.read_only ? null : e.target.checked)}
            data-testid="read-only-switch"
          />
          Read-only {defaults.data && <small>({defaults.data.reason})</small>}
        </label>
        <div className="row">
          <button
            type="button"
            className="primary"
            data-testid="connect"
            disabled={open.isPending || openWrite.isPending}
            onClick={connect}
          >
            {open.isPending ? "Connecting…" : "Connect"}
          </button>
          {transport === "tauri" && (
            <button type="button" data-testid="new-dev-store" disabled={devStore.isPending} onClick={() => devStore.mutate()} title="Your own SQLite store, with the demo in it when new">
              New dev store
            </button>
          )}
          {/* The web mode uses saved profiles and changes none (the server answers FORBIDDEN). */}
          {transport === "tauri" && (
            <>
              <input placeholder="profile name" value={profileName} onChange={(e) => setProfileName(e.target.value)} aria-label="Profile name" />
              <button type="button" disabled={!profileName.trim() || save.isPending} onClick={() => save.mutate()}>
                Save profile
              </button>
            </>
          )}
        </div>
        <ErrorBox error={open.error ?? openWrite.error ?? save.error ?? devStore.error} />
        {confirmWrite?.info.server && (
          <div className="confirm" role="alertdialog" data-testid="confirm-read-write">
            <p>
              Write to database <strong>{confirmWrite.info.server.database}</strong> on{" "}
              <code>
                {confirmWrite.info.server.host}:{confirmWrite.info.server.port}
              </code>{" "}
              (PostgreSQL {confirmWrite.info.server.version}) as role <code>{confirmWrite.info.server.session_user}</code>?
            </p>
            <div className="row">
              <button
                type="button"
                className="danger"
                data-testid="confirm-read-write-yes"
                onClick={() => {
                  const request = confirmWrite.request;
                  setConfirmWrite(null);
                  openWrite.mutate(request);
                }}
              >
                Open read-write
              </button>
              <button
                type="button"
                onClick={() => {
                  const info = confirmWrite.info;
                  setConfirmWrite(null);
                  finish(info);
                }}
              >
                Stay read-only
              </button>
            </div>
          </div>
        )}
      </section>

      <section className="card">
        <h2>Saved profiles</h2>
        <ErrorBox error={profiles.error ?? remove.error} />
        {profiles.data?.profiles.length ? (
          <ul className="list">
            {profiles.data.profiles.map((p) => (
              <li key={p.name}>
                <button type="button" className="link" onClick={() => openNamed({ url: null, profile: p.name, password: null, read_only: null })}>
                  {p.name}
                </button>{" "}
                <code>{p.url}</code> {p.read_only && <span className="badge ro">read-only</span>}
                {p.has_password && <span className="badge">keychain</span>}
                {transport === "tauri" && (
                  <button type="button" className="small" onClick={() => remove.mutate(p.name)} aria-label={`Delete ${p.name}`}>
                    ✕
                  </button>
                )}
              </li>
            ))}
          </ul>
        ) : (
          <p className="empty">No saved profiles yet.</p>
        )}
        <h2>Recent stores</h2>
        {profiles.data?.recent.length ? (
          <ul className="list">
            {profiles.data.recent.map((r) => (
              <li key={r}>
                <button type="button" className="link" onClick={() => openNamed({ url: r, profile: null, password: null, read_only: null })}>
                  {r}
                </button>
              </li>
            ))}
          </ul>
        ) : (
          <p className="empty">Nothing opened yet.</p>
        )}
      </section>
    </div>
  );
}
