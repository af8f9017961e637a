//! The OS user and host of this process: what an audit entry names.

/// Who is acting, for the audit log: an operator at a shell, or an engine
/// process whose run changed the store (its clear, say).
#[derive(Debug, Clone)]
pub struct Actor {
    pub user: String,
    pub host: String,
}

impl Actor {
    /// This process's, read once: what the engine's own audited changes and registry rows name.
    pub fn of_process() -> &'static Actor {
        static ACTOR: std::sync::OnceLock<Actor> = std::sync::OnceLock::new();
        ACTOR.get_or_init(Actor::current)
    }

    /// The OS user and host name of this process. The user is the one the
    /// process runs as (its uid's name), not `$USER`, which anyone can set;
    /// the environment is read only where the uid cannot be.
    pub fn current() -> Self {
        let user = user_from_passwd()
            .or_else(|| std::env::var("USER").ok())
            .or_else(|| std::env::var("LOGNAME").ok())
            .unwrap_or_else(|| "unknown".into());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| "unknown".into());
        Self { user, host }
    }

    /// The same actor, acting for a caller of the web mode (a token holder
    /// in a browser): the audit says so rather than naming this user alone.
    pub fn through_web_mode(self) -> Self {
        Self { user: format!("{} (web mode)", self.user), ..self }
    }
}

/// The name of this process's real user, from `/proc` and `/etc/passwd`;
/// a uid with no name there is named by its number (never by `$USER`).
fn user_from_passwd() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().next()?.to_owned();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let named = passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.get(2) == Some(&uid.as_str())).then(|| fields[0].to_owned())
    });
    Some(named.unwrap_or_else(|| format!("uid {uid}")))
}
