//! The conformance suite on the in-memory store.

use std::sync::Arc;

use a2_store::memory::MemoryStore;
use a2_store::{Clock, Store};

fn memory(clock: Arc<dyn Clock>) -> impl std::future::Future<Output = Arc<dyn Store>> {
    std::future::ready(Arc::new(MemoryStore::new(clock)) as Arc<dyn Store>)
}

a2_conformance::conformance_suite!(memory, memory);
