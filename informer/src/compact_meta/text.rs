//! [`Text`]: a string held inline in its owner up to `N` bytes, on the heap past that,
//! so that the names, uids and resourceVersions of a cache cost no allocation each.

use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::allocator::count;

/// A string of at most `N` bytes (`N < 256`) inline, a longer one boxed.
#[derive(Clone)]
pub(super) enum Text<const N: usize> {
    /// The first `len` bytes of `bytes`, which are UTF-8.
    Inline { len: u8, bytes: [u8; N] },
    /// A string longer than `N` bytes.
    Heap(Box<str>),
}

impl<const N: usize> Text<N> {
    /// `text`, inline when it fits. A boxed one is counted into the decoder's open
    /// measurement, if any (its only allocation).
    pub(super) fn new(text: &str) -> Self {
        const { assert!(N < 256, "the length of an inline text is a u8") };
        if text.len() <= N {
            let mut bytes = [0; N];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            // `text.len() <= N < 256`.
            Text::Inline {
                len: text.len() as u8,
                bytes,
            }
        } else {
            count(text.len());
            Text::Heap(text.into())
        }
    }

    pub(super) fn as_str(&self) -> &str {
        match self {
            Text::Inline { len, bytes } => {
                // Checked at each read (the crate has no `unsafe`): a few dozen bytes.
                std::str::from_utf8(&bytes[..usize::from(*len)])
                    .expect("an inline text holds the bytes of the `&str` it was made of")
            }
            Text::Heap(text) => text,
        }
    }
}

impl<const N: usize> Deref for Text<N> {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> PartialEq for Text<N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl<const N: usize> Eq for Text<N> {}

impl<const N: usize> fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_str().fmt(f)
    }
}

/// Read as a string is (`str`, so that the decoder's adapter counts no `String`: an
/// inline text allocates nothing, a boxed one counts itself).
impl<'de, const N: usize> Deserialize<'de> for Text<N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<const N: usize>;

        impl<const N: usize> Visitor<'_> for TextVisitor<N> {
            type Value = Text<N>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<N>, E> {
                Ok(Text::new(text))
            }
        }

        deserializer.deserialize_str(TextVisitor::<N>)
    }
}
