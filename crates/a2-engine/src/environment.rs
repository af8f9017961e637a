//! Which store a server gets when none is named: tests use memory,
//! development the SQLite dev file, production must name one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use a2_store::memory::MemoryStore;
use a2_store::{Store, SystemClock};
use a2_store_sqlite::{Access, Sqlite};

use crate::A2Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    Development,
    Test,
    Production,
}

impl Environment {
    /// From `A2_ENV` (`development`, `test`, `production`); development when unset.
    pub fn from_env() -> Result<Self, A2Error> {
        match std::env::var("A2_ENV").ok().as_deref() {
            None | Some("" | "development" | "dev") => Ok(Self::Development),
            Some("test") => Ok(Self::Test),
            Some("production" | "prod") => Ok(Self::Production),
            Some(other) => Err(A2Error::InvalidArgument {
                message: format!("A2_ENV={other:?} is not one of development, test, production"),
            }),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Development => "development",
            Self::Test => "test",
            Self::Production => "production",
        }
    }
}

/// Where the development default store lives: `$A2_DEV_STORE`, else `.a2/dev.sqlite`.
pub fn dev_store_path() -> PathBuf {
    std::env::var_os("A2_DEV_STORE").map_or_else(|| PathBuf::from(a2_store_sqlite::DEV_STORE_PATH), PathBuf::from)
}

/// The store to use: the one named, else memory for tests, else the SQLite
/// dev file at `dev_path` for development; production without one is
/// refused rather than writing somewhere ephemeral.
pub async fn resolve_store(
    environment: Environment,
    named: Option<Arc<dyn Store>>,
    dev_path: &Path,
) -> Result<Arc<dyn Store>, A2Error> {
    if let Some(store) = named {
        return Ok(store);
    }
    match environment {
        Environment::Test => Ok(Arc::new(MemoryStore::default())),
        Environment::Development => {
            let store = Sqlite::open(dev_path, Access::ReadWrite, Arc::new(SystemClock)).await?;
            Ok(Arc::new(store))
        }
        Environment::Production => Err(A2Error::StoreNotConfigured {
            environment: environment.name().into(),
            message: "production must name its store explicitly (a Postgres URL)".into(),
        }),
    }
}
