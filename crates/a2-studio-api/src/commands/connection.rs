//! Opening and closing a store, and the saved profiles.

use super::*;

impl Studio {
    /// How `url` would be attached if the person changes nothing.
    pub async fn connection_default(&self, request: ConnectionDefaultRequest) -> Result<ConnectionDefault, ApiError> {
        let (read_only, reason) = if self.limits.read_only {
            (true, "this Studio was started --read-only: every connection is read-only")
        } else if a2_operator::default_mode(&request.url) == Mode::ReadOnly {
            (true, "Postgres attaches read-only unless you switch to read-write")
        } else {
            (false, "a local file or memory store opens read-write")
        };
        Ok(ConnectionDefault { read_only, locked: self.limits.read_only, reason: reason.into() })
    }

    pub async fn connection_open(&self, request: ConnectionOpen) -> Result<ConnectionInfo, ApiError> {
        self.open_with(request, self.host_demo.load(std::sync::atomic::Ordering::Relaxed), false).await
    }

    /// Open a SQLite file a file manager handed over ("Open with"): read-only,
    /// so nothing in it changes (not its journal mode, not an older schema)
    /// until the person asks for read-write in the window.
    pub async fn file_open(&self, path: &std::path::Path) -> Result<ConnectionInfo, ApiError> {
        let url = a2_store_registry::sqlite_url(path);
        self.connection_open(ConnectionOpen { url: Some(url), profile: None, password: None, read_only: Some(true) })
            .await
    }

    /// Open a store creating the A2 schema even beside other tables: `a2
    /// init`'s own path, on no command list, so neither a page of the web
    /// mode nor the app's IPC can migrate a database it was pointed at.
    pub async fn connection_init(&self, request: ConnectionOpen) -> Result<ConnectionInfo, ApiError> {
        if self.limits.web {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "the web mode creates no schema: run `a2 init` on this machine",
            ));
        }
        self.open_with(request, false, true).await
    }

    /// The mode a request gets: the ceiling first, then what the request asks,
    /// then the profile's, then the default. Asking read-write is refused under
    /// the ceiling and for a profile saved read-only.
    fn mode_of(&self, request: &ConnectionOpen, url: &str, profile_read_only: Option<bool>) -> Result<Mode, ApiError> {
        if request.read_only == Some(false) {
            if self.limits.read_only {
                return Err(ApiError::new(
                    ErrorCode::ReadOnly,
                    "this Studio was started --read-only: no connection can be opened read-write",
                ));
            }
            if profile_read_only == Some(true) {
                return Err(ApiError::new(
                    ErrorCode::ReadOnly,
                    format!(
                        "profile '{}' is saved read-only: save it read-write to write with it",
                        request.profile.as_deref().unwrap_or_default()
                    ),
                ));
            }
        }
        let read_only = self.limits.read_only
            || request.read_only.or(profile_read_only).unwrap_or(a2_operator::default_mode(url) == Mode::ReadOnly);
        Ok(if read_only { Mode::ReadOnly } else { Mode::ReadWrite })
    }

    /// Open a store; `host_demo`: run the demo contract's consumers if it has
    /// that contract; `init`: create the A2 schema beside other tables.
    pub(super) async fn open_with(
        &self,
        request: ConnectionOpen,
        host_demo: bool,
        init: bool,
    ) -> Result<ConnectionInfo, ApiError> {
        let (url, password, profile_read_only) = match (&request.profile, &request.url) {
            (Some(name), _) => {
                let profile = self.profiles.resolve(name)?;
                (profile.url, profile.password, Some(profile.read_only))
            }
            (None, Some(url)) => (url.trim().to_owned(), request.password.clone().filter(|p| !p.is_empty()), None),
            (None, None) => return Err(ApiError::invalid("give a store URL or a profile to connect to")),
        };
        if self.limits.web && request.profile.is_none() && !self.is_copy(&url)? {
            let started = self.limits.started_with.as_deref().map(redact);
            if started.as_deref() != Some(redact(&url).as_str()) {
                let serves = started
                    .map_or_else(|| "saved profiles only".to_owned(), |s| format!("{s} and saved profiles only"));
                return Err(ApiError::new(
                    ErrorCode::Forbidden,
                    format!("this Studio's web mode opens {serves}, and the copies it made"),
                ));
            }
        }
        let mut connect = Connect::new(url.clone());
        connect.mode = Some(self.mode_of(&request, &url, profile_read_only)?);
        connect.password = password;
        connect.init = init;
        connect.must_exist = self.limits.web;
        let actor = if self.limits.web { Actor::current().through_web_mode() } else { Actor::current() };
        let mut operator = Operator::new(a2_operator::attach(&connect, &Registry).await?, actor);
        operator.audit_migrations().await?;
        let attached = operator.attached().clone();
        let read_only = attached.mode == Mode::ReadOnly;
        // The demo's code runs only on the demo's own store, never on a real one with a `shop` contract.
        let hosts_demo = host_demo
            && !read_only
            && operator.contract_list().await?.iter().any(|c| c == demo::CONTRACT)
            && operator.demo_owns_store().await?;
        if hosts_demo {
            operator.demo_host()?;
        }
        let postgres = attached.kind == StoreKind::Postgres;
        let replica = operator.is_replica();
        let replica_delay_ms = operator.replica_delay_ms().await?;
        let warning = match (read_only, postgres, attached.role_can_write) {
            (true, _, Some(true)) => Some(
                "read-only by session setting only: this database role could write. \
                 Attach with a role that has SELECT alone to make the database refuse every write."
                    .to_owned(),
            ),
            (true, true, None) => Some(
                "could not tell whether this database role can write: read-only rests on the session setting"
                    .to_owned(),
            ),
            _ => None,
        };
        let server = attached.server.as_ref();
        let pooled = server.is_some_and(|s| s.pooled);
        let mut read_only_proof = Vec::new();
        if read_only {
            if attached.role_can_write == Some(false) {
                read_only_proof.push(ReadOnlyProof::Role);
            }
            if replica {
                read_only_proof.push(ReadOnlyProof::Replica);
            }
            match attached.kind {
                StoreKind::Postgres if pooled => read_only_proof.push(ReadOnlyProof::ReadOnlyTransactions),
                StoreKind::Postgres => read_only_proof.push(ReadOnlyProof::SessionVerified),
                StoreKind::Sqlite => read_only_proof.push(ReadOnlyProof::ReadOnlyFile),
                StoreKind::Memory => {}
            }
        }
        let info = ConnectionInfo {
            url: redact(&url),
            kind: attached.kind,
            read_only,
            role_can_write: attached.role_can_write,
            warning,
            read_only_proof,
            hosts_demo,
            live: operator.changes().is_some(),
            pooled,
            tls: server.map(|s| match s.tls {
                a2_operator::model::TlsState::Off => TlsView::Off,
                a2_operator::model::TlsState::Encrypted => TlsView::Encrypted,
                a2_operator::model::TlsState::Verified => TlsView::Verified,
                a2_operator::model::TlsState::VerifiedCaOnly => TlsView::VerifiedCaOnly,
            }),
            sslmode_from_env: server.and_then(|s| s.sslmode_from_env.clone()),
            server: server.map(|s| ServerView {
                host: s.host.clone(),
                port: s.port,
                database: s.database.clone(),
                version: s.version.clone(),
                session_user: s.session_user.clone(),
            }),
            locked_read_only: self.limits.read_only,
            migrated: attached.migrated.clone(),
            replica,
            replica_delay_ms,
        };
        let now = operator.now_ms();
        let connection = Arc::new(Connection::new(operator, info.clone(), self.versions.clone()));
        *self.connection.write().map_err(lock_error)? = Some(connection);
        self.bump();
        // A profile file that cannot be written must not stop the operator from working.
        if let Err(error) = self.profiles.touch(&url, request.profile.as_deref(), now) {
            tracing::warn!(%error, "could not record the recent store");
        }
        Ok(info)
    }

    /// The open connection; on a replica with how far it trails the primary now.
    pub async fn connection_get(&self, _: NoArgs) -> Result<Option<ConnectionInfo>, ApiError> {
        let Some(connection) = self.connection.read().map_err(lock_error)?.clone() else { return Ok(None) };
        let mut info = connection.info.clone();
        if info.replica {
            info.replica_delay_ms = connection.operator.replica_delay_ms().await?;
        }
        Ok(Some(info))
    }

    /// Stop what this process runs in the background (the demo traffic) and
    /// wait until its servers have left the process registry: for a shell
    /// about to exit, whose runtime would otherwise end before they leave.
    pub async fn stop_background(&self) {
        let open = self.connection.read().ok().and_then(|c| c.clone());
        if let Some(connection) = open {
            connection.stop_demo_traffic().await;
        }
    }

    pub async fn connection_close(&self, _: NoArgs) -> Result<bool, ApiError> {
        let closed = self.connection.write().map_err(lock_error)?.take().is_some();
        self.bump();
        Ok(closed)
    }

    pub async fn profile_list(&self, _: NoArgs) -> Result<ProfileList, ApiError> {
        self.profiles.list()
    }

    pub async fn profile_save(&self, request: ProfileSave) -> Result<Profile, ApiError> {
        self.profiles_writable()?;
        self.profiles.save(&request.name, &request.url, request.password, request.read_only)
    }

    pub async fn profile_delete(&self, request: ProfileRef) -> Result<bool, ApiError> {
        self.profiles_writable()?;
        self.profiles.delete(&request.name)
    }

    /// The web mode uses the saved profiles and changes none: a token holder
    /// could otherwise point a profile at any database and open it, or wipe
    /// the keychain's passwords.
    fn profiles_writable(&self) -> Result<(), ApiError> {
        if self.limits.web {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "the web mode does not change saved profiles: save them in the desktop app",
            ));
        }
        Ok(())
    }
}
