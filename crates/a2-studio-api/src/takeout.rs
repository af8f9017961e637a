//! Production data taken off a store (an export, a copy) goes on record. A
//! connection that may write records it in the store's own audit log; a
//! read-only attach writes nothing to its database, so this machine keeps
//! the record instead: `takeouts.jsonl` beside the profiles, this user's alone.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use a2_operator::model::AuditEntry;
use serde::{Deserialize, Serialize};

use crate::profiles::redact;
use crate::*;

/// The file, in the Studio's config directory, that keeps what read-only attaches took.
pub const TAKEOUTS_FILE: &str = "takeouts.jsonl";

/// One line of the local record: the audit entry, and which store it was taken from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Takeout {
    /// The store's URL, without its password.
    pub store: String,
    #[serde(flatten)]
    pub entry: AuditEntry,
}

impl Studio {
    /// Record that `action` took `session` off the open store: `to` where,
    /// `counts` how much of it.
    pub(crate) async fn record_takeout(
        &self,
        action: &str,
        session: &a2_operator::SessionRef,
        to: &str,
        counts: a2_operator::ExportCounts,
    ) -> Result<(), ApiError> {
        let operator = self.operator()?;
        let parameters = serde_json::json!({ "to": to, "events": counts.events, "heads": counts.heads });
        let entry = operator.audit_entry(action, &session.contract, &session.session, parameters);
        if !operator.is_read_only() {
            return Ok(operator.audit_record(entry).await?);
        }
        let takeout = Takeout { store: redact(&self.open()?.info.url), entry };
        append_line(&self.takeouts_path(), &takeout)
            .map_err(|e| ApiError::new(ErrorCode::Internal, format!("cannot record the takeout locally: {e}")))
    }

    /// Where this Studio keeps what read-only attaches took.
    pub fn takeouts_path(&self) -> PathBuf {
        self.profiles.dir().join(TAKEOUTS_FILE)
    }
}

/// Append one JSON line to `path`, created 0600 and never through a symbolic link.
fn append_line(path: &Path, line: &Takeout) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = options.open(path)?;
    let mut text = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    text.push(b'\n');
    file.write_all(&text)?;
    file.sync_all()
}
