//! What a controller is wired to: the builder records each type it owns, watches or
//! reads as a [`Wire`], and [`wire`] makes them when the controller runs (each type's
//! informer from the factory, the owner index, the registry entry and the event
//! handler), as controller-runtime's builder only records its watches and the
//! controller makes them when it starts. So a controller built and dropped leaves
//! nothing in its factory, and the mode chosen last decides every cache.

use std::any::TypeId;
use std::fmt;
use std::sync::Arc;

use super::handlers::{PendingHandler, Relation, mapping_handler};
use super::mapping::{IntoPrimaryKey, controller_key, controller_uid, owner_index_name};
use super::predicate::Predicate;
use super::primary::Primary;
use super::registry::Registry;
use crate::factory::{Cacheable, NamedKeyFilter, SharedInformerFactory};
use crate::key::{ObjectKey, short_type_name};
use crate::lister::Lister;
use crate::reflector::{ControlledBy, KeyFilter};
use crate::shared_informer::SharedIndexInformer;
use crate::store::Indexers;

/// One type the builder recorded, made when the controller runs.
pub(crate) struct Wire<K> {
    relation: Relation,
    kind: &'static str,
    make: Make<K>,
}

/// What makes a wire's informer, index, registry entry and handler.
type Make<K> = Box<dyn FnOnce(&mut Wiring<'_, K>) + Send>;

impl<K> fmt::Debug for Wire<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {}", self.relation, self.kind)
    }
}

/// What the wires are made on, and what they make.
struct Wiring<'a, K> {
    factory: &'a SharedInformerFactory,
    /// The mode's share of the keys, when it cuts the caches down to one.
    share: Option<&'a NamedKeyFilter>,
    primary: &'a SharedIndexInformer<K>,
    registry: Registry,
    handlers: Vec<PendingHandler>,
}

/// The controller's wiring, made: the primary informer (its entry filtered by the
/// mode's share, if it has one), every type registered, and the handlers to register.
pub(crate) struct Wired<K> {
    pub(crate) primary: SharedIndexInformer<K>,
    /// What the primary cache keeps, when the mode cuts it down to a share.
    pub(crate) primary_filter: Option<Arc<dyn KeyFilter>>,
    pub(crate) registry: Registry,
    pub(crate) handlers: Vec<PendingHandler>,
}

/// Makes the primary informer and then `wires`, in the order they were recorded, on
/// `factory`, with the caches a mode with `share` keeps.
pub(crate) fn wire<K: Primary>(
    factory: &SharedInformerFactory,
    share: Option<NamedKeyFilter>,
    wires: Vec<Wire<K>>,
) -> Wired<K> {
    let primary = match &share {
        Some(share) => factory.informer_for::<K>(
            factory
                .default_selection()
                .filtered(share.id(), Arc::clone(share.filter())),
        ),
        None => factory.informer::<K>(),
    };
    let mut registry = Registry::default();
    match &share {
        Some(share) => registry.register_filtered(&primary, Arc::clone(share.filter())),
        None => registry.register(&primary),
    }
    let mut wiring = Wiring {
        factory,
        share: share.as_ref(),
        primary: &primary,
        registry,
        handlers: Vec::new(),
    };
    for wire in wires {
        (wire.make)(&mut wiring);
    }
    let Wiring {
        registry, handlers, ..
    } = wiring;
    Wired {
        primary_filter: share.map(|share| Arc::clone(share.filter())),
        primary,
        registry,
        handlers,
    }
}

/// `C`, owned by the primary: its changes queue the key its controller owner
/// reference names, and an index of `C` by owner serves
/// [`Context::owned`](super::Context::owned). Under a mode with a share, the
/// factory's entry of `C` filtered by [`ControlledBy`] (the children of this
/// replica's primaries only).
pub(crate) fn owns<K: Primary, C: Cacheable>(predicate: Option<Predicate<C>>) -> Wire<K> {
    Wire {
        relation: Relation::Owned,
        kind: short_type_name::<C>(),
        make: Box::new(move |wiring: &mut Wiring<'_, K>| {
            let informer = match wiring.share {
                Some(share) => {
                    let filter: Arc<dyn KeyFilter> =
                        Arc::new(ControlledBy::<K>::new(Arc::clone(share.filter())));
                    let selection = wiring.factory.default_selection().filtered(
                        format!("controlled by {} of {}", K::kind(&()), share.id()),
                        Arc::clone(&filter),
                    );
                    let informer = wiring.factory.informer_for::<C>(selection);
                    if TypeId::of::<C>() == TypeId::of::<K>() {
                        // The primary's registration (its share's cache) stays; the
                        // children's informer is still waited for.
                        wiring.registry.register(&informer);
                    } else {
                        wiring.registry.register_filtered(&informer, filter);
                    }
                    informer
                }
                None => {
                    let informer = wiring.factory.informer::<C>();
                    wiring.registry.register(&informer);
                    informer
                }
            };
            let index = owner_index_name::<K>();
            let indexer = informer.indexer();
            if !indexer.index_names().contains(&index) {
                let by_owner = Indexers::new().with_fn(index.clone(), controller_uid::<K, C>);
                // Only fails if another controller of `K` added the same index meanwhile.
                let _ = indexer.add_indexers(by_owner);
            }
            wiring.registry.set_owned::<C>(indexer, index);
            wiring.handlers.push(mapping_handler(
                &informer,
                Relation::Owned,
                predicate,
                |child: &C| controller_key::<K>(child.metadata()),
                |_| {},
            ));
        }),
    }
}

/// `W`, watched: its changes queue the keys `mapper` names, given the primary lister.
pub(crate) fn watches<K, W, F, I>(predicate: Option<Predicate<W>>, mapper: F) -> Wire<K>
where
    K: Primary,
    W: Cacheable,
    F: Fn(&W, &Lister<K>) -> I + Send + Sync + 'static,
    I: IntoIterator,
    I::Item: IntoPrimaryKey<K>,
{
    Wire {
        relation: Relation::Watched,
        kind: short_type_name::<W>(),
        make: Box::new(move |wiring: &mut Wiring<'_, K>| {
            let informer = wiring.factory.informer::<W>();
            wiring.registry.register(&informer);
            let primaries = wiring.primary.lister();
            wiring.handlers.push(mapping_handler(
                &informer,
                Relation::Watched,
                predicate,
                move |watched: &W| {
                    mapper(watched, &primaries)
                        .into_iter()
                        .map(IntoPrimaryKey::into_primary_key)
                },
                |_| {},
            ));
        }),
    }
}

/// `C`, read: its lister is the reconcile's, its changes queue nothing.
pub(crate) fn reads<K: Primary, C: Cacheable>() -> Wire<K> {
    Wire {
        relation: Relation::Read,
        kind: short_type_name::<C>(),
        make: Box::new(|wiring: &mut Wiring<'_, K>| {
            let informer = wiring.factory.informer::<C>();
            wiring.registry.register(&informer);
            // Maps to no key, but wakes read-your-writes waiters on every change.
            wiring.handlers.push(mapping_handler(
                &informer,
                Relation::Read,
                None,
                |_: &C| None::<ObjectKey>,
                |_| {},
            ));
        }),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};

    use crate::controller::Controller;
    use crate::factory::{FactoryConfig, SharedInformerFactory};

    /// A factory on a server nobody runs: nothing here sends a request.
    fn factory() -> SharedInformerFactory {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        SharedInformerFactory::new(client, FactoryConfig::default())
    }

    #[tokio::test]
    async fn a_controller_built_and_dropped_leaves_nothing_in_its_factory() {
        let factory = factory();
        let controller = Controller::<Deployment>::new(&factory)
            .owns::<ConfigMap>()
            .watches(|_: &Secret, _| Vec::<crate::key::ObjectKey>::new())
            .reads::<Service>();
        let described = format!("{controller:?}");
        assert!(
            described.contains("wires: [Owned ConfigMap, Watched Secret, Read Service]"),
            "the builder says what it recorded: {described}"
        );
        drop(controller);
        assert!(factory.is_empty(), "{} informers were made", factory.len());
        assert!(
            !factory
                .informer::<ConfigMap>()
                .indexer()
                .index_names()
                .contains(&super::owner_index_name::<Deployment>()),
            "no owner index was added to the shared cache"
        );
    }
}
