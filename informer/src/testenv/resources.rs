//! The API objects tests keep needing, made with the admin client.
//!
//! A namespace per test (so tests can share one control plane), a Role and
//! RoleBinding that let the restricted user (`restricted`) do one thing (to test what an informer does
//! when RBAC says no, then yes), and CustomResourceDefinitions, waited for until
//! they are served, as envtest does.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use rand::Rng;

use super::{READY_TIMEOUT, RESTRICTED_USER, TestEnv, TestEnvError};

impl TestEnv {
    /// Creates a namespace with a unique name starting with `prefix`, for a test to
    /// isolate its objects from other tests sharing this control plane.
    pub async fn create_namespace(&self, prefix: &str) -> Result<String, TestEnvError> {
        let n = self.namespaces.fetch_add(1, Ordering::Relaxed);
        let suffix: u32 = rand::rng().random_range(0..0x10000);
        let name = format!("{prefix}-{n}-{suffix:04x}");
        let namespace: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name }
        }))
        .expect("a namespace with a name is valid");
        Api::<Namespace>::all(self.client()?)
            .create(&PostParams::default(), &namespace)
            .await
            .map_err(TestEnvError::Client)?;
        Ok(name)
    }

    /// Deletes a namespace. With the controller manager
    /// ([`TestEnvBuilder::controller_manager`](super::TestEnvBuilder::controller_manager))
    /// its objects are deleted and then the namespace itself; without it, the
    /// namespace stays Terminating with its objects in it (which no new object can
    /// join), and its name is not reused.
    pub async fn delete_namespace(&self, name: &str) -> Result<(), TestEnvError> {
        Api::<Namespace>::all(self.client()?)
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ())
            .map_err(TestEnvError::Client)
    }

    /// Lets the restricted user (`restricted`) use `verbs` on `resource` (of API group `api_group`,
    /// `""` for the core group) in `namespace`, through a Role and RoleBinding named
    /// after the resource. RBAC's authorizer learns of the binding through its own
    /// informer, so allow a moment before the user is let in.
    pub async fn allow_restricted(
        &self,
        namespace: &str,
        api_group: &str,
        resource: &str,
        verbs: &[&str],
    ) -> Result<(), TestEnvError> {
        use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
        let name = format!("restricted-{resource}");
        let role: Role = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name },
            "rules": [{ "apiGroups": [api_group], "resources": [resource], "verbs": verbs }],
        }))
        .expect("a valid Role");
        let binding: RoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name },
            "subjects": [{
                "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": RESTRICTED_USER,
            }],
        }))
        .expect("a valid RoleBinding");
        let client = self.client()?;
        Api::<Role>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &role)
            .await
            .map_err(TestEnvError::Client)?;
        Api::<RoleBinding>::namespaced(client, namespace)
            .create(&PostParams::default(), &binding)
            .await
            .map_err(TestEnvError::Client)?;
        Ok(())
    }

    /// Installs a CustomResourceDefinition (an existing one of the same name is
    /// kept) and waits until the API server serves its resource, as envtest does:
    /// until the CRD is `Established` and a list of its resource answers.
    ///
    /// Both waits matter: for a moment after the CRD is created its resource answers
    /// 404 (the handler does not know it yet) or 429 `storage is (re)initializing`, and
    /// one request in that moment took 2 s (seen on 1.36's apiextensions-apiserver).
    /// kube's [`CustomResourceExt::crd`](kube::CustomResourceExt::crd) makes the CRD
    /// of a `#[derive(CustomResource)]` type.
    pub async fn install_crd(
        &self,
        crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    ) -> Result<(), TestEnvError> {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let client = self.client()?;
        let crds = Api::<CustomResourceDefinition>::all(client.clone());
        match crds.create(&PostParams::default(), crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(e) => return Err(TestEnvError::Client(e)),
        }
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let established = crds
                .get(name)
                .await
                .map_err(TestEnvError::Client)?
                .status
                .and_then(|s| s.conditions)
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
            if established {
                break;
            }
            if Instant::now() >= deadline {
                return Err(TestEnvError::Client(kube::Error::Service(
                    format!("the CustomResourceDefinition {name} was not Established in time")
                        .into(),
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let spec = &crd.spec;
        let version = spec
            .versions
            .iter()
            .find(|v| v.served)
            .map(|v| v.name.as_str())
            .unwrap_or("v1");
        let url = format!(
            "/apis/{}/{version}/{}?limit=1",
            spec.group, spec.names.plural
        );
        loop {
            let request = http::Request::get(url.as_str())
                .body(Vec::new())
                .expect("a valid request");
            match client.request_text(request).await {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() >= deadline => return Err(TestEnvError::Client(e)),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}
