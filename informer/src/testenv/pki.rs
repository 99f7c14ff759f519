//! The certificates and keys a local control plane needs, made fresh for each one.
//!
//! A CA signs the API server's serving certificate for `127.0.0.1` and `localhost`, so
//! clients verify TLS as they would against a real cluster (no insecure skip). A
//! separate key signs service-account tokens.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::TestEnvError;

/// Paths of the files written by [`write`].
#[derive(Debug, Clone)]
pub(crate) struct Pki {
    /// The CA certificate clients trust.
    pub(crate) ca_cert: PathBuf,
    /// The API server's serving certificate.
    pub(crate) serving_cert: PathBuf,
    /// The serving certificate's private key.
    pub(crate) serving_key: PathBuf,
    /// The private key that signs service-account tokens.
    pub(crate) service_account_key: PathBuf,
    /// Its public half, which verifies them.
    pub(crate) service_account_pub: PathBuf,
}

/// Generates the PKI and writes it as PEM files into `dir`.
pub(crate) fn write(dir: &Path) -> Result<Pki, TestEnvError> {
    let pki = |e: rcgen::Error| TestEnvError::Pki(e.to_string());

    let ca_key = KeyPair::generate().map_err(pki)?;
    let mut ca_params = CertificateParams::default();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "informer-testenv-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(pki)?;
    let issuer = Issuer::new(ca_params, &ca_key);

    let serving_key = KeyPair::generate().map_err(pki)?;
    let mut serving_params = CertificateParams::new(vec![
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
        "kubernetes.default.svc".to_owned(),
    ])
    .map_err(pki)?;
    serving_params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    serving_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving_cert = serving_params
        .signed_by(&serving_key, &issuer)
        .map_err(pki)?;

    let service_account_key = KeyPair::generate().map_err(pki)?;

    let out = Pki {
        ca_cert: dir.join("ca.crt"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        service_account_key: dir.join("service-account.key"),
        service_account_pub: dir.join("service-account.pub"),
    };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TestEnvError::Io { path, source }
    };
    std::fs::write(&out.ca_cert, ca_cert.pem()).map_err(io(&out.ca_cert))?;
    std::fs::write(&out.serving_cert, serving_cert.pem()).map_err(io(&out.serving_cert))?;
    std::fs::write(&out.serving_key, serving_key.serialize_pem()).map_err(io(&out.serving_key))?;
    std::fs::write(
        &out.service_account_key,
        service_account_key.serialize_pem(),
    )
    .map_err(io(&out.service_account_key))?;
    // kube-apiserver 1.20 reads PKCS#8 private keys but not as verification keys.
    std::fs::write(
        &out.service_account_pub,
        service_account_key.public_key_pem(),
    )
    .map_err(io(&out.service_account_pub))?;
    Ok(out)
}
