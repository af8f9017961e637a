// Connect: saved profiles, recent stores, and a new connection (a SQLite
// file or a Postgres URL). Remote Postgres opens read-only by default;
// passwords go to the OS keychain, never into the profile file.
import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { commands, type ConnectionInfo, type ConnectionOpen } from "../bindings";
import { unwrap } from "../api";
import { defaultReadOnly } from "../gate";
import { ErrorBox } from "../ui";
import type { Transport } from "../transport";
import { keys } from "../keys";

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
  const client = useQueryClient();
  const profiles = useQuery({ queryKey: keys.profiles(), queryFn: () => unwrap(commands.profileList({})) });
  const [kind, setKind] = useState<"sqlite" | "postgres">("sqlite");
  const [path, setPath] = useState(".a2/dev.sqlite");
  const [pgUrl, setPgUrl] = useState("postgres://127.0.0.1:5432/test");
  const [password, setPassword] = useState("");
  const [readOnly, setReadOnly] = useState<boolean | null>(null);
  const [profileName, setProfileName] = useState("");

  const url = kind === "sqlite" ? `sqlite:${path}` : pgUrl;
  const effectiveReadOnly = readOnly ?? (kind === "postgres" && defaultReadOnly(pgUrl));
  const urlWithPassword = () => {
    if (kind !== "postgres" || !password) return url;
    return url.replace(/^(postgres(?:ql)?:\/\/)([^@/:]+)@/, (_m, scheme: string, user: string) => `${scheme}${user}:${encodeURIComponent(password)}@`);
  };

  const open = useMutation({
    mutationFn: (request: ConnectionOpen) => unwrap(commands.connectionOpen(request)),
    onSuccess: (info) => {
      client.clear();
      onConnected(info);
    },
  });
  const save = useMutation({
    mutationFn: () =>
      unwrap(commands.profileSave({ name: profileName.trim(), url, password: password || null, read_only: effectiveReadOnly })),
    onSuccess: () => void client.invalidateQueries({ queryKey: keys.profiles() }),
  });
  const remove = useMutation({
    mutationFn: (name: string) => unwrap(commands.profileDelete({ name })),
    onSuccess: () => void client.invalidateQueries({ queryKey: keys.profiles() }),
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
            onChange={(e) => setReadOnly(e.target.checked)}
            data-testid="read-only-switch"
          />
          Read-only {kind === "postgres" && defaultReadOnly(pgUrl) && <small>(on by default for a remote host)</small>}
        </label>
        <div className="row">
          <button
            type="button"
            className="primary"
            data-testid="connect"
            disabled={open.isPending}
            onClick={() => open.mutate({ url: urlWithPassword(), profile: null, read_only: effectiveReadOnly })}
          >
            {open.isPending ? "Connecting…" : "Connect"}
          </button>
          <input placeholder="profile name" value={profileName} onChange={(e) => setProfileName(e.target.value)} aria-label="Profile name" />
          <button type="button" disabled={!profileName.trim() || save.isPending} onClick={() => save.mutate()}>
            Save profile
          </button>
        </div>
        <ErrorBox error={open.error ?? save.error} />
      </section>

      <section className="card">
        <h2>Saved profiles</h2>
        <ErrorBox error={profiles.error ?? remove.error} />
        {profiles.data?.profiles.length ? (
          <ul className="list">
            {profiles.data.profiles.map((p) => (
              <li key={p.name}>
                <button type="button" className="link" onClick={() => open.mutate({ url: null, profile: p.name, read_only: null })}>
                  {p.name}
                </button>{" "}
                <code>{p.url}</code> {p.read_only && <span className="badge ro">read-only</span>}
                {p.has_password && <span className="badge">keychain</span>}
                <button type="button" className="small" onClick={() => remove.mutate(p.name)} aria-label={`Delete ${p.name}`}>
                  ✕
                </button>
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
                <button type="button" className="link" onClick={() => open.mutate({ url: r, profile: null, read_only: defaultReadOnly(r) ? true : null })}>
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
