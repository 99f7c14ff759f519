//! Typed indexes: an index as a type, its keys checked by the compiler.
//!
//! A named [`IndexFunc`] answers string queries: nothing checks the index name, the
//! key's type or what kind of object comes back. Here a *marker type* implementing
//! [`Index<K>`] is one index of resource `K`: its name, its key type
//! ([`Index::Value`]: a `String`, an integer, an enum...) and how an object's keys are
//! found. [`TypedIndex`] is its [`IndexFunc`], registered by [`Indexers::with_index`],
//! and [`IndexQuery::by_index`] takes a key of the right type, encoded the same way
//! ([`IndexKey`], [`AsIndexKey`]), and hands out `Arc<K>`.
//!
//! A typed query on a cache that lacks the index adds it first, built over the current
//! content, so generic code can query a cache without knowing how it was made.
//! `#[derive(Informable)]` ([`crate::informable`]) writes the marker types for you;
//! [`Lister`](crate::lister::Lister) has the same queries as inherent methods.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::{IndexFunc, IndexedField, Indexer, Indexers, StoreError};
use crate::shared::Shared;

/// One named, typed index of resource type `K`, implemented by a marker type.
///
/// The index maps each key to the objects that have it. An object has zero or more
/// keys ([`index_values`](Self::index_values)), each the string form
/// ([`encode`](Self::encode)) of a [`Value`](Self::Value). Queries take a `Value` (or
/// anything that [`AsIndexKey`] it) and encode it the same way, so they only find what
/// the index function emitted.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an index of `{K}`",
    label = "not an index of `{K}`",
    note = "the indexes of a type are declared with `#[informable(index(...))]` on it, \
            or by implementing `informer::store::Index<{K}>` for a marker type"
)]
pub trait Index<K>: 'static {
    /// The index's name in the store.
    const NAME: &'static str;

    /// The type of the keys queries pass (`String` for a node name, `u32`, an enum...).
    type Value;

    /// The string form under which objects with key `value` are indexed.
    ///
    /// When `Value` is `String`, this must return the string unchanged: queries and
    /// index functions that hold a `&str` use it as it is, without a `String` to pass
    /// here (checked by debug assertions).
    fn encode(value: &Self::Value) -> Cow<'_, str>;

    /// Calls `emit` with the string form of each key of `object` (duplicates are
    /// harmless). Runs under the store's write lock: keep it quick and panic-free.
    fn index_values(object: &K, emit: &mut dyn FnMut(&str));

    /// What the index holds, when the store can use it to answer label selectors.
    fn indexed_field() -> IndexedField<'static> {
        IndexedField::Custom
    }
}

/// A value that can be an index key: it has one canonical string form.
///
/// Implemented for strings, integers, `bool` and `char`. Implement it for your own key
/// types (an enum, a newtype), or index them by `Display` or serde form with
/// `format = "display"` / `format = "serde"` in the derive.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an index key",
    label = "not an index key",
    note = "index keys are strings, integers, `bool` or `char`; implement \
            `informer::store::IndexKey` for `{Self}`, or use `format = \"display\"` \
            or `format = \"serde\"` in the index attribute"
)]
pub trait IndexKey {
    /// The string under which this key is indexed.
    fn index_key(&self) -> Cow<'_, str>;
}

impl IndexKey for str {
    fn index_key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

impl IndexKey for String {
    fn index_key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

impl IndexKey for bool {
    fn index_key(&self) -> Cow<'_, str> {
        Cow::Borrowed(if *self { "true" } else { "false" })
    }
}

macro_rules! index_key_by_display {
    ($($ty:ty),* $(,)?) => {$(
        impl IndexKey for $ty {
            fn index_key(&self) -> Cow<'_, str> {
                Cow::Owned(self.to_string())
            }
        }
    )*};
}

index_key_by_display!(
    char, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
);

/// A value a query can pass for keys of type `V`: a `V`, a `&V`, and for `String`
/// keys any string (`&str`, `&String`, `Cow<str>`, `Arc<str>`, a
/// [`Shared<String>`](crate::projection::Shared)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a key of an index whose keys are `{V}`",
    label = "expected a `{V}` (or a reference to one)",
    note = "the key type of a derived index is the field's type; declare it with \
            `value = ...` in `#[informable(index(...))]` when the derive cannot see it"
)]
pub trait AsIndexKey<V> {
    /// The string form of this key, by `encode` unless it is already a string.
    fn as_index_key(&self, encode: fn(&V) -> Cow<'_, str>) -> Cow<'_, str>;
}

impl<V> AsIndexKey<V> for V {
    fn as_index_key(&self, encode: fn(&V) -> Cow<'_, str>) -> Cow<'_, str> {
        encode(self)
    }
}

impl<V> AsIndexKey<V> for &V {
    fn as_index_key(&self, encode: fn(&V) -> Cow<'_, str>) -> Cow<'_, str> {
        encode(self)
    }
}

// Every format (`IndexKey`, `Display`, serde) writes a `String` as itself, and
// `Index::encode` promises to, so borrowed strings need no encoding (nor a `String`).
macro_rules! string_keys {
    ($($ty:ty),* $(,)?) => {$(
        impl AsIndexKey<String> for $ty {
            fn as_index_key(&self, encode: fn(&String) -> Cow<'_, str>) -> Cow<'_, str> {
                <str as AsIndexKey<String>>::as_index_key(self, encode)
            }
        }
    )*};
}

string_keys!(
    &str,
    Cow<'_, str>,
    Arc<str>,
    Box<str>,
    Shared<String>,
    &Shared<String>
);

impl AsIndexKey<String> for str {
    fn as_index_key(&self, encode: fn(&String) -> Cow<'_, str>) -> Cow<'_, str> {
        debug_assert_eq!(
            encode(&self.to_owned()),
            self,
            "`Index::encode` must return a `String` key unchanged"
        );
        Cow::Borrowed(self)
    }
}

/// The [`IndexFunc`] of an [`Index`]: what the store runs to maintain it.
pub struct TypedIndex<I>(PhantomData<fn() -> I>);

impl<I> TypedIndex<I> {
    /// The index function of `I`.
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<I> Default for TypedIndex<I> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I> Clone for TypedIndex<I> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<I> fmt::Debug for TypedIndex<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TypedIndex<{}>", std::any::type_name::<I>())
    }
}

impl<K: 'static, I: Index<K>> IndexFunc<K> for TypedIndex<I> {
    fn index_values(&self, obj: &K, emit: &mut dyn FnMut(&str)) {
        I::index_values(obj, emit);
    }

    fn indexed_field(&self) -> IndexedField<'_> {
        I::indexed_field()
    }
}

impl<K: 'static> Indexers<K> {
    /// Adds the typed index `I` under its name.
    #[must_use]
    pub fn with_index<I: Index<K>>(self) -> Self {
        self.with(I::NAME, TypedIndex::<I>::new())
    }
}

/// Runs `query` on index `I`, defining `I` first if the cache lacks it.
pub(crate) fn typed_query<K, I, T>(
    indexer: &Indexer<K>,
    query: impl Fn(&Indexer<K>) -> Result<Vec<T>, StoreError>,
) -> Vec<T>
where
    K: 'static,
    I: Index<K>,
{
    match query(indexer) {
        Ok(found) => found,
        Err(StoreError::IndexNotFound(_)) => {
            tracing::debug!(index = I::NAME, "typed query on a missing index: adding it");
            // Another thread may have added it meanwhile: a conflict is fine.
            let _ = indexer.add_indexers(Indexers::new().with_index::<I>());
            query(indexer).unwrap_or_default()
        }
        Err(_) => Vec::new(),
    }
}

/// Typed index queries over a cache of `K`: implemented by
/// [`Lister`](crate::lister::Lister),
/// [`NamespaceLister`](crate::lister::NamespaceLister) (its namespace only) and
/// [`Indexer`].
///
/// The query trait `#[derive(Informable)]` generates (`lister.by_node("n1")`) is
/// implemented for every `IndexQuery<K>`. `Lister` and `NamespaceLister` also have
/// `by_index` as an inherent method, so `lister.by_index::<ByNode>("n1")` needs no
/// import; `Indexer` has an untyped inherent `by_index`, so call this one as
/// `IndexQuery::by_index(&indexer, ...)`.
pub trait IndexQuery<K> {
    /// The objects with the key `value` in index `I` (client-go's `ByIndex`, typed).
    ///
    /// `I` must be an index of `K` and `value` a key of `I`'s key type, or this does
    /// not compile. A cache that lacks the index gets it first.
    fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>>;
}

impl<K: 'static> IndexQuery<K> for Indexer<K> {
    fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>> {
        let key = value.as_index_key(I::encode);
        typed_query::<K, I, _>(self, |indexer| indexer.by_index(I::NAME, &key))
    }
}

#[cfg(test)]
mod tests;
