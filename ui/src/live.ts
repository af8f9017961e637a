// Live refresh: wait for the store's change counter to move (a Postgres
// notification, an action, or a poll), then refetch what is on screen. Queries keep their data
// while refetching, so the operator's scroll and selection stay put.
import { useEffect } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { commands } from "./bindings";
import { changesWith } from "./keys";

export function useLiveRefresh(enabled: boolean) {
  const client = useQueryClient();
  useEffect(() => {
    if (!enabled) return;
    let stopped = false;
    let since = 0;
    (async () => {
      while (!stopped) {
        const tick = await commands.changeWait({ since, timeout_ms: 25_000 });
        if (stopped) break;
        if (tick.status === "error") {
          await new Promise((r) => setTimeout(r, 3_000));
          continue;
        }
        if (tick.data.version !== since) {
          await client.invalidateQueries({ predicate: (q) => changesWith(q.queryKey) });
        }
        since = tick.data.version;
      }
    })();
    return () => {
      stopped = true;
    };
  }, [enabled, client]);
}
