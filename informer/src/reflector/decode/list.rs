//! A list response, decoded as it streams in.
//!
//! Each item becomes a `K` as soon as its last byte has arrived, straight from the
//! received bytes, so the response body is never held whole (a list served from the
//! watch cache is one response of the whole collection, tens of megabytes for tens of
//! thousands of objects) and is parsed once. An item that does not decode is reported
//! in [`ListPage::undecodable`] and skipped; the rest of the list still decodes.

use std::sync::Arc;

use futures::AsyncBufReadExt;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::managed_fields::{Decoded, ManagedFields};
use super::object::{RawHeader, decode_error, decode_object};
use crate::key::ObjectKeyRef;
use crate::reflector::error::DecodeError;
use crate::reflector::lister_watcher::{CachedObjects, ListPage};

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawListMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Decodes a list response from `body` with `decoder` as it arrives; see
/// [`ListDecoder`].
pub(in crate::reflector) async fn decode_list_stream<K, B>(
    mut body: B,
    mut decoder: ListDecoder<'_, K>,
) -> Result<ListPage<K>, kube::Error>
where
    K: DeserializeOwned,
    B: futures::AsyncBufRead + Unpin,
{
    // The unparsed tail of what arrived: at most about one item plus one chunk.
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let chunk = body.fill_buf().await.map_err(kube::Error::ReadEvents)?;
        let len = chunk.len();
        if len == 0 {
            break;
        }
        if pending.is_empty() {
            // Parse straight from the received chunk; keep only its unparsed tail.
            let used = decoder.advance(chunk, false)?;
            pending.extend_from_slice(&chunk[used..]);
        } else {
            pending.extend_from_slice(chunk);
            let used = decoder.advance(&pending, false)?;
            pending.drain(..used);
        }
        body.consume_unpin(len);
    }
    let used = decoder.advance(&pending, true)?;
    decoder.finish(&pending[used..])
}

/// Decodes a whole list response held in memory.
#[cfg(test)]
fn decode_list<K: DeserializeOwned>(
    text: &str,
    mut decoder: ListDecoder<'_, K>,
) -> Result<ListPage<K>, kube::Error> {
    let used = decoder.advance(text.as_bytes(), true)?;
    decoder.finish(&text.as_bytes()[used..])
}

/// Where a [`ListDecoder`] is in the list object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListState {
    /// Before the opening `{`.
    Start,
    /// After `{` (`first`) or `,`: a key, or `}` right after `{`.
    Key { first: bool },
    /// After `"key":`, its value.
    Value(ListField),
    /// In the `items` array, after `[` (`first`) or `,`: an item, or `]` after `[`.
    Item { first: bool },
    /// After an item: `,` or `]`.
    AfterItem,
    /// After a value: `,` or `}`.
    AfterValue,
    /// After the closing `}`: only whitespace may follow.
    Done,
}

/// The fields of a list the decoder reads; the others are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListField {
    Metadata,
    Items,
    Other,
}

/// What parsing one value from the bytes at hand gave.
enum Parsed<T> {
    /// The value, and how many bytes it (and the whitespace before it) took.
    Value(T, usize),
    /// The value is not complete yet.
    More,
}

/// Parses one JSON value at the start of `input` (after whitespace). A value cut off by
/// the end of `input` is [`Parsed::More`] unless `eof`; so is a number or literal that
/// ends exactly at the end of `input`, since more digits may follow.
fn parse_one<'de, T: Deserialize<'de>>(
    input: &'de [u8],
    eof: bool,
) -> Result<Parsed<T>, serde_json::Error> {
    let mut values = serde_json::Deserializer::from_slice(input).into_iter::<T>();
    match values.next() {
        None => Ok(Parsed::More),
        Some(Ok(value)) => {
            let used = values.byte_offset();
            let delimited = matches!(
                input.iter().find(|b| !b.is_ascii_whitespace()),
                Some(b'{' | b'[' | b'"')
            );
            if used == input.len() && !eof && !delimited {
                Ok(Parsed::More)
            } else {
                Ok(Parsed::Value(value, used))
            }
        }
        Some(Err(e)) if e.is_eof() && !eof => Ok(Parsed::More),
        Some(Err(e)) => Err(e),
    }
}

/// [`parse_one`] of an object, decoded through the [adapter](super::managed_fields).
fn parse_object<K: DeserializeOwned>(
    input: &[u8],
    eof: bool,
    managed_fields: ManagedFields,
) -> Result<Parsed<K>, serde_json::Error> {
    fn parse<K: DeserializeOwned, const DROP: bool>(
        input: &[u8],
        eof: bool,
    ) -> Result<Parsed<K>, serde_json::Error> {
        Ok(match parse_one::<Decoded<K, DROP>>(input, eof)? {
            Parsed::Value(Decoded(object), used) => Parsed::Value(object, used),
            Parsed::More => Parsed::More,
        })
    }
    match managed_fields {
        ManagedFields::Drop => parse::<K, true>(input, eof),
        ManagedFields::Keep => parse::<K, false>(input, eof),
    }
}

fn malformed(what: &str) -> kube::Error {
    kube::Error::SerdeError(<serde_json::Error as serde::de::Error>::custom(format!(
        "malformed list response: {what}"
    )))
}

/// An incremental decoder of one list response (`{"metadata": {..}, "items": [..]}`).
///
/// [`advance`](Self::advance) takes the bytes received so far and returns how many it
/// has consumed; the caller keeps the rest and passes it again, followed by more bytes.
/// Each item is decoded into `K` straight from those bytes. An item that does not fit
/// `K` is skipped (its end found without decoding) and reported in
/// [`ListPage::undecodable`], as before. An item cut off by the end of the bytes is
/// tried again only once twice as many of its bytes are there, so a large item costs
/// time linear in its size however finely the response is chunked.
///
/// With a [`CachedObjects`] (a relist), each item's end is found first and its
/// metadata read; an item the cache holds at the same resourceVersion and uid is
/// taken from the cache ([`ListPage::unchanged`]) and never decoded.
pub(in crate::reflector) struct ListDecoder<'k, K> {
    kind: &'k str,
    managed_fields: ManagedFields,
    cache: Option<&'k dyn CachedObjects<K>>,
    state: ListState,
    /// The current item did not decode, with this error: only its end is sought.
    skipping: Option<serde_json::Error>,
    /// Bytes of the current item to wait for before trying it again.
    retry_len: usize,
    /// Decoding attempts of items, complete or not (for tests).
    attempts: usize,
    items: Vec<K>,
    unchanged: Vec<Arc<K>>,
    undecodable: Vec<DecodeError>,
    metadata: RawListMeta,
}

impl<'k, K: DeserializeOwned> ListDecoder<'k, K> {
    pub(in crate::reflector) fn new(
        kind: &'k str,
        managed_fields: ManagedFields,
        cache: Option<&'k dyn CachedObjects<K>>,
    ) -> Self {
        Self {
            kind,
            managed_fields,
            cache,
            state: ListState::Start,
            skipping: None,
            retry_len: 0,
            attempts: 0,
            items: Vec::new(),
            unchanged: Vec::new(),
            undecodable: Vec::new(),
            metadata: RawListMeta::default(),
        }
    }

    /// Consumes what it can of `input` (everything received and not yet consumed);
    /// `eof` when no more bytes will come.
    fn advance(&mut self, input: &[u8], eof: bool) -> Result<usize, kube::Error> {
        let mut pos = 0;
        loop {
            pos += input[pos..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            let rest = &input[pos..];
            let Some(&next) = rest.first() else {
                return Ok(pos);
            };
            match self.state {
                ListState::Start => {
                    if next != b'{' {
                        return Err(malformed("expected an object"));
                    }
                    pos += 1;
                    self.state = ListState::Key { first: true };
                }
                ListState::Key { first } => {
                    if first && next == b'}' {
                        pos += 1;
                        self.state = ListState::Done;
                        continue;
                    }
                    let Parsed::Value(key, used) =
                        parse_one::<String>(rest, eof).map_err(kube::Error::SerdeError)?
                    else {
                        return Ok(pos);
                    };
                    let colon = used
                        + rest[used..]
                            .iter()
                            .take_while(|b| b.is_ascii_whitespace())
                            .count();
                    match rest.get(colon) {
                        // The key is parsed again with the `:`; keys are short.
                        None => return Ok(pos),
                        Some(b':') => pos += colon + 1,
                        Some(_) => return Err(malformed("expected `:`")),
                    }
                    self.state = ListState::Value(match key.as_str() {
                        "metadata" => ListField::Metadata,
                        "items" => ListField::Items,
                        _ => ListField::Other,
                    });
                }
                ListState::Value(ListField::Items) if next == b'[' => {
                    pos += 1;
                    self.state = ListState::Item { first: true };
                }
                ListState::Value(ListField::Metadata) => {
                    let Parsed::Value(metadata, used) =
                        parse_one::<RawListMeta>(rest, eof).map_err(kube::Error::SerdeError)?
                    else {
                        return Ok(pos);
                    };
                    self.metadata = metadata;
                    pos += used;
                    self.state = ListState::AfterValue;
                }
                // Anything else, `"items": null` included, is skipped.
                ListState::Value(_) => {
                    let Parsed::Value(serde::de::IgnoredAny, used) =
                        parse_one(rest, eof).map_err(kube::Error::SerdeError)?
                    else {
                        return Ok(pos);
                    };
                    pos += used;
                    self.state = ListState::AfterValue;
                }
                ListState::AfterValue => {
                    pos += 1;
                    self.state = match next {
                        b',' => ListState::Key { first: false },
                        b'}' => ListState::Done,
                        _ => return Err(malformed("expected `,` or `}`")),
                    };
                }
                ListState::Item { first } => {
                    if first && next == b']' {
                        pos += 1;
                        self.state = ListState::AfterValue;
                        continue;
                    }
                    let Some(used) = self.item(rest, eof)? else {
                        return Ok(pos);
                    };
                    pos += used;
                    self.state = ListState::AfterItem;
                }
                ListState::AfterItem => {
                    pos += 1;
                    self.state = match next {
                        b',' => ListState::Item { first: false },
                        b']' => ListState::AfterValue,
                        _ => return Err(malformed("expected `,` or `]`")),
                    };
                }
                ListState::Done => return Err(malformed("data after the list")),
            }
        }
    }

    /// Decodes the item at the start of `input`; `None` until it is complete.
    fn item(&mut self, input: &[u8], eof: bool) -> Result<Option<usize>, kube::Error> {
        if !eof && input.len() < self.retry_len {
            return Ok(None);
        }
        self.attempts += 1;
        if let Some(cache) = self.cache {
            return self.item_or_cached(cache, input, eof);
        }
        if self.skipping.is_none() {
            match parse_object::<K>(input, eof, self.managed_fields) {
                Ok(Parsed::Value(object, used)) => {
                    self.items.push(object);
                    self.retry_len = 0;
                    return Ok(Some(used));
                }
                Ok(Parsed::More) => {
                    self.retry_len = input.len().saturating_mul(2);
                    return Ok(None);
                }
                // Malformed JSON or an object that does not fit `K`: find its end.
                Err(e) => self.skipping = Some(e),
            }
        }
        match parse_one::<&RawValue>(input, eof).map_err(kube::Error::SerdeError)? {
            Parsed::Value(raw, used) => {
                let source = self.skipping.take().expect("set above");
                self.undecodable.push(decode_error(raw, self.kind, source));
                self.retry_len = 0;
                Ok(Some(used))
            }
            Parsed::More => {
                self.retry_len = input.len().saturating_mul(2);
                Ok(None)
            }
        }
    }

    /// [`item`](Self::item) during a relist: finds the item's end, then takes it from
    /// `cache` if the cache holds it at the same resourceVersion and uid, or decodes it.
    fn item_or_cached(
        &mut self,
        cache: &dyn CachedObjects<K>,
        input: &[u8],
        eof: bool,
    ) -> Result<Option<usize>, kube::Error> {
        let Parsed::Value(raw, used) =
            parse_one::<&RawValue>(input, eof).map_err(kube::Error::SerdeError)?
        else {
            self.retry_len = input.len().saturating_mul(2);
            return Ok(None);
        };
        self.retry_len = 0;
        let header = RawHeader::read(raw);
        let meta = &header.metadata;
        let cached = match (&meta.name, &meta.resource_version) {
            (Some(name), Some(version)) => cache.cached(
                ObjectKeyRef {
                    namespace: meta.namespace.as_deref(),
                    name,
                },
                version,
                meta.uid.as_deref(),
            ),
            _ => None,
        };
        match cached {
            Some(object) => self.unchanged.push(object),
            None => match decode_object(raw, self.kind, self.managed_fields) {
                Ok(object) => self.items.push(object),
                Err(e) => self.undecodable.push(e),
            },
        }
        Ok(Some(used))
    }

    /// The page, once every byte was given to [`advance`](Self::advance); `rest` is
    /// what it left unconsumed.
    fn finish(self, rest: &[u8]) -> Result<ListPage<K>, kube::Error> {
        if self.state != ListState::Done || !rest.iter().all(u8::is_ascii_whitespace) {
            return Err(malformed("the response ended early"));
        }
        Ok(ListPage {
            items: self.items,
            unchanged: self.unchanged,
            undecodable: self.undecodable,
            resource_version: self.metadata.resource_version.unwrap_or_default(),
            continue_token: self.metadata.continue_token.filter(|t| !t.is_empty()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn list_decodes_each_item_and_skips_the_bad_one() {
        let text = r#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"42","continue":"abc"},
            "items":[
              {"metadata":{"name":"good","namespace":"ns","resourceVersion":"40"},"data":{"a":"b"}},
              {"metadata":{"name":"bad","namespace":"ns","resourceVersion":"41"},"data":{"a":7}}
            ]}"#;
        let page: ListPage<ConfigMap> = decode_list(
            text,
            ListDecoder::new("ConfigMap", ManagedFields::Drop, None),
        )
        .unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.items[0].metadata.name.as_deref(), Some("good"));
        assert_eq!(page.resource_version, "42");
        assert_eq!(page.continue_token.as_deref(), Some("abc"));
        assert_eq!(page.undecodable.len(), 1);
        assert_eq!(page.undecodable[0].key, "ns/bad");
        assert_eq!(page.undecodable[0].resource_version.as_deref(), Some("41"));
    }

    /// Feeds `text` to the streaming decoder in the given chunks.
    fn decode_chunks(chunks: Vec<Vec<u8>>) -> Result<ListPage<ConfigMap>, kube::Error> {
        decode_chunks_with(chunks, None)
    }

    /// Feeds `text` to the streaming decoder in the given chunks, with `cache`.
    fn decode_chunks_with(
        chunks: Vec<Vec<u8>>,
        cache: Option<&dyn CachedObjects<ConfigMap>>,
    ) -> Result<ListPage<ConfigMap>, kube::Error> {
        let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>))
            .into_async_read();
        let decoder = ListDecoder::new("ConfigMap", ManagedFields::Drop, cache);
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(decode_list_stream(body, decoder))
    }

    /// Cached ConfigMaps, found by key, resourceVersion and uid.
    struct Cache(Vec<Arc<ConfigMap>>);

    impl CachedObjects<ConfigMap> for Cache {
        fn cached(
            &self,
            key: ObjectKeyRef<'_>,
            resource_version: &str,
            uid: Option<&str>,
        ) -> Option<Arc<ConfigMap>> {
            self.0
                .iter()
                .find(|cm| {
                    let meta = &cm.metadata;
                    meta.namespace.as_deref() == key.namespace
                        && meta.name.as_deref() == Some(key.name)
                        && meta.resource_version.as_deref() == Some(resource_version)
                        && (uid.is_none() || meta.uid.as_deref() == uid)
                })
                .cloned()
        }
    }

    fn item(name: &str, rv: &str, uid: &str, data: &str) -> String {
        format!(
            r#"{{"kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns",
                "resourceVersion":"{rv}","uid":"{uid}","managedFields":[{{"manager":"m"}}]}},
                "data":{data}}}"#
        )
    }

    fn cached(name: &str, rv: &str, uid: &str) -> Arc<ConfigMap> {
        Arc::new(serde_json::from_str(&item(name, rv, uid, r#"{"k":"cached"}"#)).unwrap())
    }

    #[test]
    fn a_relist_takes_objects_the_cache_holds_at_the_listed_version() {
        let cache = Cache(vec![
            cached("same", "40", "u-same"),
            cached("changed", "39", "u-changed"),
            cached("recreated", "41", "u-old"),
            cached("bad-but-cached", "44", "u-bad"),
        ]);
        let items = [
            item("same", "40", "u-same", r#"{"k":"listed"}"#),
            item("changed", "41", "u-changed", r#"{"k":"listed"}"#),
            item("recreated", "41", "u-new", r#"{"k":"listed"}"#),
            item("new", "42", "u-new2", r#"{"k":"listed"}"#),
            item("bad", "43", "u-x", r#"{"k":7}"#),
            // Unchanged since it was cached: not decoded again, so not reported.
            item("bad-but-cached", "44", "u-bad", r#"{"k":7}"#),
        ];
        let text = format!(
            r#"{{"metadata":{{"resourceVersion":"45"}},"items":[{}]}}"#,
            items.join(",")
        );
        let bytes = text.as_bytes();
        for size in [1, 7, 64, bytes.len()] {
            let page = decode_chunks_with(
                bytes.chunks(size).map(<[u8]>::to_vec).collect(),
                Some(&cache),
            )
            .unwrap();
            let names = |objects: &mut dyn Iterator<Item = &ConfigMap>| -> Vec<String> {
                objects.filter_map(|cm| cm.metadata.name.clone()).collect()
            };
            assert_eq!(
                names(&mut page.items.iter()),
                ["changed", "recreated", "new"],
                "chunks of {size}"
            );
            assert!(
                page.items
                    .iter()
                    .all(|cm| cm.data.as_ref().unwrap()["k"] == "listed")
            );
            assert!(
                page.items
                    .iter()
                    .all(|cm| cm.metadata.managed_fields.is_none())
            );
            assert_eq!(
                names(&mut page.unchanged.iter().map(|cm| &**cm)),
                ["same", "bad-but-cached"]
            );
            assert!(Arc::ptr_eq(&page.unchanged[0], &cache.0[0]));
            assert_eq!(
                page.undecodable
                    .iter()
                    .map(|e| e.key.as_str())
                    .collect::<Vec<_>>(),
                ["ns/bad"]
            );
            assert_eq!(page.resource_version, "45");
        }
    }

    fn summary(
        page: &ListPage<ConfigMap>,
    ) -> (Vec<Option<String>>, Vec<String>, String, Option<String>) {
        (
            page.items
                .iter()
                .map(|cm| cm.metadata.name.clone())
                .collect(),
            page.undecodable.iter().map(|e| e.key.clone()).collect(),
            page.resource_version.clone(),
            page.continue_token.clone(),
        )
    }

    const CHUNKED: &str = r#"{"kind":"ConfigMapList","apiVersion":"v1","n":12345,"t":true,
        "metadata":{"resourceVersion":"42","continue":"abc","remainingItemCount":7},
        "items":[
          {"metadata":{"name":"a\u0062","namespace":"ns","resourceVersion":"40"},"data":{"k":"v \"q\" ]}"}},
          {"metadata":{"name":"bad","namespace":"ns","resourceVersion":"41"},"data":{"a":7}},
          {"metadata":{"name":"c","namespace":"ns","labels":{"x":"y"}},"data":{"big":"0123456789012345678901234567890123456789"}}
        ],"extra":[1,[2,{"x":null}]]}
"#;

    #[test]
    fn streamed_list_decodes_the_same_however_it_is_cut() {
        let whole = decode_list::<ConfigMap>(
            CHUNKED,
            ListDecoder::new("ConfigMap", ManagedFields::Drop, None),
        )
        .unwrap();
        let expected = summary(&whole);
        assert_eq!(
            expected,
            (
                vec![Some("ab".to_owned()), Some("c".to_owned())],
                vec!["ns/bad".to_owned()],
                "42".to_owned(),
                Some("abc".to_owned())
            )
        );
        let bytes = CHUNKED.as_bytes();
        for cut in 0..=bytes.len() {
            let page = decode_chunks(vec![bytes[..cut].to_vec(), bytes[cut..].to_vec()]).unwrap();
            assert_eq!(summary(&page), expected, "cut at {cut}");
            assert_eq!(page.items, whole.items);
        }
        for size in [1, 2, 3, 7, 64] {
            let page = decode_chunks(bytes.chunks(size).map(<[u8]>::to_vec).collect()).unwrap();
            assert_eq!(summary(&page), expected, "chunks of {size}");
        }
    }

    #[test]
    fn streamed_list_rejects_truncated_and_trailing_data() {
        let bytes = CHUNKED.trim_end().as_bytes();
        for cut in 0..bytes.len() {
            assert!(
                decode_chunks(vec![bytes[..cut].to_vec()]).is_err(),
                "a list cut at {cut} must not decode"
            );
        }
        let trailing = format!("{CHUNKED} {{}}");
        assert!(decode_chunks(vec![trailing.into_bytes()]).is_err());
        assert!(decode_chunks(vec![b"[]".to_vec()]).is_err());
        let empty = decode_chunks(vec![b" {} ".to_vec()]).unwrap();
        assert!(empty.items.is_empty() && empty.resource_version.is_empty());
    }

    #[test]
    fn a_large_item_in_small_chunks_is_tried_a_logarithmic_number_of_times() {
        let big = "x".repeat(1 << 20);
        let text = format!(
            r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{{"metadata":{{"name":"big"}},"data":{{"k":"{big}"}}}}]}}"#
        );
        let mut decoder = ListDecoder::<ConfigMap>::new("ConfigMap", ManagedFields::Drop, None);
        let mut pending = Vec::new();
        for chunk in text.as_bytes().chunks(1024) {
            pending.extend_from_slice(chunk);
            let used = decoder.advance(&pending, false).unwrap();
            pending.drain(..used);
        }
        let used = decoder.advance(&pending, true).unwrap();
        // 1,025 chunks, but each attempt waits for twice the bytes of the last one.
        assert!(decoder.attempts <= 16, "{} attempts", decoder.attempts);
        let page = decoder.finish(&pending[used..]).unwrap();
        assert_eq!(page.items[0].data.as_ref().unwrap()["k"].len(), 1 << 20);
    }

    #[test]
    fn size_hinted_decoding_gives_equal_values_with_tight_vectors() {
        use k8s_openapi::api::core::v1::Pod;
        let pod = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"n",
            "finalizers":["f"],"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u"}],
            "managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1",
              "fieldsV1":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{}}}},"f:list":[1,[2,3],{"a":[]}]}}]},
          "spec":{"containers":[{"name":"c","image":"i","args":["a","b","c","d","e"],"env":[],
              "ports":[{"containerPort":80},{"containerPort":443,"protocol":"TCP"}],
              "resources":{"limits":{"cpu":"1","memory":"1Gi"}}}],
            "tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule","tolerationSeconds":5}],
            "nodeSelector":{"a":"b"},"priority":-3,"enableServiceLinks":true},
          "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z"}],
            "podIP":"10.0.0.1","startTime":"2024-01-01T00:00:00Z"}}"#;
        let plain: Pod = serde_json::from_str(pod).unwrap();
        let raw: Box<RawValue> = serde_json::from_str(pod).unwrap();
        let hinted: Pod = decode_object(&raw, "Pod", ManagedFields::Keep).unwrap();
        assert_eq!(hinted, plain);
        assert_eq!(
            hinted.metadata.managed_fields.as_ref().unwrap().capacity(),
            1
        );
        assert_eq!(hinted.metadata.finalizers.as_ref().unwrap().capacity(), 1);
        let list = format!(r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{pod},{pod}]}}"#);
        let page: ListPage<Pod> =
            decode_list(&list, ListDecoder::new("Pod", ManagedFields::Keep, None)).unwrap();
        assert_eq!(page.items, vec![plain.clone(), plain]);
        assert_eq!(
            page.items[1]
                .metadata
                .owner_references
                .as_ref()
                .unwrap()
                .capacity(),
            1
        );
    }

    #[test]
    fn list_with_null_items_is_empty() {
        let page: ListPage<ConfigMap> = decode_list(
            r#"{"metadata":{"resourceVersion":"1"},"items":null}"#,
            ListDecoder::new("ConfigMap", ManagedFields::Drop, None),
        )
        .unwrap();
        assert!(page.items.is_empty());
        assert_eq!(page.continue_token, None);
    }
}
