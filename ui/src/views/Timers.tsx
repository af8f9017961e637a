// What is due: the scheduler's pending timers, store-wide or of one
// session, soonest first. An overdue timer means no server of its contract
// is delivering (a production incident), so it stands out. Deliver now and
// cancel are confirmed, audited, and refused read-only and on a replica.
import { Fragment, useState } from "react";
import { useInfiniteQuery } from "@tanstack/react-query";
import type { TimerCursor, TimerView } from "../bindings";
import { commands } from "../commands";
import { unwrap } from "../api";
import { formatRelative, formatTime } from "../format";
import { gate } from "../gate";
import { JsonView } from "../json";
import { keys } from "../keys";
import { useCloseAfter } from "../live";
import { href } from "../route";
import { ActionButton, ConfirmDialog, ErrorBox, Empty, GateNote, useConnection } from "../ui";

const PAGE = 100;

export function Timers() {
  return (
    <div className="page">
      <h1>Timers</h1>
      <p className="muted">
        Scheduled appends and clears, soonest first. Every server of a contract delivers its due timers; one overdue
        means none is serving.
      </p>
      <TimerTable />
    </div>
  );
}

export function TimerTable({ contract, session }: { contract?: string; session?: string }) {
  const connection = useConnection();
  const timerGate = gate(connection, "timer");
  const [open, setOpen] = useState<string | null>(null);
  const [acting, setActing] = useState<{ timer: TimerView; action: "deliver" | "cancel" } | null>(null);
  const pages = useInfiniteQuery({
    queryKey: keys.timers(contract ?? null, session ?? null),
    initialPageParam: null as TimerCursor | null,
    queryFn: ({ pageParam }) => unwrap(commands.timerList({ contract: contract ?? null, session: session ?? null, after: pageParam, limit: PAGE })),
    getNextPageParam: (last) => last.next,
  });
  const rows = pages.data?.pages.flatMap((p) => p.items) ?? [];
  const overdue = rows.filter((t) => t.overdue).length;
  return (
    <>
      <ErrorBox error={pages.error} />
      {overdue > 0 && (
        <p className="bad" data-testid="timers-overdue">
          {overdue} overdue: no server of {overdue === 1 ? "its contract" : "their contracts"} is delivering them.
        </p>
      )}
      <GateNote gate={timerGate} />
      <table data-testid="timers-table">
        <thead>
          <tr>
            <th>Due</th>
            <th>Kind</th>
            {!session && <th>Session</th>}
            <th>Name</th>
            <th>Scheduled by</th>
            <th>Will</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => {
            // The store's clock when it was read: due times are the store's, not this machine's.
            const now = t.due_at - t.due_in_ms;
            return (
            <Fragment key={t.id}>
              <tr data-testid="timer-row" data-timer={t.id} className={t.overdue ? "overdue" : ""}>
                <td title={formatTime(t.due_at)}>
                  <span className={t.overdue ? "bad" : ""}>{formatRelative(t.due_at, now)}</span>
                  <div className="muted">{formatTime(t.due_at)}</div>
                  {t.overdue && <span className="badge warn">overdue</span>}
                  {t.lease_holder && t.lease_expires_at !== null && t.lease_expires_at > now && <span className="badge">delivering</span>}
                </td>
                <td>{t.kind}</td>
                {!session && (
                  <td>
                    <a href={href({ view: "session", contract: t.contract, session: t.session, tab: "timers" })}>
                      {t.contract}/{t.session}
                    </a>
                  </td>
                )}
                <td>
                  <code>{t.name}</code>
                </td>
                <td>
                  {t.trigger ? (
                    <a href={href({ view: "session", contract: t.contract, session: t.session, tab: "events", index: t.trigger.index })}>
                      {t.trigger.consumer ?? "a run"} on event {t.trigger.index}
                    </a>
                  ) : (
                    <span className="muted">outside a run</span>
                  )}
                </td>
                <td>
                  <button type="button" className="link" onClick={() => setOpen(open === t.id ? null : t.id)}>
                    {willDo(t)}
                  </button>
                  {t.attempts > 0 && t.last_error && <div className="bad">failed {t.attempts}×: {t.last_error}</div>}
                </td>
                <td className="actions">
                  <ActionButton gate={timerGate} testId="timer-deliver" onClick={() => setActing({ timer: t, action: "deliver" })}>
                    Deliver now
                  </ActionButton>
                  <ActionButton gate={timerGate} danger testId="timer-cancel" onClick={() => setActing({ timer: t, action: "cancel" })}>
                    Cancel
                  </ActionButton>
                </td>
              </tr>
              {open === t.id && (
                <tr className="detail-row">
                  <td colSpan={session ? 6 : 7}>
                    <div className="muted">
                      id <code>{t.id}</code>, scheduled {formatTime(t.created_at)}
                    </div>
                    {t.events.map((e) => (
                      <div key={e.id}>
                        <code>{e.type}</code> <span className="muted">{e.id}</span>
                        <JsonView text={e.payload} />
                      </div>
                    ))}
                  </td>
                </tr>
              )}
            </Fragment>
            );
          })}
        </tbody>
      </table>
      {rows.length === 0 && !pages.isLoading && <Empty>Nothing is scheduled{session ? " for this session" : ""}.</Empty>}
      {pages.hasNextPage && (
        <button type="button" onClick={() => void pages.fetchNextPage()}>
          Load more
        </button>
      )}
      {acting && <TimerDialog timer={acting.timer} action={acting.action} onClose={() => setActing(null)} />}
    </>
  );
}

/** What a timer does when it is due, in a few words. */
function willDo(t: TimerView): string {
  if (t.kind === "append") return `append ${t.events.map((e) => e.type).join(", ")}`;
  if (t.kind === "drain") return "drain (the watchdog of a claim's lease)";
  return `clear${t.if_last_index !== null ? ` if head is ${t.if_last_index}` : ""}`;
}

function TimerDialog({ timer, action, onClose }: { timer: TimerView; action: "deliver" | "cancel"; onClose: (changed: boolean) => void }) {
  const close = useCloseAfter("timer", onClose);
  const what =
    timer.kind === "append"
      ? `append ${timer.events.length} event${timer.events.length === 1 ? "" : "s"}`
      : timer.kind === "drain"
        ? "drain the session (work a dead process held is retried)"
        : "clear the session";
  if (action === "cancel") {
    return (
      <ConfirmDialog
        title="Cancel timer"
        confirm="Cancel the timer"
        danger
        onClose={close}
        run={async () => {
          const cancelled = await unwrap(commands.timerCancel({ id: timer.id }));
          return `Cancelled '${cancelled.name}' of ${cancelled.contract}/${cancelled.session}: it will not ${what}.`;
        }}
      >
        <p>
          Timer <code>{timer.name}</code> of <code>{timer.contract}/{timer.session}</code>, due {formatTime(timer.due_at)}, is
          deleted: it will never {what}.
        </p>
      </ConfirmDialog>
    );
  }
  return (
    <ConfirmDialog
      title="Deliver timer now"
      confirm="Deliver now"
      onClose={close}
      run={async () => {
        const done = await unwrap(commands.timerDeliver({ id: timer.id }));
        return done.delivered
          ? `Delivered '${done.timer.name}' to ${done.timer.contract}/${done.timer.session}.`
          : `'${done.timer.name}' is due now: the next look of a server of '${done.timer.contract}' delivers it (this app does not run that contract).`;
      }}
    >
      <p>
        Timer <code>{timer.name}</code> of <code>{timer.contract}/{timer.session}</code>, due {formatTime(timer.due_at)}, is made
        due now and delivered: it will {what} through the ordinary path, exactly once (an append's ids make a second delivery a no-op; a clear is settled in its own transaction).
      </p>
    </ConfirmDialog>
  );
}
