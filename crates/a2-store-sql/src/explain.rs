//! The plan of every inspection read, for the EXPLAIN test and for
//! diagnosing a slow Studio: the same reads with the same arguments on every
//! backend, each explained in the backend's own words.

use a2_store::{split_session_key, StoreError, DEAD_LETTER_GROUPS_SCAN};

use crate::rows::contract_range;
use crate::value::Arg;
use crate::{SqlBackend, SqlStore};

/// A read by name, with arguments that make it look at one session.
struct ExplainedRead {
    name: &'static str,
    sql: &'static str,
    args: Vec<Arg>,
}

/// Every inspection read, aimed at `session` (a storage key).
fn explained_reads(sql: &crate::Statements, session: &str, now: i64) -> Vec<ExplainedRead> {
    let contract = split_session_key(session).0.to_owned();
    let (lo, hi) = contract_range(Some(&contract));
    let key = || Arg::text(session);
    let empty = || Arg::Text(String::new());
    let read = |name, sql, args| ExplainedRead { name, sql, args };
    let payload = || {
        Arg::OptJson(Some(match sql.payload_binding {
            crate::PayloadBinding::Document => serde_json::json!({ "customer": "c1" }),
            crate::PayloadBinding::Leaves => serde_json::json!([["$.\"customer\"", "c1"]]),
        }))
    };
    vec![
        read("contracts", sql.contracts, vec![]),
        read(
            "session page",
            sql.session_page,
            vec![Arg::Text(lo.clone()), Arg::Text(hi.clone()), empty(), Arg::Int(500)],
        ),
        read("session summary", sql.session_get, vec![key()]),
        read(
            "sessions by activity",
            sql.sessions_by_activity,
            vec![Arg::Text(contract.clone()), Arg::Int(i64::MAX), Arg::text("\u{10FFFF}"), Arg::Int(50)],
        ),
        read("events page", sql.events_oldest_first, vec![key(), Arg::Int(0), Arg::Int(i64::MAX), Arg::Int(500)]),
        read(
            "events page, newest first",
            sql.events_newest_first,
            vec![key(), Arg::Int(0), Arg::Int(i64::MAX), Arg::Int(500)],
        ),
        read("heads of a session", sql.heads_of_session, vec![key()]),
        read("sessions with heads", sql.sessions_with_heads, vec![empty(), Arg::OptText(None), Arg::Int(501)]),
        read(
            "dead-letter page",
            sql.dead_letters,
            vec![
                Arg::Text(lo.clone()),
                Arg::Text(hi.clone()),
                Arg::OptText(None),
                Arg::OptText(None),
                empty(),
                empty(),
                empty(),
                Arg::Int(0),
                Arg::Int(500),
                Arg::OptText(None),
            ],
        ),
        read(
            "throughput, the recent minutes",
            sql.attempt_rates,
            // The last hour of a long history is a narrow range of a2_attempts_by_time: here, from now.
            vec![Arg::Text(lo.clone()), Arg::Text(hi.clone()), Arg::Int(now), Arg::Int(60_000)],
        ),
        read(
            "dead letters by cause",
            sql.dead_letter_groups,
            vec![Arg::Text(lo.clone()), Arg::Text(hi.clone()), Arg::Int(i64::from(DEAD_LETTER_GROUPS_SCAN))],
        ),
        read(
            "attempts of a head",
            sql.attempts_newest_first,
            vec![
                key(),
                Arg::text("ordered"),
                Arg::OptInt(Some(1)),
                Arg::text("\u{10FFFF}"),
                empty(),
                Arg::Int(0),
                Arg::Int(0),
                Arg::Int(100),
            ],
        ),
        read(
            "attempts of a session (the timeline)",
            sql.attempts_oldest_first,
            vec![
                key(),
                Arg::OptText(None),
                Arg::OptInt(None),
                empty(),
                empty(),
                Arg::Int(-1),
                Arg::Int(-1),
                Arg::Int(500),
            ],
        ),
        read("consumer totals, recomputed", sql.consumer_totals, vec![Arg::Text(lo.clone()), Arg::Text(hi.clone())]),
        read("consumer totals", sql.kept_totals, vec![Arg::OptText(Some(contract))]),
        read("snapshots of a session", sql.snapshots_of_session, vec![key()]),
        read(
            "sessions with runnable work (the rescuer)",
            sql.runnable_sessions,
            vec![
                Arg::Text(lo.clone()),
                Arg::Text(hi.clone()),
                empty(),
                Arg::texts(["ordered", "parallel"]),
                Arg::Int(now),
                Arg::Int(500),
            ],
        ),
        read("snapshot lookup", sql.snapshot_get, vec![key(), Arg::text("count"), Arg::Int(i64::MAX)]),
        read(
            "search: a chunk of sessions",
            sql.search_sessions,
            vec![Arg::Text(lo.clone()), Arg::Text(hi.clone()), empty(), Arg::Int(500)],
        ),
        read(
            "search: first matches in a chunk",
            sql.search_matches,
            // A chunk is a narrow key range on a big store: here, one session's.
            vec![key(), key(), payload(), Arg::text("work"), Arg::OptText(None)],
        ),
        read("session count", sql.session_count, vec![Arg::Text(lo.clone()), Arg::Text(hi.clone())]),
        read("a chunk's end", sql.session_nth, vec![Arg::Text(lo), Arg::Text(hi), Arg::Int(1000)]),
        read("filter: a chunk of a session", sql.filter_chunk, vec![key(), Arg::Int(0), Arg::Int(1_000)]),
        read(
            "filter: matches in the chunk",
            sql.filter_events,
            vec![key(), Arg::Int(0), Arg::Int(1_000), payload(), Arg::OptText(None), Arg::OptText(None)],
        ),
        read("scheduler: is anything due", sql.task_due, vec![Arg::text(split_session_key(session).0), Arg::Int(now)]),
        read(
            "scheduler: claim the due tasks",
            sql.task_claim,
            vec![
                Arg::text(split_session_key(session).0),
                Arg::Int(now),
                Arg::text("explain"),
                Arg::Int(now + 30_000),
                Arg::Int(64),
                Arg::OptText(None),
            ],
        ),
        read("timers of a session", sql.task_list_of_session, vec![key(), Arg::OptInt(None), empty(), Arg::Int(100)]),
        read("presence of a session", sql.presence_read, vec![key(), Arg::Int(now)]),
        read("sessions with live presence", sql.presence_sessions, vec![Arg::Int(now)]),
    ]
}

impl<B: SqlBackend> SqlStore<B> {
    /// The query plan of every inspection read for a session of the store,
    /// as the database prints it: each read's name and its plan lines.
    pub async fn explain_reads(&self, session: &str) -> Result<Vec<(&'static str, Vec<String>)>, StoreError> {
        let (prefix, column) = self.sql().explain;
        let mut conn = self.backend.read().await?;
        let mut plans = Vec::new();
        for read in explained_reads(self.sql(), session, self.now()) {
            let rows = conn.fetch(&format!("{prefix} {}", read.sql), read.args).await?;
            let lines = rows.iter().map(|r| r.text(column)).collect::<Result<Vec<_>, _>>()?;
            plans.push((read.name, lines));
        }
        Ok(plans)
    }
}
