//! The worker's side of its line protocol with the driver: `synced` on stdout once its
//! cache is filled, then the driver's go-ahead on stdin. The sync, controller and
//! shard workers all speak it.

use std::io::Write;

/// Tells the driver (a line `synced` on stdout) that the worker has synced.
pub(crate) fn say_synced() -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "synced")?;
    stdout.flush()
}

/// The driver's next line on stdin (its go-ahead after `synced`).
pub(crate) async fn read_driver_line() -> anyhow::Result<String> {
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await??;
    Ok(line)
}
