//! Which objects a factory's informer keeps: a namespace, selectors and a key filter
//! ([`Selection`]), and what one informer lists ([`Target`]).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use kube::Resource;

use crate::object::{DynamicTypeOf, Object, ResourceOf};

use crate::reflector::{self, KeyFilter};
use crate::scope::FactoryScope;

/// Which objects an informer keeps: those of a namespace (or all), matching selectors,
/// and kept by a key filter. ("Scope" is kept for a resource's scope, namespaced or
/// cluster-wide: [`FactoryScope`].)
///
/// Built like the other settings, from `Default` with `#[must_use]` methods:
///
/// ```
/// use informer::factory::Selection;
///
/// let web = Selection::default().namespace("shop").label_selector("app=web");
/// # let _ = web;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[must_use]
pub struct Selection {
    /// Only this namespace (ignored for cluster-scoped types); `None`: all.
    pub(super) namespace: Option<String>,
    /// Only objects matching this label selector.
    pub(super) label_selector: Option<String>,
    /// Only objects matching this field selector.
    pub(super) field_selector: Option<String>,
    /// Only objects this filter keeps, chosen by key before they are decoded.
    pub(super) key_filter: Option<NamedKeyFilter>,
}

impl Selection {
    /// Only the objects of this namespace (ignored for cluster-scoped types); by
    /// default, every namespace's.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only the objects this label selector matches (`app=web,tier!=cache`).
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only the objects this field selector matches (`spec.nodeName=node-1`).
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// This selection, keeping only the objects `filter` keeps, skipped before they are
    /// decoded, with a relist whenever its generation moves (see
    /// [`KeyFilter`]). `id` names the filter: selections with filters of the same id are
    /// the same selection, so they share one informer; a filtered selection is never the
    /// unfiltered one (its handlers see a filter that shrinks as deletions of objects
    /// that still exist). Informers' names end with it: `ConfigMap in default
    /// [shard web/replica-1]`.
    pub fn filtered(mut self, id: impl Into<String>, filter: Arc<dyn KeyFilter>) -> Self {
        self.key_filter = Some(NamedKeyFilter::new(id, filter));
        self
    }

    /// The reflector settings of an informer in this selection: `config` with the
    /// selection's key filter, if any.
    pub(super) fn reflector_config(&self, config: &reflector::Config) -> reflector::Config {
        match &self.key_filter {
            Some(named) => config.clone().key_filter(Arc::clone(&named.filter)),
            None => config.clone(),
        }
    }

    /// The informer's name in logs, errors and metrics: `ConfigMap in default
    /// (app=web) [shard web/replica-1]`; `ConfigMap` for every namespace, no selector
    /// and no key filter.
    pub(crate) fn name_for(&self, kind: &str) -> String {
        let mut name = kind.to_owned();
        if let Some(namespace) = &self.namespace {
            name.push_str(" in ");
            name.push_str(namespace);
        }
        let selectors: Vec<&str> = [&self.label_selector, &self.field_selector]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        if !selectors.is_empty() {
            name.push_str(&format!(" ({})", selectors.join(", ")));
        }
        if let Some(filter) = &self.key_filter {
            name.push_str(&format!(" [{}]", filter.id));
        }
        name
    }
}

/// A [`KeyFilter`] with an id, as a [`Selection`] carries it: compared, hashed and
/// printed by its id alone.
#[derive(Clone)]
pub(crate) struct NamedKeyFilter {
    id: String,
    filter: Arc<dyn KeyFilter>,
}

impl NamedKeyFilter {
    /// `filter`, named `id`.
    pub(crate) fn new(id: impl Into<String>, filter: Arc<dyn KeyFilter>) -> Self {
        Self {
            id: id.into(),
            filter,
        }
    }

    /// The id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The filter.
    pub(crate) fn filter(&self) -> &Arc<dyn KeyFilter> {
        &self.filter
    }
}

impl PartialEq for NamedKeyFilter {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for NamedKeyFilter {}

impl Hash for NamedKeyFilter {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl fmt::Debug for NamedKeyFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NamedKeyFilter").field(&self.id).finish()
    }
}

/// What an informer lists: the resource `K`'s dynamic type names, and whether it lives
/// in namespaces (for a cluster-scoped one the namespace of a selection is dropped, so
/// every ask shares one informer).
pub(super) struct Target<'a, K: Object> {
    pub(super) dynamic_type: &'a DynamicTypeOf<K>,
    pub(super) namespaced: bool,
    /// Known at run time (named so in errors, beside a typed informer of the same kind).
    pub(super) dynamic: bool,
}

impl<K> Target<'static, K>
where
    K: Object<Resource: Resource<DynamicType = (), Scope: FactoryScope>>,
{
    /// A static type, scoped as its `Resource::Scope` says.
    pub(super) fn of() -> Self {
        Target {
            dynamic_type: &(),
            namespaced: <ResourceOf<K> as Resource>::Scope::is_namespaced(),
            dynamic: false,
        }
    }
}
