// The actions an operator takes — redrive, consume, clear, pause, copy — each
// through a dialog that names exactly what will change and shows the outcome.
import { useEffect, useState } from "react";
import type { ConsumeMode, ConsumePreview, DeadLetterRef, ImportOutcome, PausedConsumer, RedriveAction } from "./bindings";
import { commands, currentTransport } from "./commands";
import { go } from "./route";
import { unwrap } from "./api";
import { gate } from "./gate";
import { useCloseAfter, useSwitchConnection } from "./live";
import { ConfirmDialog, ErrorBox, useConnection } from "./ui";

export type Target = DeadLetterRef;

export function RedriveDialog({ targets, action, onClose }: { targets: Target[]; action: RedriveAction; onClose: (changed: boolean) => void }) {
  const close = useCloseAfter("redrive", onClose);
  const one = targets.length === 1 ? targets[0] : null;
  const what =
    action === "retry"
      ? "runs again with a fresh failure budget"
      : "is settled without running, and the consumer moves on to the next index";
  return (
    <ConfirmDialog
      title={action === "retry" ? "Redrive: retry" : "Redrive: skip"}
      confirm={action === "retry" ? `Retry ${targets.length}` : `Skip ${targets.length}`}
      danger={action === "skip"}
      onClose={close}
      run={async () => {
        if (one) {
          const r = await unwrap(commands.deadLetterRedrive({ target: one, action }));
          return r.redriven ? `Redriven: ${one.consumer} at index ${one.index} (${action}).` : "Nothing changed: that head is no longer dead.";
        }
        const p = await unwrap(commands.deadLetterRedriveMany({ targets, action }));
        return `Redriven ${p.done} of ${p.total}${p.failed ? `; ${p.failed} were no longer dead or failed` : ""}.`;
      }}
    >
      {one ? (
        <p>
          The dead letter of consumer <b>{one.consumer}</b> at index <b>{one.index}</b> of session{" "}
          <code>
            {one.contract}/{one.session}
          </code>{" "}
          {what}.
        </p>
      ) : (
        <>
          <p>
            {targets.length} dead letters: each {what}.
          </p>
          <ul className="compact">
            {targets.slice(0, 8).map((t) => (
              <li key={`${t.contract}/${t.session}/${t.consumer}/${t.index}`}>
                <code>
                  {t.contract}/{t.session}
                </code>{" "}
                {t.consumer} @{t.index}
              </li>
            ))}
            {targets.length > 8 && <li>… and {targets.length - 8} more</li>}
          </ul>
        </>
      )}
    </ConfirmDialog>
  );
}

export function ClearDialog({ contract, session, head, onClose }: { contract: string; session: string; head: number; onClose: (changed: boolean) => void }) {
  const close = useCloseAfter("clear", onClose);
  return (
    <ConfirmDialog
      title="Clear session"
      confirm={`Clear through ${head}`}
      danger
      onClose={close}
      run={async () => {
        const r = await unwrap(commands.sessionClear({ contract, session, if_last_index: head }));
        return r.cleared
          ? `Cleared ${contract}/${session} through index ${r.index}.`
          : `Nothing cleared: the head moved to ${r.index} since you looked. Look again and retry.`;
      }}
    >
      <p>
        Session <code>{contract}/{session}</code> is cleared through index <b>{head}</b>, the head shown: its events
        up to {head} leave the log's reads and no consumer will run them. If the head has moved since, nothing is
        cleared.
      </p>
    </ConfirmDialog>
  );
}

export function ConsumeDialog({ contract, session, consumer, head, onClose }: { contract: string; session: string; consumer: string; head: number; onClose: (changed: boolean) => void }) {
  const connection = useConnection();
  const close = useCloseAfter("consume", onClose);
  const runGate = gate(connection, "consume.run");
  const [mode, setMode] = useState<ConsumeMode>(runGate.allowed ? "run" : "ack");
  const [through, setThrough] = useState(head);
  const [exportPath, setExportPath] = useState("");
  const [preview, setPreview] = useState<ConsumePreview | null>(null);
  const [previewError, setPreviewError] = useState<unknown>(null);
  const request = { contract, session, consumer, through, mode, export_path: mode === "export" ? exportPath : null };
  // What the consume would take, again whenever the cursor or the index changes (the file it writes to does not count).
  useEffect(() => {
    let current = true;
    unwrap(commands.consumePreview({ contract, session, consumer, through, mode, export_path: null }))
      .then((p) => {
        if (!current) return;
        setPreview(p);
        setPreviewError(null);
      })
      .catch((e: unknown) => {
        if (current) setPreviewError(e);
      });
    return () => {
      current = false;
    };
  }, [contract, session, consumer, through, mode]);
  const modeText = { run: "running the consumer's own code on each", ack: "acknowledging each (recorded as done by you, not run)", export: `writing each as a JSON line to ${exportPath || "the file"}, then advancing` }[mode];
  return (
    <ConfirmDialog
      title="Consume"
      confirm={`Consume ${preview?.events ?? ""} events`}
      onClose={close}
      run={async () => {
        const r = await unwrap(commands.sessionConsume(request));
        return `${consumer} is now at index ${r.index} of ${contract}/${session}.`;
      }}
    >
      <label className="field">
        Through index
        <input type="number" min={1} max={head} value={through} onChange={(e) => setThrough(Math.max(1, Number(e.target.value) || 1))} data-testid="consume-through" />
      </label>
      <label className="field">
        Mode
        <select value={mode} onChange={(e) => setMode(e.target.value as ConsumeMode)} data-testid="consume-mode">
          <option value="run" disabled={!runGate.allowed}>
            run (the consumer's own code)
          </option>
          <option value="ack">ack (advance, recorded as acknowledged)</option>
          <option value="export">export (JSON lines to a file, then advance)</option>
        </select>
      </label>
      {mode === "export" && (
        <label className="field">
          File to append to <small>(on the machine running the Studio)</small>
          <input value={exportPath} onChange={(e) => setExportPath(e.target.value)} placeholder="/tmp/export.jsonl" />
        </label>
      )}
      <ErrorBox error={previewError} />
      {preview && (
        <p data-testid="consume-preview">
          Moves <b>{consumer}</b> of <code>{contract}/{session}</code> through index <b>{preview.through_index}</b>:{" "}
          <b>{preview.events}</b> events from index {preview.from_index}, {modeText}.
        </p>
      )}
    </ConfirmDialog>
  );
}

/** Pause a consumer store-wide (with a reason everyone will see), or resume it. */
export function PauseDialog({ contract, consumer, paused, onClose }: { contract: string; consumer: string; paused: PausedConsumer | null; onClose: (changed: boolean) => void }) {
  const [reason, setReason] = useState("");
  const close = useCloseAfter("pause", onClose);
  if (paused) {
    return (
      <ConfirmDialog
        title="Resume consumer"
        confirm="Resume"
        onClose={close}
        run={async () => {
          const resumed = await unwrap(commands.consumerResume({ contract, consumer }));
          return resumed ? `${consumer} of ${contract} is running again: its held work drains in the background.` : `${consumer} was not paused.`;
        }}
      >
        <p>
          <b>{consumer}</b> of <code>{contract}</code> was paused by {paused.actor}: {paused.reason}. Every process may
          claim its work again; sessions it fell behind in drain on the next rescue pass.
        </p>
      </ConfirmDialog>
    );
  }
  return (
    <ConfirmDialog
      title="Pause consumer"
      confirm="Pause"
      danger
      onClose={close}
      run={async () => {
        const p = await unwrap(commands.consumerPause({ contract, consumer, reason }));
        return `${p.consumer} of ${p.contract} is paused: no process claims its work until it is resumed.`;
      }}
    >
      <p>
        <b>{consumer}</b> of <code>{contract}</code> stops being claimed in every session, by every process. Attempts
        already running finish; its lag grows until it is resumed.
      </p>
      <label className="field">
        Reason <small>(shown to everyone who sees it paused)</small>
        <input value={reason} onChange={(e) => setReason(e.target.value)} data-testid="pause-reason" placeholder="e.g. bad deploy of the mailer" />
      </label>
    </ConfirmDialog>
  );
}

/**
 * Copy a session (events, heads, dead letters, snapshots) into a local SQLite
 * file — read-only connections may, since the source is only read — then open
 * the copy to replay its consumers there.
 */
export function CopyDialog({ contract, session, onClose }: { contract: string; session: string; onClose: (changed: boolean) => void }) {
  const connection = useConnection();
  const switchConnection = useSwitchConnection();
  const [asSession, setAsSession] = useState("");
  const [to, setTo] = useState("");
  const [copied, setCopied] = useState<ImportOutcome | null>(null);
  const [openError, setOpenError] = useState<unknown>(null);
  const web = currentTransport() === "http";
  const openCopy = async () => {
    if (!copied) return;
    try {
      const info = await unwrap(commands.connectionOpen({ url: copied.url, profile: null, password: null, read_only: null }));
      switchConnection(info);
      go({ view: "session", contract: copied.contract, session: copied.session, tab: "consumers" });
      onClose(false);
    } catch (error) {
      setOpenError(error);
    }
  };
  return (
    <ConfirmDialog
      title="Copy to dev store"
      confirm="Copy"
      onClose={onClose}
      run={async () => {
        const done = await unwrap(
          commands.sessionCopy({ contract, session, as_session: asSession.trim() || null, to: to.trim() || null }),
        );
        setCopied(done);
        return `Copied ${done.events} events, ${done.heads} heads and ${done.snapshots} snapshots into ${done.url} as ${done.contract}/${done.session}.`;
      }}
    >
      <p>
        Session <code>{contract}/{session}</code> is read{connection?.read_only ? " (this connection stays read-only)" : ""} and
        written whole — events, cursors and heads with their failures, dead letters, snapshots — into a local SQLite
        file, where you can consume and redrive it without touching this store.
      </p>
      <label className="field">
        New session id <small>(empty: the same id)</small>
        <input value={asSession} onChange={(e) => setAsSession(e.target.value)} data-testid="copy-as" placeholder={session} />
      </label>
      <label className="field">
        {web ? "File name, in the server's export directory" : "SQLite file"} <small>(empty: {web ? "copies.sqlite" : "the dev store, .a2/dev.sqlite"})</small>
        <input value={to} onChange={(e) => setTo(e.target.value)} data-testid="copy-to" />
      </label>
      {copied && (
        <button type="button" className="primary" data-testid="open-copy" onClick={() => void openCopy()}>
          Open the copy
        </button>
      )}
      <ErrorBox error={openError} />
    </ConfirmDialog>
  );
}
