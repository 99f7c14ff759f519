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
use super::object::{RawHeader, decode_error};
use super::size;
use crate::cached::CachedObjects;
use crate::key::ObjectKeyRef;
use crate::reflector::error::DecodeError;
use crate::reflector::key_filter::SharedKeyFilter;
use crate::reflector::source::decoded_sizes::DecodedSizes;
use crate::reflector::source::requests::ListPage;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawListMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
    /// Present when the server filtered the list by a shard selector.
    #[serde(default)]
    shard_info: Option<serde::de::IgnoredAny>,
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

/// What is shown an item's bytes as they arrived ([`ListDecoder::first_item`]).
pub(in crate::reflector) type ItemObserver<'a> = dyn Fn(&[u8]) + Sync + 'a;

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
/// With a [`CachedObjects`] (a relist) or a [key filter](Self::key_filter), each
/// item's end is found first and its metadata read: an item the filter does not keep
/// is skipped ([`ListPage::filtered_out`]) and never decoded, nor reported if it would
/// not decode; an item the cache holds at the same resourceVersion and uid is taken
/// from the cache ([`ListPage::unchanged`]) and never decoded.
pub(in crate::reflector) struct ListDecoder<'k, K> {
    kind: &'k str,
    managed_fields: ManagedFields,
    cache: Option<&'k dyn CachedObjects<K>>,
    key_filter: Option<&'k SharedKeyFilter>,
    /// Where each decoded item's estimated size goes.
    sizes: Option<&'k DecodedSizes>,
    /// Shown the first item's bytes, as they arrived.
    first_item: Option<&'k ItemObserver<'k>>,
    filtered_out: usize,
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
            key_filter: None,
            sizes: None,
            first_item: None,
            filtered_out: 0,
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

    /// Skips the items `filter` does not keep, before decoding them.
    pub(in crate::reflector) fn key_filter(mut self, filter: Option<&'k SharedKeyFilter>) -> Self {
        self.key_filter = filter;
        self
    }

    /// Records each decoded item's estimated size in `sizes`.
    pub(in crate::reflector) fn sizes(mut self, sizes: Option<&'k DecodedSizes>) -> Self {
        self.sizes = sizes;
        self
    }

    /// Shows `observe` the first item of the list, as it arrived (before it is skipped,
    /// taken from the cache or decoded).
    pub(in crate::reflector) fn first_item(mut self, observe: &'k ItemObserver<'k>) -> Self {
        self.first_item = Some(observe);
        self
    }

    /// Shows the item `bytes` to the [`first_item`](Self::first_item) observer, if it
    /// has seen none yet.
    fn observe(&mut self, bytes: &[u8]) {
        if let Some(observe) = self.first_item.take() {
            observe(bytes);
        }
    }

    /// A decoded item, measured as it was decoded.
    fn push(&mut self, object: K) {
        if let Some(sizes) = self.sizes {
            sizes.record(size::last());
        }
        self.items.push(object);
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
        if self.cache.is_some() || self.key_filter.is_some() {
            return self.item_by_header(input, eof);
        }
        if self.skipping.is_none() {
            match parse_object::<K>(input, eof, self.managed_fields) {
                Ok(Parsed::Value(object, used)) => {
                    self.observe(&input[..used]);
                    self.push(object);
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

    /// [`item`](Self::item) with a key filter or during a relist: finds the item's
    /// end and reads its header in one pass (every other field skipped unread), then
    /// skips the item if the filter does not keep it, takes it from the cache if the
    /// cache holds it at the same resourceVersion and uid, or decodes it.
    fn item_by_header(&mut self, input: &[u8], eof: bool) -> Result<Option<usize>, kube::Error> {
        match parse_one::<RawHeader<'_>>(input, eof) {
            Ok(Parsed::Value(header, used)) => {
                self.retry_len = 0;
                self.take(&header, &input[..used])?;
                Ok(Some(used))
            }
            Ok(Parsed::More) => {
                self.retry_len = input.len().saturating_mul(2);
                Ok(None)
            }
            // A header that does not read as one (a name that is no string, say): the
            // item is found whole, and named as far as it can be.
            Err(_) => {
                let Parsed::Value(raw, used) =
                    parse_one::<&RawValue>(input, eof).map_err(kube::Error::SerdeError)?
                else {
                    self.retry_len = input.len().saturating_mul(2);
                    return Ok(None);
                };
                self.retry_len = 0;
                self.take(&RawHeader::read(raw), raw.get().as_bytes())?;
                Ok(Some(used))
            }
        }
    }

    /// The item `item` (whole), whose header is `header`: skipped, taken from the
    /// cache, or decoded.
    fn take(&mut self, header: &RawHeader<'_>, item: &[u8]) -> Result<(), kube::Error> {
        self.observe(item);
        if let Some(filter) = self.key_filter
            && !header.kept_by(filter)
        {
            self.filtered_out += 1;
            return Ok(());
        }
        let cached = match (self.cache, header.name(), header.resource_version()) {
            (Some(cache), Some(name), Some(version)) => cache.cached(
                ObjectKeyRef {
                    namespace: header.namespace(),
                    name,
                },
                version,
                header.uid(),
            ),
            _ => None,
        };
        if let Some(object) = cached {
            self.unchanged.push(object);
            return Ok(());
        }
        match parse_object::<K>(item, true, self.managed_fields) {
            Ok(Parsed::Value(object, _)) => self.push(object),
            Ok(Parsed::More) => return Err(malformed("an item ended early")),
            Err(e) => self.undecodable.push(header.decode_error(self.kind, e)),
        }
        Ok(())
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
            filtered_out: self.filtered_out,
            resource_version: self.metadata.resource_version.unwrap_or_default(),
            continue_token: self.metadata.continue_token.filter(|t| !t.is_empty()),
            served_shard: self.metadata.shard_info.is_some(),
        })
    }
}

#[cfg(test)]
mod tests;
