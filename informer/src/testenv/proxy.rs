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
//! [`FaultProxy::hold`] is a partition that heals: nothing passes either way, but
//! what is sent meanwhile is kept, as a kernel keeps a socket's bytes, and
//! [`FaultProxy::release`] delivers it all and forwards again, so a request sent
//! during the partition reaches the server late.

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
    /// While true, connections forward nothing and keep what they read.
    held: tokio::sync::watch::Sender<bool>,
    /// Bytes clients sent during a hold, delivered to the server on release.
    delivered_late: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Bytes the server sent through the proxy, delivered to clients.
    to_clients: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
            held: tokio::sync::watch::Sender::new(false),
            delivered_late: std::sync::Arc::default(),
            to_clients: std::sync::Arc::default(),
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

    /// A partition that will heal: from now on no byte passes either way on any
    /// connection, open or new, but each connection keeps what it reads, until
    /// [`FaultProxy::release`] delivers it. A request sent meanwhile reaches the
    /// server when the partition heals, however long after it was sent.
    pub fn hold(&self) {
        self.held.send_replace(true);
    }

    /// Ends a [`FaultProxy::hold`]: every connection delivers what it kept, in order,
    /// and forwards again.
    pub fn release(&self) {
        self.held.send_replace(false);
    }

    /// How many bytes clients sent while a [`FaultProxy::hold`] held them, and the
    /// server received when it was released: evidence that requests were sent during
    /// the partition and reached the server late.
    pub fn delivered_late(&self) -> u64 {
        self.delivered_late
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many bytes the API server sent through the proxy to its clients so far
    /// (responses and watch streams, TLS included): what the clients behind it
    /// received.
    pub fn bytes_to_clients(&self) -> u64 {
        self.to_clients.load(std::sync::atomic::Ordering::SeqCst)
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
        let held = self.held.clone();
        let delivered_late = std::sync::Arc::clone(&self.delivered_late);
        let to_clients = std::sync::Arc::clone(&self.to_clients);
        let acceptor = tokio::spawn(async move {
            while let Ok((mut downstream, _)) = listener.accept().await {
                let mut cut = generation.subscribe();
                cut.mark_unchanged();
                let mut silence = silenced.subscribe();
                silence.mark_unchanged();
                let dead = silent.load(std::sync::atomic::Ordering::SeqCst);
                let (up_held, down_held) = (held.subscribe(), held.subscribe());
                let late = std::sync::Arc::clone(&delivered_late);
                let sent = std::sync::Arc::clone(&to_clients);
                tokio::spawn(async move {
                    if dead {
                        // Accepted during a silence: open, and dead.
                        let _ = cut.changed().await;
                        return;
                    }
                    let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    let (mut from_client, mut to_client) = downstream.split();
                    let (mut from_server, mut to_server) = up.split();
                    tokio::select! {
                        _ = async {
                            tokio::join!(
                                pump(&mut from_client, &mut to_server, up_held, Some(&late), None),
                                pump(&mut from_server, &mut to_client, down_held, None, Some(&sent)),
                            )
                        } => {}
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

/// Forwards `from` to `to` until either ends, keeping what it reads while `held` is
/// true and delivering it, in order, when it turns false (counted in `late`); every
/// byte delivered is counted in `delivered`.
async fn pump(
    from: &mut (impl tokio::io::AsyncRead + Unpin),
    to: &mut (impl tokio::io::AsyncWrite + Unpin),
    mut held: tokio::sync::watch::Receiver<bool>,
    late: Option<&std::sync::atomic::AtomicU64>,
    delivered: Option<&std::sync::atomic::AtomicU64>,
) {
    let count = |bytes: usize| {
        if let Some(delivered) = delivered {
            delivered.fetch_add(bytes as u64, std::sync::atomic::Ordering::SeqCst);
        }
    };
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = vec![0; 16 * 1024];
    let mut kept: Vec<u8> = Vec::new();
    let mut open = true;
    loop {
        let holding = *held.borrow_and_update();
        if !holding && !kept.is_empty() {
            if to.write_all(&kept).await.is_err() {
                return;
            }
            if let Some(late) = late {
                late.fetch_add(kept.len() as u64, std::sync::atomic::Ordering::SeqCst);
            }
            count(kept.len());
            kept.clear();
        }
        if !open && kept.is_empty() {
            // The reading side ended and everything it sent is delivered.
            let _ = to.shutdown().await;
            return;
        }
        tokio::select! {
            read = from.read(&mut buffer), if open => match read {
                Ok(0) | Err(_) => open = false,
                Ok(n) if holding => kept.extend_from_slice(&buffer[..n]),
                Ok(n) => {
                    if to.write_all(&buffer[..n]).await.is_err() {
                        return;
                    }
                    count(n);
                }
            },
            changed = held.changed() => if changed.is_err() { return },
        }
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
