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

/// A copy holds production data. Its folder must be a real folder (not a
/// symbolic link) that only this user can write, so nobody can swap the
/// file, its `-wal` or its `-shm` for a link between this check and
/// SQLite's open. Each of them that exists is looked at through that folder's
/// handle, never following a link (`openat`, `O_NOFOLLOW`): it must be this
/// user's plain file, and is made private (0600) through its own handle. A
/// new file is made private by the SQLite store that creates it.
#[cfg(unix)]
fn private_file(path: &std::path::Path) -> Result<(), ApiError> {
    use std::os::unix::ffi::OsStrExt as _;
    let name =
        path.file_name().ok_or_else(|| ApiError::invalid(format!("{} names no file to copy into", path.display())))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let folder = Handle::open_folder(parent)?;
    let stat = folder.stat(parent)?;
    let (owner, mode) = (stat.st_uid, u32::from(stat.st_mode));
    // SAFETY: geteuid and getegid take nothing and cannot fail.
    let (me, my_group) = unsafe { (libc::geteuid(), libc::getegid()) };
    // A folder its group may write is this user's alone only when the group is (a user private group).
    let others_write = mode & 0o002 != 0 || (mode & 0o020 != 0 && stat.st_gid != my_group);
    if owner != me || others_write {
        return Err(ApiError::invalid(format!(
            "{} is a folder {}: another user could put a link in the copy's place; copy into a folder of your own",
            parent.display(),
            if owner != me { format!("of another user's (uid {owner})") } else { "others can write".to_owned() }
        )));
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut file_name = name.as_bytes().to_vec();
        file_name.extend_from_slice(suffix.as_bytes());
        let shown = path.with_file_name(std::ffi::OsStr::from_bytes(&file_name));
        let Some(file) = folder.open_within(&file_name, &shown)? else { continue };
        file.make_private(&shown, me)?;
    }
    Ok(())
}

/// A file descriptor, closed on drop.
#[cfg(unix)]
struct Handle(std::os::fd::OwnedFd);

#[cfg(unix)]
impl Handle {
    fn from_result(fd: libc::c_int) -> Result<Self, std::io::Error> {
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by open/openat and is owned by nobody else.
        Ok(Self(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) }))
    }

    fn raw(&self) -> libc::c_int {
        std::os::fd::AsRawFd::as_raw_fd(&self.0)
    }

    /// The folder itself, refused when it is a symbolic link.
    fn open_folder(path: &std::path::Path) -> Result<Self, ApiError> {
        use std::os::unix::ffi::OsStrExt as _;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| ApiError::invalid(format!("{} holds a NUL byte", path.display())))?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid C string and plain flags.
        Self::from_result(unsafe { libc::open(c_path.as_ptr(), flags) }).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => ApiError::invalid(format!(
                "{} is a symbolic link (or not a folder): a copy is written only into a real folder",
                path.display()
            )),
            _ => ApiError::invalid(format!("cannot open the folder {}: {e}", path.display())),
        })
    }

    /// `name` in this folder, never through a link; `None` when it is not there.
    fn open_within(&self, name: &[u8], shown: &std::path::Path) -> Result<Option<Self>, ApiError> {
        let c_name = std::ffi::CString::new(name)
            .map_err(|_| ApiError::invalid(format!("{} holds a NUL byte", shown.display())))?;
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        // SAFETY: an open folder handle, a valid C string and plain flags.
        match Self::from_result(unsafe { libc::openat(self.raw(), c_name.as_ptr(), flags) }) {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(ApiError::invalid(format!(
                "{} is a symbolic link: a copy is written only to plain files",
                shown.display()
            ))),
            Err(e) => Err(ApiError::invalid(format!("cannot open {}: {e}", shown.display()))),
        }
    }

    fn stat(&self, shown: &std::path::Path) -> Result<libc::stat, ApiError> {
        // SAFETY: an all-zero stat is a valid value for fstat to fill.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: an open handle and a stat to write into.
        if unsafe { libc::fstat(self.raw(), &mut stat) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(ApiError::invalid(format!("cannot read {}: {e}", shown.display())));
        }
        Ok(stat)
    }

    /// This user's plain file, readable by this user alone (narrowed through this handle).
    fn make_private(&self, shown: &std::path::Path, me: libc::uid_t) -> Result<(), ApiError> {
        let stat = self.stat(shown)?;
        if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(ApiError::invalid(format!(
                "{} is not a plain file (a folder, a device …): a copy is written only to plain files",
                shown.display()
            )));
        }
        if stat.st_uid != me {
            return Err(ApiError::invalid(format!(
                "{} belongs to another user (uid {}): a copy of production data goes only into a file of your own",
                shown.display(),
                stat.st_uid
            )));
        }
        // SAFETY: an open handle of a plain file of this user's.
        if stat.st_mode & 0o077 != 0 && unsafe { libc::fchmod(self.raw(), 0o600) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(ApiError::invalid(format!("cannot make {} private: {e}", shown.display())));
        }
        Ok(())
    }
}

#[cfg(not(unix))]
fn private_file(_: &std::path::Path) -> Result<(), ApiError> {
    Ok(())
}
