//! Bring a session home: export it as JSON Lines, import such a file, or
//! copy it straight into a local SQLite dev store. Reading the source is
//! all a copy does to it, so a read-only production attach may copy.

use std::path::PathBuf;

use a2_operator::{Connect, Mode, Operator, SessionCopy};

use a2_store_registry::Registry;

use crate::commands::lock_error;
use crate::*;

impl Studio {
    /// A session as an `a2.session/1` JSON Lines text, held whole (up to
    /// [`Limits::whole_session_events`] events).
    pub async fn session_export(&self, request: SessionRef) -> Result<String, ApiError> {
        let target = a2_operator::SessionRef::new(request.contract, request.session);
        let copy = self.operator()?.session_export(&target, self.limits.whole_session_events).await?;
        self.record_takeout("session.export", &target, "the caller (a download, or the CLI's output)", copy.counts())
            .await?;
        let mut text = Vec::new();
        copy.write(&mut text).map_err(|e| ApiError::new(ErrorCode::Internal, format!("writing the export: {e}")))?;
        String::from_utf8(text).map_err(|e| ApiError::new(ErrorCode::Internal, format!("the export is not UTF-8: {e}")))
    }

    /// A session written to `out` as an `a2.session/1` export a page at a
    /// time, whatever its length: the CLI's `a2 export` (not a command of
    /// the app, whose IPC carries one text).
    pub async fn session_export_write(
        &self,
        request: SessionRef,
        out: &mut impl std::io::Write,
    ) -> Result<(), ApiError> {
        let target = a2_operator::SessionRef::new(request.contract, request.session);
        let counts = self.operator()?.session_export_write(&target, out).await?;
        self.record_takeout("session.export", &target, "the CLI's output", counts).await
    }

    /// Write an exported session into the open store, whole or not at all.
    pub async fn session_import(&self, request: ImportRequest) -> Result<ImportOutcome, ApiError> {
        let operator = self.writable_operator("import")?;
        let copy = SessionCopy::read(request.text.as_bytes(), self.limits.whole_session_events)?;
        let as_session = request.as_session.as_deref().filter(|s| !s.is_empty());
        let pending = if request.park { a2_operator::ImportPending::Park } else { a2_operator::ImportPending::Run };
        let (target, imported) = operator.session_import(copy, as_session, pending).await?;
        self.bump();
        Ok(ImportOutcome {
            url: self.open()?.info.url.clone(),
            contract: target.contract,
            session: target.session,
            events: imported.events,
            heads: imported.heads,
            snapshots: imported.snapshots,
            pending: imported.pending,
            parked: imported.parked,
        })
    }

    /// Copy a session of the open store into a SQLite file (created as an A2
    /// store if new): the dev store unless `to` names another. The web mode
    /// writes only a plain file name under its export directory.
    pub async fn session_copy(&self, request: CopyRequest) -> Result<ImportOutcome, ApiError> {
        let source = self.operator()?;
        let path = self.copy_path(request.to.as_deref())?;
        // Under a read-only ceiling a copy writes no store that exists (the
        // dev store included): only a new file under the export directory.
        if self.limits.read_only && std::fs::symlink_metadata(&path).is_ok() {
            return Err(ApiError::new(
                ErrorCode::ReadOnly,
                format!(
                    "this process was started read-only: a copy goes only to a new file under {}, and {} exists",
                    self.limits.export_dir.display(),
                    path.display()
                ),
            ));
        }
        let from = a2_operator::SessionRef::new(request.contract, request.session);
        let copy = source.session_export(&from, self.limits.whole_session_events).await?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| ApiError::invalid(format!("cannot create {}: {e}", dir.display())))?;
        }
        // A target refused (a link, another user's file) takes nothing away: checked before the record.
        private_file(&path)?;
        self.record_takeout("session.copy", &from, &path.display().to_string(), copy.counts()).await?;
        let url = a2_store_registry::sqlite_url(&path);
        let mut connect = Connect::new(url.clone());
        connect.mode = Some(Mode::ReadWrite);
        let target = Operator::connect(&connect, &Registry).await?;
        let as_session = request.as_session.as_deref().filter(|s| !s.is_empty());
        // A copy is made to replay its consumers in the dev store: its pending work stays pending.
        let (copied, imported) = target.session_import(copy, as_session, a2_operator::ImportPending::Run).await?;
        self.copies.lock().map_err(lock_error)?.insert(url.clone());
        Ok(ImportOutcome {
            url,
            contract: copied.contract,
            session: copied.session,
            events: imported.events,
            heads: imported.heads,
            snapshots: imported.snapshots,
            pending: imported.pending,
            parked: imported.parked,
        })
    }

    fn copy_path(&self, to: Option<&str>) -> Result<PathBuf, ApiError> {
        let to = to.map(str::trim).filter(|t| !t.is_empty());
        if self.limits.web || self.limits.read_only {
            return self.export_file(to.unwrap_or("copies.sqlite"));
        }
        Ok(to.map_or_else(a2_store_registry::dev_store_path, PathBuf::from))
    }

    /// Whether `url` names a file this process copied a session into.
    pub(crate) fn is_copy(&self, url: &str) -> Result<bool, ApiError> {
        Ok(self.copies.lock().map_err(lock_error)?.contains(url))
    }
}

/// A copy holds production data. A new file is made this user's alone by
/// the SQLite store that creates it (0600, before SQLite opens it); an
/// existing one and its `-wal` and `-shm` must be this user's plain files,
/// made private before the copy goes in. A symbolic link is never followed
/// (it could point the copy anywhere).
fn private_file(path: &std::path::Path) -> Result<(), ApiError> {
    for file in [path.to_path_buf(), sidecar(path, "-wal"), sidecar(path, "-shm")] {
        make_private(&file)?;
    }
    Ok(())
}

/// `PATH` with `suffix` appended to its file name: SQLite's `-wal` and `-shm`.
fn sidecar(path: &std::path::Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Make an existing file of this user's readable by this user alone; refuse
/// one another user owns (their file, their data) or a symbolic link. A file
/// that is not there is left to SQLite (which gives it the store's mode).
#[cfg(unix)]
fn make_private(path: &std::path::Path) -> Result<(), ApiError> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(ApiError::invalid(format!("cannot read {}: {e}", path.display()))),
    };
    if !meta.file_type().is_file() {
        return Err(ApiError::invalid(format!(
            "{} is not a plain file (a link, a folder …): a copy is written only to plain files",
            path.display()
        )));
    }
    // SAFETY: geteuid takes nothing and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(ApiError::invalid(format!(
            "{} belongs to another user (uid {}): a copy of production data goes only into a file of your own",
            path.display(),
            meta.uid()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| ApiError::invalid(format!("cannot make {} private: {e}", path.display())))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn make_private(_: &std::path::Path) -> Result<(), ApiError> {
    Ok(())
}
