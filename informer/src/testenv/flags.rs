//! The API server's command line, per Kubernetes version.

use std::path::Path;

use super::Kubernetes;
use super::pki::Pki;

/// The API server's command line for `kubernetes`, before the caller's extra flags.
pub(super) fn apiserver_args(
    kubernetes: Kubernetes,
    etcd_url: &str,
    port: u16,
    dir: &Path,
    pki: &Pki,
    tokens: &Path,
    watch_cache: bool,
) -> Vec<String> {
    let mut args = vec![
        format!("--etcd-servers={etcd_url}"),
        "--bind-address=127.0.0.1".to_owned(),
        "--advertise-address=127.0.0.1".to_owned(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", pki.serving_cert.display()),
        format!("--tls-private-key-file={}", pki.serving_key.display()),
        format!("--token-auth-file={}", tokens.display()),
        format!("--watch-cache={watch_cache}"),
    ];
    match kubernetes {
        Kubernetes::V1_20 => args.extend([
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
        ]),
        // That is all crd-apiserver needs: its main takes no --kubeconfig (there is
        // no core API to reach), leaves out the delegated authentication and
        // authorisation lookups and every admission plugin (those would wait for a
        // kube-apiserver that never comes, and refuse every write meanwhile), and
        // authorises `system:masters` itself. The client CA lets x509 client
        // certificates in as well as tokens.
        Kubernetes::V1_36 => {
            args.push(format!("--client-ca-file={}", pki.ca_cert.display()));
        }
    }
    args
}
