// Small shared pieces: errors with their code, copy buttons, the confirm
// dialog every action goes through, and the open connection.
import { createContext, useContext, useEffect, useRef, useState, type ReactNode } from "react";
import type { ConnectionInfo } from "./bindings";
import { errorCode, errorMessage } from "./api";
import type { Gate } from "./gate";

export const ConnectionContext = createContext<ConnectionInfo | null>(null);

export function useConnection(): ConnectionInfo | null {
  return useContext(ConnectionContext);
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      <code className="error-code">{errorCode(error)}</code> {errorMessage(error)}
    </div>
  );
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      className="copy"
      title={`Copy ${text.length > 60 ? "to clipboard" : text}`}
      onClick={(e) => {
        e.stopPropagation();
        void navigator.clipboard?.writeText(text).then(() => {
          setDone(true);
          setTimeout(() => setDone(false), 1200);
        });
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}

/** A button for an action the connection may forbid: disabled with the reason as its title. */
export function ActionButton(props: { gate: Gate; onClick: () => void; children: ReactNode; danger?: boolean; testId?: string }) {
  const { gate, onClick, children, danger, testId } = props;
  return (
    <button
      type="button"
      className={danger ? "danger" : "primary"}
      disabled={!gate.allowed}
      title={gate.allowed ? undefined : gate.reason}
      data-testid={testId}
      onClick={onClick}
    >
      {children}
    </button>
  );
}

export function GateNote({ gate }: { gate: Gate }) {
  if (gate.allowed) return null;
  return <p className="gate-note">{gate.reason}</p>;
}

/** Confirm exactly what will change, run it, then show the outcome. */
export function ConfirmDialog(props: {
  title: string;
  children: ReactNode;
  confirm: string;
  danger?: boolean;
  run: () => Promise<string>;
  onClose: (changed: boolean) => void;
}) {
  const [state, setState] = useState<{ phase: "ask" | "running" | "done"; outcome?: string; error?: unknown }>({ phase: "ask" });
  const dialog = useRef<HTMLDivElement>(null);
  useEffect(() => {
    dialog.current?.querySelector<HTMLButtonElement>("button[data-autofocus]")?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") props.onClose(state.phase === "done");
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });
  const go = async () => {
    setState({ phase: "running" });
    try {
      setState({ phase: "done", outcome: await props.run() });
    } catch (error) {
      setState({ phase: "done", error });
    }
  };
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-modal="true" aria-label={props.title} ref={dialog}>
        <h2>{props.title}</h2>
        <div className="modal-body">{props.children}</div>
        {state.phase === "done" && state.outcome && (
          <p className="outcome" data-testid="outcome">
            {state.outcome}
          </p>
        )}
        {state.phase === "done" && <ErrorBox error={state.error} />}
        <div className="modal-actions">
          {state.phase === "done" ? (
            <button type="button" data-autofocus onClick={() => props.onClose(true)}>
              Close
            </button>
          ) : (
            <>
              <button type="button" onClick={() => props.onClose(false)} disabled={state.phase === "running"}>
                Cancel
              </button>
              <button
                type="button"
                data-autofocus
                className={props.danger ? "danger" : "primary"}
                disabled={state.phase === "running"}
                onClick={() => void go()}
              >
                {state.phase === "running" ? "Working…" : props.confirm}
              </button>
            </>
          )}
        </div>
      </div>
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}
