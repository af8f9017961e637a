//! Tables for people, one JSON document for scripts.

use a2_studio_api::{
    Attempt, AttemptPage, AttemptRate, AuditView, ConnectionInfo, ConsumerTotal, DeadLetterGroup, DeadLetterPage,
    EventView, HeadView, LeasedHead, PausedConsumer, PresenceCellView, ProcessView, SearchHit, Serving, SessionPage,
    SessionSummary, SnapshotView, TimerView, TlsView, TotalsOrigin, TotalsSnapshot,
};
use serde::Serialize;
use serde_json::Value;

use crate::when::{absolute, duration, moment, now_ms, relative};

pub struct Out {
    pub json: bool,
}

fn table(headers: &[&str], rows: Vec<Vec<String>>) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(headers.iter().map(|h| (*h).to_owned()).collect());
    for row in rows {
        line(row);
    }
}

/// The views carry JSON as text (exact in any client); a script gets it as JSON again.
fn json_fields<T: Serialize>(items: &[T], fields: &[&str]) -> Value {
    let parse = |item: &T| {
        let mut value = serde_json::to_value(item).unwrap_or(Value::Null);
        for field in fields {
            if let Some(slot) = value.get_mut(*field) {
                if let Some(parsed) = slot.as_str().and_then(|text| serde_json::from_str::<Value>(text).ok()) {
                    *slot = parsed;
                }
            }
        }
        value
    };
    Value::Array(items.iter().map(parse).collect())
}

/// Which totals these are, and how old: kept ones older than half a minute
/// mean no server is refreshing them.
fn totals_origin(overview: &TotalsSnapshot) -> String {
    let now = now_ms();
    let age_s = (now - overview.computed_at).max(0) / 1_000;
    let kept = relative(overview.computed_at, now);
    match overview.origin {
        TotalsOrigin::Live => "totals computed now".to_owned(),
        TotalsOrigin::Missing => {
            "no totals are kept in this store: --live computes them (a pass over every cursor of the store)".to_owned()
        }
        TotalsOrigin::Kept if age_s > 30 => {
            format!("totals kept {kept}: no server is refreshing them (--live computes them now)")
        }
        TotalsOrigin::Kept => format!("totals kept {kept}"),
    }
}

fn opt<T: ToString>(value: &Option<T>) -> String {
    value.as_ref().map_or_else(|| "-".into(), ToString::to_string)
}

impl Out {
    fn emit<T: Serialize>(&self, value: &T) -> bool {
        if self.json {
            match serde_json::to_string_pretty(value) {
                Ok(text) => println!("{text}"),
                Err(error) => eprintln!("a2: could not print JSON: {error}"),
            }
        }
        self.json
    }

    pub fn value(&self, value: &serde_json::Value, human: &str) {
        if !self.emit(value) {
            println!("{human}");
        }
    }

    pub fn contracts(&self, contracts: &[String]) {
        if !self.emit(&contracts) {
            contracts.iter().for_each(|c| println!("{c}"));
        }
    }

    pub fn sessions(&self, page: &SessionPage) {
        if self.emit(page) {
            return;
        }
        let now = now_ms();
        let rows = page
            .items
            .iter()
            .map(|s| {
                vec![
                    s.session_id.clone(),
                    s.head.to_string(),
                    s.clear_index.to_string(),
                    s.lag.to_string(),
                    s.dead_letters.to_string(),
                    moment(s.updated_at, now),
                ]
            })
            .collect();
        table(&["session", "head", "cleared", "lag", "dead", "updated"], rows);
        if let Some(next) = &page.next {
            println!("next page: --after {next}");
        }
    }

    /// Which store, in which mode, over what TLS: above the tables an operator acts on.
    pub fn header(&self, info: &ConnectionInfo) {
        if self.json {
            return;
        }
        let mode = if info.read_only { "read-only" } else { "read-write" };
        let tls = match info.tls {
            Some(TlsView::Verified) => " · TLS verified",
            Some(TlsView::VerifiedCaOnly) => " · TLS, host not checked (verify-ca: any trusted certificate passes)",
            Some(TlsView::Encrypted) => " · TLS encrypted (server not verified)",
            Some(TlsView::Off) => " · TLS off",
            None => "",
        };
        let replica = match (info.replica, info.replica_delay_ms) {
            (false, _) => String::new(),
            (true, Some(ms)) => format!(" · replica, {} s behind", ms / 1000),
            (true, None) => " · replica, nothing replayed yet".to_owned(),
        };
        let pooled = if info.pooled { " · through a pooler (no LISTEN)" } else { "" };
        let from_env = match &info.sslmode_from_env {
            Some(mode) => format!(" (sslmode={mode} from PGSSLMODE, not the URL)"),
            None => String::new(),
        };
        println!("store {} · {mode}{tls}{from_env}{replica}{pooled}", info.url);
    }

    pub fn session(&self, s: &SessionSummary) {
        if !self.emit(s) {
            table(
                &["contract", "session", "head", "cleared", "lag", "dead"],
                vec![vec![
                    s.contract.clone(),
                    s.session_id.clone(),
                    s.head.to_string(),
                    s.clear_index.to_string(),
                    s.lag.to_string(),
                    s.dead_letters.to_string(),
                ]],
            );
        }
    }

    pub fn events(&self, events: &[EventView]) {
        if !self.emit(&json_fields(events, &["payload"])) {
            let rows = events
                .iter()
                .map(|e| vec![e.index.to_string(), e.event_type.clone(), e.id.clone(), e.payload.clone()])
                .collect();
            table(&["index", "type", "id", "payload"], rows);
        }
    }

    pub fn heads(&self, heads: &[HeadView]) {
        if !self.emit(&heads) {
            let rows = heads
                .iter()
                .map(|h| {
                    vec![
                        h.consumer.clone(),
                        opt(&h.lane),
                        h.next_index.to_string(),
                        h.lag.to_string(),
                        h.status.attempt_count.to_string(),
                        h.status.failure_count.to_string(),
                        h.reason.clone(),
                    ]
                })
                .collect();
            table(&["consumer", "lane", "next", "lag", "attempts", "failures", "why"], rows);
        }
    }

    /// Every consumer with its totals, who serves it (live processes that
    /// declare it, by the registry) and its pause; `--json` carries both too.
    pub fn consumers(&self, overview: &TotalsSnapshot, pauses: &[PausedConsumer]) {
        let totals = &overview.totals;
        let pause = |t: &ConsumerTotal| pauses.iter().find(|p| p.contract == t.contract && p.consumer == t.consumer);
        let documents: Vec<Value> = totals
            .iter()
            .map(|t| {
                let mut document = serde_json::to_value(t).unwrap_or(Value::Null);
                if let Value::Object(fields) = &mut document {
                    fields.insert("paused".into(), serde_json::json!(pause(t)));
                }
                document
            })
            .collect();
        if !self.emit(&documents) {
            // "NOBODY" with work waiting is the line to read first.
            let served = |t: &ConsumerTotal| match t.served {
                Some(Serving::Served { by }) => by.to_string(),
                Some(Serving::Nobody) => "NOBODY".to_owned(),
                Some(Serving::Idle) => "idle".to_owned(),
                Some(Serving::Undeclared) => "undeclared".to_owned(),
                None => "?".to_owned(),
            };
            let now = now_ms();
            let paused = |t: &ConsumerTotal| {
                pause(t).map_or_else(
                    || "-".to_owned(),
                    |p| format!("paused by {} {}: {}", p.actor, moment(p.paused_at, now), p.reason),
                )
            };
            let rows = totals
                .iter()
                .map(|t| {
                    vec![
                        t.contract.clone(),
                        t.consumer.clone(),
                        t.sessions.to_string(),
                        t.lagging_sessions.to_string(),
                        t.total_lag.to_string(),
                        t.dead_letters.to_string(),
                        served(t),
                        paused(t),
                    ]
                })
                .collect();
            table(&["contract", "consumer", "sessions", "lagging", "lag", "dead", "served by", "paused"], rows);
            println!("{}", totals_origin(overview));
        }
    }

    pub fn leased_heads(&self, heads: &[LeasedHead]) {
        if !self.emit(&heads) {
            let now = now_ms();
            let rows = heads
                .iter()
                .map(|h| {
                    vec![
                        h.contract.clone(),
                        h.session_id.clone(),
                        h.consumer.clone(),
                        opt(&h.lane),
                        h.index.to_string(),
                        h.attempt.to_string(),
                        moment(h.lease_expires_at, now),
                    ]
                })
                .collect();
            table(&["contract", "session", "consumer", "lane", "index", "attempt", "leased until"], rows);
            println!("{} heads running in this process now", heads.len());
        }
    }

    pub fn processes(&self, processes: &[ProcessView]) {
        if !self.emit(&processes) {
            let now = now_ms();
            let rows = processes
                .iter()
                .map(|p| {
                    let s = &p.server;
                    let consumers: Vec<&str> = s.info.consumers.iter().map(|c| c.name.as_str()).collect();
                    vec![
                        s.id.chars().take(8).collect(),
                        s.info.contract.clone(),
                        format!("{}:{}", s.info.host, s.info.pid),
                        s.info.version.clone(),
                        consumers.join(","),
                        s.info.max_running.to_string(),
                        moment(s.info.started_at, now),
                        moment(s.last_seen, now),
                        match (p.live, p.leads_upkeep) {
                            (true, true) => "live, leads upkeep".to_owned(),
                            (true, false) => "live".to_owned(),
                            (false, _) => "GONE".to_owned(),
                        },
                    ]
                })
                .collect();
            table(
                &["process", "contract", "host:pid", "version", "consumers", "max", "started", "last seen", "state"],
                rows,
            );
        }
    }

    pub fn timers(&self, timers: &[TimerView]) {
        if !self.emit(&timers) {
            let due = |t: &TimerView| {
                // Measured from the read's own clock, which `due_in_ms` was taken against.
                let when = moment(t.due_at, t.due_at.saturating_sub(t.due_in_ms));
                if t.overdue {
                    format!("{when} OVERDUE")
                } else {
                    when
                }
            };
            let rows = timers
                .iter()
                .map(|t| {
                    vec![
                        t.id.clone(),
                        t.contract.clone(),
                        t.session.clone(),
                        t.name.clone(),
                        t.kind.clone(),
                        due(t),
                        t.trigger.as_ref().and_then(|g| g.consumer.clone()).unwrap_or_else(|| "-".into()),
                        t.events.iter().map(|e| e.event_type.as_str()).collect::<Vec<_>>().join(","),
                    ]
                })
                .collect();
            table(&["id", "contract", "session", "name", "kind", "due", "by", "events"], rows);
        }
    }

    pub fn presence(&self, cells: &[PresenceCellView]) {
        if !self.emit(&cells) {
            if cells.is_empty() {
                println!("no one is present");
                return;
            }
            let rows = cells
                .iter()
                .map(|c| {
                    vec![
                        c.participant.clone(),
                        c.field.clone(),
                        c.value.clone(),
                        c.seen.to_string(),
                        moment(c.at, c.at.saturating_add(c.age_ms)),
                        moment(c.expires_at, c.expires_at.saturating_sub(c.expires_in_ms)),
                    ]
                })
                .collect();
            table(&["participant", "field", "value", "seen", "stamped", "expires"], rows);
        }
    }

    pub fn search(&self, hits: &[SearchHit]) {
        if !self.emit(&hits) {
            let rows = hits
                .iter()
                .map(|h| {
                    vec![
                        h.session.clone(),
                        h.matches.to_string(),
                        h.first.index.to_string(),
                        h.first.event_type.clone(),
                        h.first.payload.clone(),
                    ]
                })
                .collect();
            table(&["session", "matches", "first", "type", "payload"], rows);
        }
    }

    pub fn dead_letters(&self, page: &DeadLetterPage) {
        if self.emit(page) {
            return;
        }
        let now = now_ms();
        let rows = page
            .items
            .iter()
            .map(|d| {
                vec![
                    d.contract.clone(),
                    d.session_id.clone(),
                    d.consumer.clone(),
                    d.index.to_string(),
                    d.event_type.clone(),
                    d.failure_count.to_string(),
                    moment(d.failed_at, now),
                    opt(&d.last_error),
                ]
            })
            .collect();
        table(&["contract", "session", "consumer", "index", "type", "failures", "dead since", "last_error"], rows);
        if let Some(next) = &page.next {
            println!("next page: --after '{}'", serde_json::to_string(next).unwrap_or_default());
        }
    }

    pub fn dead_letter_groups(&self, groups: &[DeadLetterGroup]) {
        if self.emit(&groups) {
            return;
        }
        let rows = groups
            .iter()
            .map(|g| {
                vec![g.contract.clone(), g.consumer.clone(), g.count.to_string(), g.cause.clone(), {
                    // The storage key is `<contract>\u{1f}<session id>`: show the id.
                    let session = g.sample.session.split_once('\u{1f}').map_or("", |(_, id)| id);
                    format!("{session}/{}@{}", g.sample.consumer, g.sample.index)
                }]
            })
            .collect();
        table(&["contract", "consumer", "count", "cause", "sample"], rows);
    }

    pub fn attempts(&self, page: &AttemptPage) {
        if self.emit(page) {
            return;
        }
        let now = now_ms();
        table(ATTEMPT_COLUMNS, page.items.iter().map(|a| attempt_row(a, now)).collect());
        if let Some(next) = &page.next {
            println!("next page: --after '{}'", serde_json::to_string(next).unwrap_or_default());
        }
    }

    pub fn throughput(&self, rates: &[AttemptRate]) {
        if self.emit(&rates) {
            return;
        }
        let rows = rates
            .iter()
            .map(|r| {
                vec![
                    r.contract.clone(),
                    r.consumer.clone(),
                    absolute(r.bucket_start),
                    r.completed.to_string(),
                    r.failed.to_string(),
                ]
            })
            .collect();
        table(&["contract", "consumer", "minute", "completed", "failed"], rows);
    }

    pub fn timeline(&self, attempts: &[Attempt]) {
        if !self.emit(&attempts) {
            let now = now_ms();
            table(ATTEMPT_COLUMNS, attempts.iter().map(|a| attempt_row(a, now)).collect());
        }
    }

    pub fn snapshots(&self, snapshots: &[SnapshotView]) {
        if !self.emit(&json_fields(snapshots, &["state"])) {
            let rows = snapshots
                .iter()
                .map(|s| {
                    vec![s.reducer.clone(), s.index.to_string(), s.size_bytes.to_string(), s.pins.len().to_string()]
                })
                .collect();
            table(&["reducer", "index", "bytes", "pins"], rows);
        }
    }

    pub fn audit(&self, records: &[AuditView]) {
        if !self.emit(&json_fields(records, &["parameters", "outcome"])) {
            let now = now_ms();
            let rows = records
                .iter()
                .map(|r| {
                    vec![
                        r.id.to_string(),
                        moment(r.at, now),
                        r.user.clone(),
                        r.action.clone(),
                        opt(&r.session),
                        r.outcome.clone(),
                    ]
                })
                .collect();
            table(&["id", "at", "user", "action", "session", "outcome"], rows);
        }
    }
}

/// `redriving [#########-----------]  45/100 (2 failed)`: one terminal line, redrawn in place.
pub fn progress_bar(label: &str, done: u64, total: u64, failed: u64) -> String {
    const WIDTH: u64 = 30;
    let filled = (done.min(total) * WIDTH).checked_div(total).unwrap_or(WIDTH);
    let bar: String = (0..WIDTH).map(|i| if i < filled { '#' } else { '-' }).collect();
    let failed = if failed > 0 { format!(" ({failed} failed)") } else { String::new() };
    format!("{label} [{bar}] {done:>width$}/{total}{failed}", width = total.to_string().len())
}

#[cfg(test)]
mod tests {
    use super::progress_bar;

    #[test]
    fn a_progress_bar_fills_with_the_work_done() {
        assert_eq!(progress_bar("redriving", 0, 4, 0), "redriving [------------------------------] 0/4");
        assert_eq!(progress_bar("redriving", 2, 4, 1), "redriving [###############---------------] 2/4 (1 failed)");
        assert_eq!(progress_bar("redriving", 0, 0, 0), "redriving [##############################] 0/0");
    }
}

const ATTEMPT_COLUMNS: &[&str] =
    &["consumer", "lane", "index", "attempt", "outcome", "holder", "ended", "took", "appended", "error"];

fn attempt_row(a: &Attempt, now: i64) -> Vec<String> {
    vec![
        a.consumer.clone(),
        opt(&a.lane),
        a.index.to_string(),
        a.attempt.to_string(),
        a.outcome.name().to_owned(),
        opt(&a.holder),
        moment(a.ended_at, now),
        a.started_at.map_or_else(|| "-".to_owned(), |s| duration(a.ended_at.saturating_sub(s))),
        a.appended.len().to_string(),
        a.error.as_deref().and_then(|e| e.lines().next()).unwrap_or("-").to_owned(),
    ]
}
