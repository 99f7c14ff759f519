//! The API server's command line.

use std::path::Path;

use super::pki::Pki;

/// The API server's command line, before the caller's extra flags, for a
/// kube-apiserver of `minor` (its minor version, when known).
#[allow(clippy::too_many_arguments)]
pub(super) fn apiserver_args(
    minor: Option<u32>,
    etcd_url: &str,
    port: u16,
    dir: &Path,
    pki: &Pki,
    tokens: &Path,
    watch_cache: bool,
    sharded_list_and_watch: bool,
) -> Vec<String> {
    let mut args = vec![
        format!("--etcd-servers={etcd_url}"),
        "--bind-address=127.0.0.1".to_owned(),
        "--advertise-address=127.0.0.1".to_owned(),
        // The `kubernetes` Service's endpoints would name the advertise address, which
        // 1.37 refuses when it is a loopback one; nothing here needs them (envtest
        // leaves them out too).
        "--endpoint-reconciler-type=none".to_owned(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", pki.serving_cert.display()),
        format!("--tls-private-key-file={}", pki.serving_key.display()),
        format!("--token-auth-file={}", tokens.display()),
        format!("--watch-cache={watch_cache}"),
        format!("--cert-dir={}", dir.join("apiserver-certs").display()),
        "--authorization-mode=RBAC".to_owned(),
        "--service-account-issuer=https://kubernetes.default.svc".to_owned(),
        format!(
            "--service-account-key-file={}",
            pki.service_account_pub.display()
        ),
        format!(
            "--service-account-signing-key-file={}",
            pki.service_account_key.display()
        ),
        "--api-audiences=https://kubernetes.default.svc".to_owned(),
        "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
        "--disable-admission-plugins=ServiceAccount".to_owned(),
        // Client certificates signed by the control plane's CA authenticate too (`CN`
        // the user, `O` the groups), as on a cluster.
        format!("--client-ca-file={}", pki.ca_cert.display()),
    ];
    // An alpha gate only the releases that have it accept (an unknown gate is a
    // start-up error).
    if minor.is_some_and(|m| m >= 36) {
        args.push(format!(
            "--feature-gates=ShardedListAndWatch={sharded_list_and_watch}"
        ));
    }
    args
}
