//! [`Outcome`]: how the demo scripts the operators written twice run against
//! ([`backup_demo`](crate::backup_demo), [`sample_demo`](crate::sample_demo)) drive
//! an operator and report back once it has stopped.

use std::future::Future;
use std::sync::{Arc, Mutex};

/// A script's outcome, read after the operator it drove stopped.
#[derive(Clone, Default)]
pub struct Outcome(Arc<Mutex<Option<anyhow::Result<()>>>>);

impl Outcome {
    /// Runs `script` in a task, or until Ctrl-C; the returned future completes when it
    /// is over: the operator's shutdown signal.
    pub fn drive(
        self,
        script: impl Future<Output = anyhow::Result<()>> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + Sync + 'static {
        let driving = tokio::spawn(async move {
            let outcome = tokio::select! {
                outcome = script => outcome,
                () = informer::shutdown_signal() => Ok(()),
            };
            *self.0.lock().expect("lock") = Some(outcome);
        });
        async move {
            let _ = driving.await;
        }
    }

    /// The script's result, once the operator has stopped.
    pub fn result(&self) -> anyhow::Result<()> {
        self.0.lock().expect("lock").take().unwrap_or(Ok(()))
    }
}
