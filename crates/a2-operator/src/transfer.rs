//! A session out of one store and into another: the versioned JSON Lines
//! export, its strict reader, and the import that writes it whole or not at all.
//!
//! The format (`a2.session/1`), one JSON object a line, each with one key:
//! `{"header":{…}}` first; then `{"event":{…}}` for every event after the
//! clear boundary, by index; `{"head":{…}}` for every cursor and pending or
//! dead head; `{"snapshot":{…}}`; and `{"end":{"events":N,"heads":N,"snapshots":N}}`
//! last, so a cut-off file is told from a whole one.

use std::io::{BufRead, Write};

use a2_store::{Event, EventList, HeadKind, ImportedHead, Millis, SessionImport, Snapshot};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{Operator, OperatorError, Result, SessionRef};

/// The format this build writes and reads.
pub const EXPORT_FORMAT: &str = "a2.session/1";

/// Events read a page at a time while exporting.
const PAGE: u32 = 500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportHeader {
    pub format: String,
    pub contract: String,
    pub session: String,
    pub head: u64,
    pub clear_index: u64,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub exported_at: Millis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportCounts {
    pub events: u64,
    pub heads: u64,
    pub snapshots: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Header(ExportHeader),
    Event(Event),
    Head(ImportedHead),
    Snapshot(Snapshot),
    End(ExportCounts),
}

fn write_line(out: &mut impl Write, line: &Line) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

/// Why a session too long to hold in memory was refused, and what streams it.
fn too_many(what: String, max_events: u64) -> String {
    format!(
        "{what}, more than the {max_events} a copy, an import or an export through the Studio holds in memory: \
         `a2 export` streams a session of any length to a file"
    )
}

/// The most events a session may have to be taken whole into memory (a copy,
/// an import, the Studio's export): at ~1 kB an event, about 100 MB.
pub const WHOLE_SESSION_MAX_EVENTS: u64 = 100_000;

/// A session as an export file holds it.
#[derive(Debug, Clone)]
pub struct SessionCopy {
    pub header: ExportHeader,
    pub events: Vec<Event>,
    pub heads: Vec<ImportedHead>,
    pub snapshots: Vec<Snapshot>,
}

impl SessionCopy {
    pub fn counts(&self) -> ExportCounts {
        ExportCounts {
            events: self.events.len() as u64,
            heads: self.heads.len() as u64,
            snapshots: self.snapshots.len() as u64,
        }
    }

    /// Write the copy as JSON Lines.
    pub fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        write_line(out, &Line::Header(self.header.clone()))?;
        for event in &self.events {
            write_line(out, &Line::Event(event.clone()))?;
        }
        for head in &self.heads {
            write_line(out, &Line::Head(head.clone()))?;
        }
        for snapshot in &self.snapshots {
            write_line(out, &Line::Snapshot(snapshot.clone()))?;
        }
        write_line(out, &Line::End(self.counts()))
    }

    /// Read an export, every line checked: its JSON, its place (header
    /// first, end last, nothing after), the format version and the counts.
    /// The first fault is named with its line number. A copy is held whole
    /// in memory, so one of more than `max_events` events is refused as soon
    /// as its reading passes that many.
    pub fn read(input: impl BufRead, max_events: u64) -> Result<Self> {
        let bad = |n: usize, what: String| OperatorError::invalid(format!("line {n} of the export: {what}"));
        let mut header = None;
        let (mut events, mut heads, mut snapshots) = (Vec::new(), Vec::new(), Vec::new());
        let mut end = None;
        for (i, text) in input.lines().enumerate() {
            let n = i + 1;
            let text = text.map_err(|e| bad(n, format!("cannot be read: {e}")))?;
            if text.trim().is_empty() {
                continue;
            }
            if end.is_some() {
                return Err(bad(n, "comes after the end line".into()));
            }
            let line: Line = serde_json::from_str(&text).map_err(|e| bad(n, e.to_string()))?;
            match (line, &header) {
                (Line::Header(h), None) => {
                    if h.format != EXPORT_FORMAT {
                        return Err(bad(n, format!("format '{}' is not {EXPORT_FORMAT}", h.format)));
                    }
                    header = Some(h);
                }
                (_, None) => return Err(bad(n, "the first line must be the header".into())),
                (Line::Header(_), Some(_)) => return Err(bad(n, "a second header".into())),
                (Line::Event(_), _) if events.len() as u64 >= max_events => {
                    return Err(bad(n, too_many(format!("holds more than {max_events} events"), max_events)))
                }
                (Line::Event(e), _) => events.push(e),
                (Line::Head(h), _) => heads.push(h),
                (Line::Snapshot(s), _) => snapshots.push(s),
                (Line::End(counts), _) => end = Some(counts),
            }
        }
        let header = header.ok_or_else(|| OperatorError::invalid("the export is empty: no header line"))?;
        let copy = Self { header, events, heads, snapshots };
        match end {
            None => Err(OperatorError::invalid("the export has no end line: it was cut off")),
            Some(counts) if counts != copy.counts() => Err(OperatorError::invalid(format!(
                "the end line counts {counts:?} but the file holds {:?}: lines are missing",
                copy.counts()
            ))),
            Some(_) => Ok(copy),
        }
    }
}

/// What an import wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Imported {
    pub events: u64,
    pub heads: u64,
    pub snapshots: u64,
    /// Heads with work left: they run as soon as a server of the contract
    /// claims them in this store, unless they were parked.
    pub pending: u64,
    pub parked: bool,
}

/// What an import does with the copy's pending work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImportPending {
    /// As it stood: a server of the contract on this store runs it at once.
    #[default]
    Run,
    /// As dead letters, for an operator to redrive one by one: nothing runs by itself.
    Park,
}

/// The dead-letter reason a parked head carries.
pub const PARKED_ON_IMPORT: &str = "parked on import: redrive to run it here";

impl Operator {
    /// Read a session whole, into memory: refused when it has more than
    /// `max_events` events (stream it with [`Operator::session_export_write`]).
    /// Heads and snapshots are read before the events, so appends made
    /// meanwhile only add events; a clear meanwhile makes the copy
    /// inconsistent, and its import refuses it.
    pub async fn session_export(&self, target: &SessionRef, max_events: u64) -> Result<SessionCopy> {
        let (header, heads, snapshots) = self.export_start(target).await?;
        let count = header.head.saturating_sub(header.clear_index);
        if count > max_events {
            let what = format!("{}/{} has {count} events", target.contract, target.session);
            return Err(OperatorError::invalid(too_many(what, max_events)));
        }
        let mut events = Vec::new();
        self.export_events(target, &header, |event| {
            events.push(event);
            Ok(())
        })
        .await?;
        Ok(SessionCopy { header, events, heads, snapshots })
    }

    /// Write a session as an export to `out` a page of events at a time, so
    /// a session of any length costs one page of memory.
    pub async fn session_export_write(&self, target: &SessionRef, out: &mut impl Write) -> Result<ExportCounts> {
        let failed = |e: std::io::Error| OperatorError::invalid(format!("writing the export: {e}"));
        let (header, heads, snapshots) = self.export_start(target).await?;
        let mut counts = ExportCounts { events: 0, heads: heads.len() as u64, snapshots: snapshots.len() as u64 };
        write_line(out, &Line::Header(header.clone())).map_err(failed)?;
        self.export_events(target, &header, |event| {
            counts.events += 1;
            write_line(out, &Line::Event(event)).map_err(failed)
        })
        .await?;
        for head in heads {
            write_line(out, &Line::Head(head)).map_err(failed)?;
        }
        for snapshot in snapshots {
            write_line(out, &Line::Snapshot(snapshot)).map_err(failed)?;
        }
        write_line(out, &Line::End(counts)).map_err(failed)?;
        Ok(counts)
    }

    /// The header, heads and snapshots of an export: everything but its events.
    async fn export_start(&self, target: &SessionRef) -> Result<(ExportHeader, Vec<ImportedHead>, Vec<Snapshot>)> {
        let key = target.key()?;
        let heads = self.store().head_list(&key).await?;
        let snapshots = self.store().snapshot_list(&key).await?;
        let summary = self.session_get(target).await?;
        let snapshot = |s: a2_store::SnapshotInfo| Snapshot {
            reducer: s.reducer,
            index: s.index,
            state: s.state,
            pins: s.pins,
            created_at: s.created_at,
        };
        let header = ExportHeader {
            format: EXPORT_FORMAT.into(),
            contract: target.contract.clone(),
            session: target.session.clone(),
            head: summary.head,
            clear_index: summary.clear_index,
            created_at: summary.created_at,
            updated_at: summary.updated_at,
            exported_at: self.now(),
        };
        Ok((header, heads.iter().map(ImportedHead::from).collect(), snapshots.into_iter().map(snapshot).collect()))
    }

    /// Hand each event between the header's clear boundary and head to `each`, a page at a time.
    async fn export_events(
        &self,
        target: &SessionRef,
        header: &ExportHeader,
        mut each: impl FnMut(Event) -> Result<()>,
    ) -> Result<()> {
        let key = target.key()?;
        let mut after = Some(header.clear_index);
        loop {
            let list = EventList {
                session: key.clone(),
                after,
                before: Some(header.head + 1),
                limit: PAGE,
                newest_first: false,
            };
            let page = self.store().event_list(list).await?;
            let Some(last) = page.last() else { return Ok(()) };
            after = Some(last.index);
            let full = page.len() >= PAGE as usize;
            for mut event in page {
                event.session.clone_from(&target.session);
                each(event)?;
            }
            if !full {
                return Ok(());
            }
        }
    }

    /// Write a copy into this store, under its own id or `as_session`, in one
    /// transaction with its audit entry; refused if that session exists.
    /// Where this process hosts the contract, every event is checked against
    /// it first (type and payload), so an import writes nothing its consumers
    /// could not have been handed by an append.
    pub async fn session_import(
        &self,
        mut copy: SessionCopy,
        as_session: Option<&str>,
        pending: ImportPending,
    ) -> Result<(SessionRef, Imported)> {
        self.writable("import")?;
        if let Some(server) = self.hosted.iter().find(|s| s.contract().name() == copy.header.contract) {
            for event in &copy.events {
                server.contract().validate(&event.event_type, &event.payload).map_err(|error| match error {
                    a2_engine::A2Error::InvalidPayload { event_type, message } => a2_engine::A2Error::InvalidPayload {
                        event_type,
                        message: format!("event {} of the export: {message}", event.index),
                    },
                    other => other,
                })?;
            }
        }
        let head = copy.header.head;
        // A cursor short of the head has events left; a per-event head not dead is work. (A typed
        // cursor resting on events it does not take counts too: the claim skips them, not the copy.)
        let waiting = |h: &ImportedHead| h.failed_at.is_none() && (h.kind != HeadKind::Log || h.index <= head);
        let pending_heads = copy.heads.iter().filter(|h| waiting(h)).count() as u64;
        if pending == ImportPending::Park {
            let now = self.now_ms();
            for parked in copy.heads.iter_mut().filter(|h| waiting(h)) {
                parked.failed_at = Some(now);
                parked.next_attempt_at = None;
                // A head that was backing off keeps its own error beside the reason it waits.
                parked.last_error = Some(match parked.last_error.take() {
                    Some(before) => format!("{PARKED_ON_IMPORT} (it had failed: {before})"),
                    None => PARKED_ON_IMPORT.to_owned(),
                });
            }
        }
        let parked = pending == ImportPending::Park && pending_heads > 0;
        let header = &copy.header;
        let target = SessionRef::new(header.contract.clone(), as_session.unwrap_or(&header.session));
        let counts = copy.counts();
        let audit = self.entry(
            "import",
            &target.contract,
            &target.session,
            json!({ "from_session": header.session, "exported_at": header.exported_at, "events": counts.events,
                    "pending": pending_heads, "parked": parked }),
        );
        let import = SessionImport {
            session: target.key()?,
            head: header.head,
            clear_index: header.clear_index,
            created_at: header.created_at,
            updated_at: header.updated_at,
            events: copy.events,
            heads: copy.heads,
            snapshots: copy.snapshots,
            audit: Some(audit),
        };
        self.store().session_import(import).await?;
        let imported = Imported {
            events: counts.events,
            heads: counts.heads,
            snapshots: counts.snapshots,
            pending: pending_heads,
            parked,
        };
        Ok((target, imported))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy() -> SessionCopy {
        SessionCopy {
            header: ExportHeader {
                format: EXPORT_FORMAT.into(),
                contract: "shop".into(),
                session: "s".into(),
                head: 1,
                clear_index: 0,
                created_at: 1,
                updated_at: 2,
                exported_at: 3,
            },
            events: vec![Event {
                id: "e1".into(),
                event_type: "order.placed".into(),
                payload: json!({ "customer": "c-7" }),
                index: 1,
                session: "s".into(),
                created_at: 1,
                cause: None,
                scheduled_by: None,
            }],
            heads: Vec::new(),
            snapshots: Vec::new(),
        }
    }

    fn text(copy: &SessionCopy) -> String {
        let mut out = Vec::new();
        copy.write(&mut out).unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8(out).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn an_export_of_more_events_than_held_whole_is_refused_as_read() {
        let written = text(&copy());
        let error = SessionCopy::read(written.as_bytes(), 0).map(|_| ()).expect_err("one event over");
        assert_eq!(error.code(), "INVALID_INPUT");
        assert!(error.to_string().contains("line 2") && error.to_string().contains("a2 export"), "{error}");
        assert!(SessionCopy::read(written.as_bytes(), 1).is_ok());
    }

    #[test]
    fn an_export_reads_back_as_written() {
        let written = text(&copy());
        let read = SessionCopy::read(written.as_bytes(), WHOLE_SESSION_MAX_EVENTS).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.header, copy().header);
        assert_eq!(read.events, copy().events);
        assert_eq!(written.lines().count(), 3);
    }

    #[test]
    fn a_damaged_export_is_refused_naming_the_line() {
        let whole = text(&copy());
        let lines: Vec<&str> = whole.lines().collect();
        let cases = [
            (lines[1..].join("\n"), "line 1 of the export: the first line must be the header"),
            (lines[..2].join("\n"), "no end line"),
            (format!("{}\n{}", lines[0], lines[2]), "lines are missing"),
            (format!("{whole}{}\n", lines[1]), "line 4 of the export: comes after the end line"),
            (whole.replace(EXPORT_FORMAT, "a2.session/9"), "is not a2.session/1"),
            (whole.replace("\"head\":1", "\"head\":1,\"extra\":true"), "line 1 of the export: unknown field"),
            (whole.replace("order.placed\"", "order.placed"), "line 2 of the export"),
        ];
        for (text, expected) in cases {
            let error = SessionCopy::read(text.as_bytes(), WHOLE_SESSION_MAX_EVENTS)
                .map(|_| ())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(expected), "expected {expected:?} in {error:?}");
        }
    }
}
