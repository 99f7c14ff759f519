//! A TCP proxy in front of the API server that a test can cut and restore.
//!
//! Some faults the API server cannot make on demand: "this client is disconnected
//! while others keep writing". A [`FaultProxy`] forwards raw TCP (TLS passes through
//! untouched, so clients still verify the server) until [`FaultProxy::disconnect`]
//! drops every connection and refuses new ones; [`FaultProxy::reconnect`] opens the
//! same port again.

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
        let acceptor = tokio::spawn(async move {
            while let Ok((mut downstream, _)) = listener.accept().await {
                let mut cut = generation.subscribe();
                cut.mark_unchanged();
                tokio::spawn(async move {
                    let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut downstream, &mut up) => {}
                        _ = cut.changed() => {}
                    }
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
