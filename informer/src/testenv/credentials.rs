//! Who the control plane's users are and how they prove it.
//!
//! Each control plane gets two fresh random bearer tokens, one for the admin (`admin`) (in
//! `system:masters`) and one for the restricted user (`restricted`) (in no group, so RBAC grants it
//! nothing). The API server reads them from a static token file; clients read them
//! from a kubeconfig with one context per user, which is also what
//! [`TestEnv::kubeconfig_path`](super::TestEnv::kubeconfig_path) hands to `kubectl`.

use std::path::Path;

use kube::Config;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rand::Rng;

use super::{ADMIN_USER, RESTRICTED_USER, TestEnvError};

/// A fresh bearer token: 16 random bytes in hex.
pub(super) fn random_token() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes the API server's `--token-auth-file`: one `token,user,uid[,"groups"]` line
/// per user.
pub(super) fn write_token_file(
    path: &Path,
    admin_token: &str,
    restricted_token: &str,
) -> Result<(), TestEnvError> {
    write_file(
        path,
        &format!(
            "{admin_token},{ADMIN_USER},{ADMIN_USER}-uid,\"system:masters\"\n\
             {restricted_token},{RESTRICTED_USER},{RESTRICTED_USER}-uid\n"
        ),
    )
}

/// Writes a kubeconfig with one cluster (the API server on `port`, verified against
/// the CA certificate `ca`) and a context per user, the admin's being current.
pub(super) fn write_kubeconfig(
    path: &Path,
    port: u16,
    ca: &Path,
    admin_token: &str,
    restricted_token: &str,
) -> Result<(), TestEnvError> {
    let context = |user: &str| {
        serde_json::json!({
            "name": user,
            "context": { "cluster": "informer-testenv", "user": user, "namespace": "default" }
        })
    };
    // JSON is YAML, so every kubeconfig reader accepts this file.
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "informer-testenv",
            "cluster": {
                "server": format!("https://127.0.0.1:{port}"),
                "certificate-authority": ca,
            }
        }],
        "users": [
            { "name": ADMIN_USER, "user": { "token": admin_token } },
            { "name": RESTRICTED_USER, "user": { "token": restricted_token } },
        ],
        "contexts": [context(ADMIN_USER), context(RESTRICTED_USER)],
        "current-context": ADMIN_USER,
    });
    write_file(
        path,
        &serde_json::to_string_pretty(&kubeconfig).expect("JSON values serialise"),
    )
}

/// Loads one context of the kubeconfig at `kubeconfig`, the way a client would.
pub(super) async fn load_config(kubeconfig: &Path, context: &str) -> Result<Config, TestEnvError> {
    let file = Kubeconfig::read_from(kubeconfig).map_err(TestEnvError::Kubeconfig)?;
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    Config::from_custom_kubeconfig(file, &options)
        .await
        .map_err(TestEnvError::Kubeconfig)
}

fn write_file(path: &Path, contents: &str) -> Result<(), TestEnvError> {
    std::fs::write(path, contents).map_err(|source| TestEnvError::Io {
        path: path.to_path_buf(),
        source,
    })
}
