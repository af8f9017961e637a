//! One guard for every task that must not outlive its owner.

/// Aborts a spawned task when dropped: an abandoned head leaves no zombie
/// run, a finished drain no settler, a finished run no watch.
pub(crate) struct AbortOnDrop<T>(pub tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
