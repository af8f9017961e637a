//! Saved connection profiles and recent stores, in a JSON file of the
//! user's config directory. Passwords never reach the file: they go to the
//! OS keychain (`keyring`), keyed by profile name.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ErrorCode;
use crate::{ApiError, Profile, ProfileList};

const KEYCHAIN_SERVICE: &str = "a2-studio";
const RECENT_KEPT: usize = 8;

/// The profile file's location: `$A2_STUDIO_CONFIG_DIR`, else the XDG config
/// dir. Never a shared temporary directory: with neither `HOME` nor an XDG
/// directory there is no place of this user's own to keep profiles.
/// An XDG base directory: `$var` when it is an absolute path (the spec has
/// relative ones ignored), else `$HOME/fallback`; `None` with neither.
pub(crate) fn xdg_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(fallback)))
}

pub fn default_dir() -> Result<PathBuf, ApiError> {
    if let Some(dir) = std::env::var_os("A2_STUDIO_CONFIG_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let base = xdg_dir("XDG_CONFIG_HOME", ".config").ok_or_else(|| {
        ApiError::new(
            ErrorCode::ProfilesUnwritable,
            "no config directory of this user's: set HOME, XDG_CONFIG_HOME or A2_STUDIO_CONFIG_DIR",
        )
    })?;
    Ok(base.join("a2-studio"))
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Book {
    #[serde(default)]
    profiles: Vec<Profile>,
    #[serde(default)]
    recent: Vec<String>,
}

pub struct Profiles {
    file: PathBuf,
    lock: std::sync::Mutex<()>,
}

/// A URL's password, cut out of both places a URL can carry one
/// (`user:pass@` and `?password=`): (the URL without it, the password).
/// What is not a URL the `url` crate reads (`sqlite:…`, `memory:`) has none.
pub fn split_password(url: &str) -> (String, Option<String>) {
    let Ok(mut parsed) = url::Url::parse(url) else { return (url.to_owned(), None) };
    if !parsed.has_host() && parsed.password().is_none() && !url.contains("password") {
        return (url.to_owned(), None);
    }
    let mut password = parsed.password().map(percent_decode);
    if parsed.password().is_some() {
        // Only fails for URLs that cannot have a password, which this one just had.
        let _ = parsed.set_password(None);
    }
    // The other parameters stay exactly as written (their encoding too): only `password=` goes.
    if let Some(query) = parsed.query().map(str::to_owned) {
        let (secret, kept): (Vec<&str>, Vec<&str>) =
            // The driver decodes a key before it reads it: `pass%77ord=` is a password too.
            query.split('&').partition(|part| part.split('=').next().map(percent_decode).as_deref() == Some("password"));
        if let Some(value) = secret.first().and_then(|part| part.split_once('=')).map(|(_, v)| v) {
            password = password.or_else(|| Some(percent_decode(&value.replace('+', " "))));
            parsed.set_query((!kept.is_empty()).then(|| kept.join("&")).as_deref());
        }
    }
    // A pooled URL's direct `listen_url=` is a URL of its own, which may carry one too.
    if let Some(query) = parsed.query().map(str::to_owned) {
        let mut cut = false;
        let parts: Vec<String> = query
            .split('&')
            .map(|part| match part.split_once('=').map(|(key, value)| (percent_decode(key), value)) {
                Some((key, value)) if key == "listen_url" => {
                    let (bare, inner) = split_password(&percent_decode(&value.replace('+', " ")));
                    if inner.is_none() {
                        return part.to_owned();
                    }
                    cut = true;
                    password = password.take().or(inner);
                    format!("listen_url={}", url::form_urlencoded::byte_serialize(bare.as_bytes()).collect::<String>())
                }
                _ => part.to_owned(),
            })
            .collect();
        if cut {
            parsed.set_query(Some(&parts.join("&")));
        }
    }
    (parsed.to_string(), password)
}

/// The URL as it may be shown, stored, logged or audited: without a password.
pub fn redact(url: &str) -> String {
    split_password(url).0
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A saved profile, ready to connect: its URL, its keychain password kept apart, its mode.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub url: String,
    pub password: Option<String>,
    pub read_only: bool,
}

/// Write `bytes` to `path` readable by this user only (0600 on Unix).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    // A file that existed before keeps its mode through open(): narrow it.
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Whom a URL logs in to: host, port, user and database, from the URL's
/// parts and the libpq parameters that override them (`?host=`, `?port=`,
/// `?user=`, `?dbname=`, `?hostaddr=`); anything else, the URL itself.
fn target(url: &str) -> Vec<(String, String)> {
    let Ok(parsed) = url::Url::parse(url) else { return vec![("url".into(), url.to_owned())] };
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return vec![("url".into(), url.to_owned())];
    }
    let mut parts = vec![
        ("host".to_owned(), parsed.host_str().unwrap_or("").to_ascii_lowercase()),
        ("port".to_owned(), parsed.port().unwrap_or(5432).to_string()),
        ("user".to_owned(), percent_decode(parsed.username())),
        ("dbname".to_owned(), percent_decode(parsed.path().trim_start_matches('/'))),
    ];
    for (key, value) in parsed.query_pairs() {
        if let Some(part) = parts.iter_mut().find(|(k, _)| *k == key) {
            part.1 = value.into_owned();
        } else if key == "hostaddr" {
            parts.push(("hostaddr".into(), value.into_owned()));
        } else if key == "listen_url" {
            // A pooled URL's direct one is sent the same password: it is a target too.
            parts.extend(target(&value).into_iter().map(|(k, v)| (format!("listen_{k}"), v)));
        }
    }
    parts
}

/// What a URL's TLS promises, as libpq ranks `sslmode` (disable 0 … verify-full 5),
/// with the root a verifying mode trusts. An unnamed mode is what a connection
/// gets: verify-full to another machine, prefer to this one (as the Postgres store
/// connects). Not a Postgres URL: nothing to rank.
fn tls_level(url: &str) -> (u8, Option<String>) {
    let Ok(parsed) = url::Url::parse(url) else { return (0, None) };
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return (0, None);
    }
    let mut host = parsed.host_str().unwrap_or("").to_ascii_lowercase();
    let (mut mode, mut root) = (None, None);
    for (key, value) in parsed.query_pairs() {
        match key.as_ref() {
            "sslmode" => mode = Some(value.to_ascii_lowercase()),
            "sslrootcert" => root = Some(value.into_owned()),
            "host" => host = value.to_ascii_lowercase(),
            _ => {}
        }
    }
    let local = host.is_empty()
        || host.starts_with('/')
        || host == "localhost"
        || host.starts_with("127.")
        || host.trim_matches(['[', ']']) == "::1";
    let rank = match mode.as_deref() {
        Some("disable") => 0,
        Some("allow") => 1,
        Some("prefer") => 2,
        Some("require") => 3,
        Some("verify-ca") => 4,
        Some("verify-full") => 5,
        // A mode libpq does not know fails to connect; rank it weakest, so no password follows it.
        Some(_) => 0,
        None if local => 2,
        None => 5,
    };
    (rank, root.filter(|_| rank >= 4))
}

/// Whether a password saved under `before`'s TLS may go out under `after`'s:
/// never over weaker TLS, nor verified against another root.
fn tls_holds(before: &str, after: &str) -> bool {
    let ((was, was_root), (now, now_root)) = (tls_level(before), tls_level(after));
    now >= was && (was < 4 || was_root == now_root)
}

fn keychain(name: &str) -> Result<keyring::Entry, ApiError> {
    keyring::Entry::new(KEYCHAIN_SERVICE, name).map_err(keychain_error)
}

/// Make the OS keychain usable by this process; call it first in `main`,
/// before any thread starts (a keyring joined later reaches one thread only).
///
/// Linux keeps secrets in the session keyring, linked to the user's
/// persistent keyring. A desktop login has a session keyring; a process
/// started outside one (a service, a container, ssh without pam_keyinit) only
/// sees the shared user-session keyring, where saving fails: such a process
/// joins a session keyring of its own.
pub fn prepare_keychain() {
    #[cfg(target_os = "linux")]
    {
        use linux_keyutils::{KeyRing, KeyRingIdentifier};
        let session = KeyRing::from_special_id(KeyRingIdentifier::Session, false).ok();
        let user_session = KeyRing::from_special_id(KeyRingIdentifier::UserSession, false).ok();
        if session.is_none() || session == user_session {
            const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
            // SAFETY: keyctl(JOIN_SESSION_KEYRING, NULL) reads no memory of
            // ours: NULL asks the kernel for a new anonymous session keyring.
            let joined = unsafe {
                libc::syscall(libc::SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, std::ptr::null::<libc::c_char>())
            };
            if joined < 0 {
                tracing::warn!(error = %std::io::Error::last_os_error(), "no session keyring: passwords cannot be saved");
            }
        }
    }
}

fn keychain_error(error: keyring::Error) -> ApiError {
    ApiError::new(ErrorCode::KeychainUnavailable, format!("the OS keychain refused the password: {error}"))
}

impl Profiles {
    pub fn new(dir: &Path) -> Self {
        Self { file: dir.join("profiles.json"), lock: std::sync::Mutex::new(()) }
    }

    /// The directory the profiles are kept in (the Studio's config directory).
    pub fn dir(&self) -> &Path {
        self.file.parent().unwrap_or(Path::new("."))
    }

    fn read(&self) -> Result<Book, ApiError> {
        match std::fs::read(&self.file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                ApiError::new(
                    ErrorCode::ProfilesUnreadable,
                    format!("{} is not a profile file: {e}", self.file.display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Book::default()),
            Err(e) => {
                Err(ApiError::new(ErrorCode::ProfilesUnreadable, format!("cannot read {}: {e}", self.file.display())))
            }
        }
    }

    /// Written to a temporary file and renamed, so a crash never leaves half a file.
    fn write(&self, book: &Book) -> Result<(), ApiError> {
        let fail = |e: std::io::Error| {
            ApiError::new(ErrorCode::ProfilesUnwritable, format!("cannot write {}: {e}", self.file.display()))
        };
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let text = serde_json::to_vec_pretty(book).map_err(|e| ApiError::invalid(e.to_string()))?;
        let partial = self.file.with_extension("json.partial");
        write_private(&partial, &text).map_err(fail)?;
        std::fs::rename(&partial, &self.file).map_err(fail)
    }

    pub fn list(&self) -> Result<ProfileList, ApiError> {
        let _guard = self.lock.lock().map_err(|_| ApiError::new(ErrorCode::Internal, "profile lock poisoned"))?;
        let book = self.read()?;
        Ok(ProfileList { profiles: book.profiles, recent: book.recent })
    }

    /// Save a profile; a password (given, or found in the URL) goes to the keychain.
    pub fn save(&self, name: &str, url: &str, password: Option<String>, read_only: bool) -> Result<Profile, ApiError> {
        if name.trim().is_empty() {
            return Err(ApiError::invalid("a profile needs a name"));
        }
        let (url, in_url) = split_password(url.trim());
        let password = password.filter(|p| !p.is_empty()).or(in_url);
        if let Some(password) = &password {
            keychain(name)?.set_password(password).map_err(keychain_error)?;
        }
        let _guard = self.lock.lock().map_err(|_| ApiError::new(ErrorCode::Internal, "profile lock poisoned"))?;
        let mut book = self.read()?;
        let before = book.profiles.iter().find(|p| p.name == name && p.has_password);
        // A saved password belongs to the server it was saved for, over the TLS
        // it was saved with: re-pointed at another host, port, user or database,
        // or asked to travel over weaker TLS, the profile forgets it rather than send it.
        let kept_password = before.is_some_and(|p| target(&p.url) == target(&url) && tls_holds(&p.url, &url));
        if before.is_some() && !kept_password && password.is_none() {
            match keychain(name)?.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => {}
                Err(e) => return Err(keychain_error(e)),
            }
        }
        book.profiles.retain(|p| p.name != name);
        let profile = Profile {
            name: name.to_owned(),
            url,
            read_only,
            has_password: password.is_some() || kept_password,
            last_used: None,
        };
        book.profiles.push(profile.clone());
        book.profiles.sort_by(|a, b| a.name.cmp(&b.name));
        self.write(&book)?;
        Ok(profile)
    }

    pub fn delete(&self, name: &str) -> Result<bool, ApiError> {
        let _guard = self.lock.lock().map_err(|_| ApiError::new(ErrorCode::Internal, "profile lock poisoned"))?;
        let mut book = self.read()?;
        let Some(profile) = book.profiles.iter().find(|p| p.name == name).cloned() else { return Ok(false) };
        if profile.has_password {
            match keychain(name)?.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => {}
                Err(e) => return Err(keychain_error(e)),
            }
        }
        book.profiles.retain(|p| p.name != name);
        self.write(&book)?;
        Ok(true)
    }

    /// The profile to connect with, its password read from the keychain.
    pub fn resolve(&self, name: &str) -> Result<Resolved, ApiError> {
        let book = self.list()?;
        let Some(profile) = book.profiles.into_iter().find(|p| p.name == name) else {
            return Err(ApiError::new(ErrorCode::NotFound, format!("no profile named '{name}'")));
        };
        let password = match profile.has_password {
            true => Some(keychain(name)?.get_password().map_err(keychain_error)?),
            false => None,
        };
        Ok(Resolved { url: profile.url, password, read_only: profile.read_only })
    }

    /// Remember a store as recently opened (and when its profile was last used).
    pub fn touch(&self, url: &str, profile: Option<&str>, now: i64) -> Result<(), ApiError> {
        let _guard = self.lock.lock().map_err(|_| ApiError::new(ErrorCode::Internal, "profile lock poisoned"))?;
        let mut book = self.read()?;
        let url = split_password(url).0;
        book.recent.retain(|r| *r != url);
        book.recent.insert(0, url);
        book.recent.truncate(RECENT_KEPT);
        if let Some(profile) = book.profiles.iter_mut().find(|p| Some(p.name.as_str()) == profile) {
            profile.last_used = Some(now);
        }
        self.write(&book)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_cut_from_both_places_a_url_carries_one() {
        let (url, password) = split_password("postgres://ops:s3cr%3Aet@db.example.com:5432/app?sslmode=require");
        assert_eq!(url, "postgres://ops@db.example.com:5432/app?sslmode=require");
        assert_eq!(password.as_deref(), Some("s3cr:et"));
        let (url, password) = split_password("postgres://ops@db.example.com/app?password=hunter2&sslmode=verify-full");
        assert_eq!(url, "postgres://ops@db.example.com/app?sslmode=verify-full");
        assert_eq!(password.as_deref(), Some("hunter2"));
        assert_eq!(redact("postgresql://db/app?password=x"), "postgresql://db/app");
        let (url, password) =
            split_password("postgres://ops@pool/app?pgbouncer=true&listen%5Furl=postgres%3A%2F%2Fops%3Apw%40db%2Fapp");
        assert!(!url.contains("pw") && password.as_deref() == Some("pw"), "an encoded key is the same key: {url}");
        let (url, password) = split_password("postgres://ops@db.example.com/app?pass%77ord=hunter2&sslmode=require");
        assert_eq!(
            (url.as_str(), password.as_deref()),
            ("postgres://ops@db.example.com/app?sslmode=require", Some("hunter2"))
        );
        let (url, password) = split_password(
            "postgres://ops@pool:6432/app?pgbouncer=true&listen_url=postgres%3A%2F%2Fops%3Apw%40db%2Fapp",
        );
        assert_eq!(url, "postgres://ops@pool:6432/app?pgbouncer=true&listen_url=postgres%3A%2F%2Fops%40db%2Fapp");
        assert_eq!(password.as_deref(), Some("pw"));
        assert_eq!(split_password("sqlite:/tmp/a.sqlite"), ("sqlite:/tmp/a.sqlite".into(), None));
        assert_eq!(split_password("sqlite:.a2/dev.sqlite"), ("sqlite:.a2/dev.sqlite".into(), None));
        assert_eq!(split_password("memory:"), ("memory:".into(), None));
        assert_eq!(split_password("postgres://ops@db/app"), ("postgres://ops@db/app".into(), None));
    }

    /// Re-saving a profile for another host, port, user or database forgets
    /// its password; the same server (other options) keeps it.
    #[test]
    fn profile_password_follows_its_host() {
        prepare_keychain();
        let dir = std::env::temp_dir().join(format!("a2-profiles-host-{}", std::process::id()));
        let profiles = Profiles::new(&dir);
        let name = format!("follows-{}", std::process::id());
        profiles.save(&name, "postgres://ops:hunter2@db.example.com/app", None, true).unwrap();
        let same =
            profiles.save(&name, "postgres://ops@db.example.com:5432/app?sslmode=verify-full", None, true).unwrap();
        assert!(same.has_password, "the same server keeps its password");
        assert_eq!(profiles.resolve(&name).unwrap().password.as_deref(), Some("hunter2"));
        for elsewhere in [
            "postgres://ops@evil.example.com/app",
            "postgres://ops@db.example.com:6432/app",
            "postgres://root@db.example.com/app",
            "postgres://ops@db.example.com/other",
            "postgres://ops@db.example.com/app?host=evil.example.com",
        ] {
            profiles.save(&name, "postgres://ops:hunter2@db.example.com/app", None, true).unwrap();
            let moved = profiles.save(&name, elsewhere, None, true).unwrap();
            assert!(!moved.has_password, "{elsewhere}: the password stayed behind");
            assert_eq!(profiles.resolve(&name).unwrap().password, None, "{elsewhere}: nothing is sent there");
        }
        // A new password given with the new host is the new host's.
        let moved = profiles.save(&name, "postgres://ops@other.example.com/app", Some("fresh".into()), true).unwrap();
        assert!(moved.has_password);
        assert_eq!(profiles.resolve(&name).unwrap().password.as_deref(), Some("fresh"));
        let _ = profiles.delete(&name);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Re-saving a profile with weaker TLS (or another root to verify
    /// against) forgets its password; stronger TLS keeps it.
    #[test]
    fn profile_password_dropped_when_tls_is_weakened() {
        prepare_keychain();
        let dir = std::env::temp_dir().join(format!("a2-profiles-tls-{}", std::process::id()));
        let profiles = Profiles::new(&dir);
        let name = format!("tls-{}", std::process::id());
        let cases = [
            (
                "postgres://ops:pw@db.example.com/app?sslmode=verify-full",
                "postgres://ops@db.example.com/app?sslmode=disable",
            ),
            (
                "postgres://ops:pw@db.example.com/app?sslmode=verify-full",
                "postgres://ops@db.example.com/app?sslmode=require",
            ),
            ("postgres://ops:pw@db.example.com/app", "postgres://ops@db.example.com/app?sslmode=prefer"),
            ("postgres://ops:pw@db.example.com/app?sslmode=require", "postgres://ops@db.example.com/app?sslmode=allow"),
            (
                "postgres://ops:pw@db.example.com/app?sslmode=verify-full&sslrootcert=/etc/a.pem",
                "postgres://ops@db.example.com/app?sslmode=verify-full&sslrootcert=/tmp/b.pem",
            ),
            ("postgres://ops:pw@localhost/app", "postgres://ops@localhost/app?sslmode=disable"),
            (
                "postgres://ops:pw@db.example.com/app?sslmode=require",
                "postgres://ops@db.example.com/app?sslmode=verify-fulll",
            ),
        ];
        for (saved, weaker) in cases {
            profiles.save(&name, saved, None, true).unwrap();
            let weakened = profiles.save(&name, weaker, None, true).unwrap();
            assert!(!weakened.has_password, "{saved} -> {weaker}: the password stayed");
            assert_eq!(profiles.resolve(&name).unwrap().password, None, "{weaker}: nothing is sent over it");
        }
        for (saved, stronger) in [
            (
                "postgres://ops:pw@db.example.com/app?sslmode=require",
                "postgres://ops@db.example.com/app?sslmode=verify-full",
            ),
            ("postgres://ops:pw@db.example.com/app?sslmode=verify-full", "postgres://ops@db.example.com/app"),
            ("postgres://ops:pw@localhost/app?sslmode=disable", "postgres://ops@localhost/app"),
        ] {
            profiles.save(&name, saved, None, true).unwrap();
            let kept = profiles.save(&name, stronger, None, true).unwrap();
            assert!(kept.has_password, "{saved} -> {stronger}: as strong or stronger keeps the password");
            assert_eq!(profiles.resolve(&name).unwrap().password.as_deref(), Some("pw"));
        }
        let _ = profiles.delete(&name);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_profile_file_never_holds_a_password() {
        prepare_keychain();
        let dir = std::env::temp_dir().join(format!("a2-profiles-{}", std::process::id()));
        let profiles = Profiles::new(&dir);
        let profile = profiles.save("prod", "postgres://ops:hunter2@db.example.com/app", None, true).unwrap();
        assert!(profile.has_password);
        assert_eq!(profile.url, "postgres://ops@db.example.com/app");
        let resolved = profiles.resolve("prod").unwrap();
        assert_eq!(resolved.url, "postgres://ops@db.example.com/app", "the URL never carries the password");
        assert_eq!(resolved.password.as_deref(), Some("hunter2"), "the password came back from the keychain");
        assert!(resolved.read_only);
        let file = std::fs::read_to_string(dir.join("profiles.json")).unwrap_or_default();
        assert!(!file.contains("hunter2"), "{file}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("profiles.json")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "the profile file is this user's alone");
        }
        profiles.save("dev", "sqlite:/tmp/dev.sqlite", None, false).unwrap();
        profiles.touch("sqlite:/tmp/dev.sqlite", Some("dev"), 42).unwrap();
        let list = profiles.list().unwrap();
        assert_eq!(list.recent, vec!["sqlite:/tmp/dev.sqlite".to_owned()]);
        assert_eq!(list.profiles.iter().find(|p| p.name == "dev").unwrap().last_used, Some(42));
        assert!(profiles.delete("dev").unwrap());
        let _ = profiles.delete("prod");
        let _ = std::fs::remove_dir_all(dir);
    }
}
