//! An optional kube-controller-manager, so that what a cluster does on its own also
//! happens in tests.
//!
//! A bare API server stores owner references and deletion finalizers but never acts
//! on them: deleting an owner leaves its dependents behind, a foreground deletion
//! waits forever on its `foregroundDeletion` finalizer, and a deleted namespace stays
//! `Terminating` with everything still in it. Those are the garbage collector's and
//! the namespace controller's jobs, both part of kube-controller-manager. With
//! [`TestEnvBuilder::controller_manager`](super::TestEnvBuilder::controller_manager)
//! the control plane runs it with exactly those two controllers, built from the same
//! Kubernetes source as the API server.
//!
//! It talks to the API server as the admin, through the control plane's own
//! kubeconfig (so no service-account tokens are needed), and serves only its health
//! endpoint, over TLS with the API server's certificate on a free loopback port, which
//! is how readiness is polled. No leader election: there is one of it.

use std::path::Path;

use kube::Config;

use super::pki::Pki;
use super::process::Supervised;
use super::{TestEnv, TestEnvError, free_port, readiness};

/// The controllers it runs: cascading deletion through owner references, and
/// emptying then removing deleted namespaces.
const CONTROLLERS: &str = "garbagecollector,namespace";

impl TestEnv {
    /// Starts `program` as the controller manager of this control plane, with
    /// `extra_args` after its own, and waits until its health endpoint answers.
    pub(super) async fn start_controller_manager(
        &self,
        program: &Path,
        pki: &Pki,
        extra_args: Vec<String>,
    ) -> Result<Supervised, TestEnvError> {
        let port = free_port(&self.dir)?;
        let mut args = args(&self.kubeconfig, port, pki);
        args.extend(extra_args);
        let server = Supervised::spawn(
            "kube-controller-manager",
            program,
            &args,
            &self.dir.join("kube-controller-manager.log"),
            None,
        )?;
        // The admin's configuration (the control plane's CA, the admin token) pointed
        // at the controller manager's own port.
        let mut config: Config = self.admin.clone();
        config.cluster_url = format!("https://127.0.0.1:{port}")
            .parse()
            .expect("a loopback URL is valid");
        let client = kube::Client::try_from(config).map_err(TestEnvError::Client)?;
        readiness::wait_for_ok(&client, "/healthz", "kube-controller-manager", &server).await?;
        Ok(server)
    }
}

/// The command line of a controller manager that reaches the API server through
/// `kubeconfig` and serves its health endpoint on `port` with `pki`'s serving
/// certificate.
fn args(kubeconfig: &Path, port: u16, pki: &Pki) -> Vec<String> {
    let kubeconfig = kubeconfig.display();
    vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--controllers={CONTROLLERS}"),
        "--leader-elect=false".to_owned(),
        "--use-service-account-credentials=false".to_owned(),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", pki.serving_cert.display()),
        format!("--tls-private-key-file={}", pki.serving_key.display()),
        // Requests to its endpoint are checked against this API server, never against
        // a cluster the test process happens to run in (which is where it would look
        // without these). The client-CA lookups only serve client certificates, which
        // nobody here uses.
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--authentication-skip-lookup=true".to_owned(),
        // At the default 20 requests/s the garbage collector's first sync (a list of
        // every resource) and a namespace's cleanup wait on the client side; a test
        // server can take more.
        "--kube-api-qps=200".to_owned(),
        "--kube-api-burst=400".to_owned(),
    ]
}
