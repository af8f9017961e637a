//! Which store a server gets when none is named: tests use memory,
//! development the SQLite dev file, production must name one. Here, above
//! the engine, so the engine itself depends on no backend.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use a2_engine::{A2Error, Contract, Server, ServerBuilder};
use a2_store::memory::MemoryStore;
use a2_store::{Access, SystemClock};
use a2_store_sqlite::Sqlite;

use crate::Opened;
use a2_store::OpenedStore;

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

/// The default store of `environment`: memory for tests, the SQLite dev file
/// at `dev_path` for development; production without a named store is
/// refused rather than writing somewhere ephemeral.
pub async fn resolve_store(environment: Environment, dev_path: &Path) -> Result<Opened, A2Error> {
    match environment {
        Environment::Test => Ok(Opened::Memory(Arc::new(MemoryStore::default()))),
        Environment::Development => {
            let store = Sqlite::open(dev_path, Access::ReadWrite, Arc::new(SystemClock)).await?;
            Ok(Opened::Sqlite(Arc::new(store)))
        }
        Environment::Production => Err(A2Error::StoreNotConfigured {
            environment: environment.name().into(),
            message: "production must name its store explicitly (a Postgres URL)".into(),
        }),
    }
}

/// A server builder on the store this environment defaults to (`A2_ENV`):
/// the SQLite dev file in development, memory in tests; production must
/// name its store, so there this is `STORE_NOT_CONFIGURED`.
pub async fn server_builder_from_env(contract: Contract) -> Result<ServerBuilder, A2Error> {
    let opened = resolve_store(Environment::from_env()?, &dev_store_path()).await?;
    Ok(Server::builder(contract, opened.store()))
}
