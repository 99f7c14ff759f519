//! [`shutdown_signal`]: the future a process passes as `shutdown` to informers,
//! controllers, electors and shard members, so that SIGINT (Ctrl-C) or SIGTERM (what
//! Kubernetes sends a Pod it stops) shuts them down cleanly.

/// Completes at the first SIGINT (Ctrl-C) or SIGTERM; a second one exits the process
/// at once (status 130), for a shutdown that hangs. kube-runtime's
/// `shutdown_on_signal`, as a future to hand to every `run`:
///
/// ```no_run
/// # async fn demo(factory: informer::factory::SharedInformerFactory) {
/// use informer::shutdown_signal;
/// use informer::controller::{Controller, backoff};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # async fn reconcile(_: std::sync::Arc<ConfigMap>, _: informer::controller::Context<ConfigMap>) -> Result<informer::controller::Action, kube::Error> { Ok(informer::controller::Action::Done) }
///
/// Controller::<ConfigMap>::new(&factory)
///     .run(reconcile, backoff, shutdown_signal())
///     .await
///     .ok();
/// factory.shutdown().await;
/// # }
/// ```
///
/// Each call listens on its own, so several `run`s may each get one; the signal
/// completes them all. Outside a Unix system only Ctrl-C is listened for. A signal
/// handler that cannot be installed (the runtime has no signal driver, or the
/// process may not handle signals) is logged, and the future then never completes.
pub async fn shutdown_signal() {
    signal().await;
    tracing::info!("shutting down (a second SIGINT or SIGTERM exits at once)");
    tokio::spawn(async {
        signal().await;
        tracing::warn!("second signal: exiting without finishing the shutdown");
        std::process::exit(130);
    });
}

/// Completes at the next SIGINT or SIGTERM.
async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let terminate = async {
            match signal(SignalKind::terminate()) {
                Ok(mut terminate) => {
                    terminate.recv().await;
                }
                Err(error) => {
                    tracing::error!(%error, "cannot listen for SIGTERM");
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::select! {
            () = interrupt() => {}
            () = terminate => {}
        }
    }
    #[cfg(not(unix))]
    interrupt().await;
}

/// Completes at the next Ctrl-C.
async fn interrupt() {
    if let Err(error) = tokio::signal::ctrl_c().await {
        tracing::error!(%error, "cannot listen for Ctrl-C");
        std::future::pending::<()>().await;
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn sigterm_completes_the_shutdown_signal() {
        let waiting = tokio::spawn(shutdown_signal());
        // The spawned future installs its handlers at its first poll, while this
        // single-threaded test sleeps.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let status = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("completed on SIGTERM")
            .unwrap();
    }
}
