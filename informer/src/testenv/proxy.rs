//! A TCP proxy in front of the API server that a test can cut and restore.
//!
//! Some faults the API server cannot make on demand: "this client is disconnected
//! while others keep writing". A [`FaultProxy`] forwards raw TCP (TLS passes through
//! untouched, so clients still verify the server) until [`FaultProxy::disconnect`]
//! drops every connection and refuses new ones; [`FaultProxy::reconnect`] opens the
//! same port again. [`FaultProxy::silence`] is the nastier fault of a network
//! partition: connections stay open but nothing passes either way, as when packets
//! are lost without a FIN or RST; [`FaultProxy::heal`] lets new connections through
//! again while the silenced ones stay dead, so a client must notice on its own.

use std::sync::Mutex;

use kube::{Client, Config};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::TestEnvError;

use crate::lock::MutexExt;

/// A cuttable TCP proxy to the API server; see the [module docs](crate::testenv).
#[derive(Debug)]
pub struct FaultProxy {
    port: u16,
    upstream: u16,
    config: Config,
    acceptor: Mutex<Option<JoinHandle<()>>>,
    /// Bumped by every disconnect; connections end when it changes.
    generation: tokio::sync::watch::Sender<u64>,
    /// Bumped by every [`FaultProxy::silence`]; connections go silent when it changes.
    silenced: tokio::sync::watch::Sender<u64>,
    /// While true, new connections are accepted but never forwarded.
    silent: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl FaultProxy {
    pub(crate) async fn start(upstream: u16, config: &Config) -> Result<Self, TestEnvError> {
        let listener = bind(0).await?;
        let port = listener.local_addr().map_err(io_error)?.port();
        let mut config = config.clone();
        config.cluster_url = format!("https://127.0.0.1:{port}")
            .parse()
            .expect("a loopback URL is valid");
        let proxy = Self {
            port,
            upstream,
            config,
            acceptor: Mutex::new(None),
            generation: tokio::sync::watch::Sender::new(0),
            silenced: tokio::sync::watch::Sender::new(0),
            silent: std::sync::Arc::default(),
        };
        proxy.serve(listener);
        Ok(proxy)
    }

    /// A client (admin) whose connections go through the proxy.
    pub fn client(&self) -> Result<Client, TestEnvError> {
        Client::try_from(self.config.clone()).map_err(TestEnvError::Client)
    }

    /// The client configuration pointing at the proxy.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Drops every open connection and refuses new ones until
    /// [`FaultProxy::reconnect`]. When this returns, the port is closed.
    pub async fn disconnect(&self) {
        let acceptor = self.acceptor.locked().take();
        if let Some(acceptor) = acceptor {
            acceptor.abort();
            // Wait until the listener is really gone.
            let _ = acceptor.await;
        }
        self.generation.send_modify(|g| *g += 1);
    }

    /// A silent partition: every open connection stops forwarding in both directions
    /// but stays open (no FIN, no RST), and new connections are accepted and then held
    /// the same way, until [`FaultProxy::heal`].
    pub fn silence(&self) {
        self.silent.store(true, std::sync::atomic::Ordering::SeqCst);
        self.silenced.send_modify(|g| *g += 1);
    }

    /// Ends a [`FaultProxy::silence`] for new connections; the connections it
    /// silenced stay open and dead until [`FaultProxy::disconnect`] or drop.
    pub fn heal(&self) {
        self.silent
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Accepts connections again, on the same port.
    pub async fn reconnect(&self) -> Result<(), TestEnvError> {
        if self.acceptor.locked().is_some() {
            return Ok(());
        }
        self.serve(bind(self.port).await?);
        Ok(())
    }

    fn serve(&self, listener: TcpListener) {
        let upstream = self.upstream;
        let generation = self.generation.clone();
        let silenced = self.silenced.clone();
        let silent = std::sync::Arc::clone(&self.silent);
        let acceptor = tokio::spawn(async move {
            while let Ok((mut downstream, _)) = listener.accept().await {
                let mut cut = generation.subscribe();
                cut.mark_unchanged();
                let mut silence = silenced.subscribe();
                silence.mark_unchanged();
                let held = silent.load(std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    if held {
                        // Accepted during a silence: open, and dead.
                        let _ = cut.changed().await;
                        return;
                    }
                    let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut downstream, &mut up) => {}
                        _ = cut.changed() => return,
                        _ = silence.changed() => {}
                    }
                    // Silenced: keep both sockets open, forward nothing, until cut.
                    let _ = cut.changed().await;
                    drop((downstream, up));
                });
            }
        });
        *self.acceptor.locked() = Some(acceptor);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(acceptor) = self
            .acceptor
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            acceptor.abort();
        }
        self.generation.send_modify(|g| *g += 1);
    }
}

async fn bind(port: u16) -> Result<TcpListener, TestEnvError> {
    TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(io_error)
}

fn io_error(source: std::io::Error) -> TestEnvError {
    TestEnvError::Io {
        path: "127.0.0.1".into(),
        source,
    }
}
