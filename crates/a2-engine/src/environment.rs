//! Which store a server gets when none is named: tests use memory,
//! development the SQLite dev file, production must name one.

use std::sync::Arc;

use a2_store::memory::MemoryStore;
use a2_store::Store;

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

/// The store to use: the one named, else memory for tests, else the dev
/// default for development; production without one is refused rather than
/// writing somewhere ephemeral.
pub fn resolve_store(
    environment: Environment,
    named: Option<Arc<dyn Store>>,
    dev_default: Option<&dyn Fn() -> Result<Arc<dyn Store>, A2Error>>,
) -> Result<Arc<dyn Store>, A2Error> {
    if let Some(store) = named {
        return Ok(store);
    }
    match environment {
        Environment::Test => Ok(Arc::new(MemoryStore::default())),
        Environment::Development => match dev_default {
            Some(open) => open(),
            None => Err(A2Error::StoreNotConfigured {
                environment: environment.name().into(),
                message: "no store was named and no dev default store is available".into(),
            }),
        },
        Environment::Production => Err(A2Error::StoreNotConfigured {
            environment: environment.name().into(),
            message: "production must name its store explicitly (a Postgres URL)".into(),
        }),
    }
}
