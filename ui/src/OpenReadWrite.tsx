// A SQLite file opened read-only (as one from the file manager is) becomes
// writable only when the person asks, after being told what that means.
import { useState } from "react";
import type { ConnectionInfo } from "./bindings";
import { commands } from "./commands";
import { unwrap } from "./api";
import { ConfirmDialog } from "./ui";

export function OpenReadWrite({ info, onOpened }: { info: ConnectionInfo; onOpened: (next: ConnectionInfo) => void }) {
  const [asking, setAsking] = useState(false);
  const [opened, setOpened] = useState<ConnectionInfo | null>(null);
  if (info.kind !== "sqlite" || !info.read_only || info.locked_read_only) return null;
  return (
    <>
      <button type="button" data-testid="open-read-write" onClick={() => setAsking(true)}>
        Open read-write…
      </button>
      {asking && (
        <ConfirmDialog
          title="Open this file read-write?"
          confirm="Open read-write"
          run={async () => {
            const next = await unwrap(
              commands.connectionOpen({ url: info.url, profile: null, password: null, read_only: false }),
            );
            setOpened(next);
            return next.migrated.length > 0
              ? `Opened read-write; its A2 schema was migrated (${next.migrated.join(", ")}).`
              : "Opened read-write.";
          }}
          onClose={() => {
            setAsking(false);
            if (opened) onOpened(opened);
          }}
        >
          <p>
            <code>{info.url}</code> opens read-write: redrives, consumes and clears will change this file, and an
            older A2 schema in it is migrated to this app's version (older A2 builds may no longer open it).
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
