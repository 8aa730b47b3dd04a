//! [`Tag`], one descriptive tag of a [`ContextItem`](crate::ContextItem).

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

use compact_str::CompactString;

/// One tag of an item: an immutable string that is stored inline when it is
/// short (up to 24 bytes of UTF-8, the usual tag), so an item's tags take one
/// allocation however many there are.
///
/// A `Tag` reads as a `&str` (it dereferences to one) and compares with
/// `str`, `&str` and `String`:
///
/// ```
/// use cupel_core::{ContextItem, Tag};
/// let item = ContextItem::builder("x", 1).tags(["billing", "urgent"]).build()?;
/// assert_eq!(item.tags(), ["billing", "urgent"]);
/// assert!(item.tags()[0].starts_with("bill"));
/// let names: Vec<&str> = item.tags().iter().map(Tag::as_str).collect();
/// assert_eq!(names, ["billing", "urgent"]);
/// assert_eq!(Tag::from("urgent"), item.tags()[1]);
/// assert!(item.tags().iter().any(|t| t == "billing"));
/// assert_eq!(item.tags().join(", "), "billing, urgent");
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
///
/// Comparison, ordering and hashing are the string's, byte for byte; tag
/// *matching* in the scorers may fold case (see `TagScorer`'s `TagMatch`).
/// With the `serde` feature a tag is a JSON string.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tag(CompactString);

impl Tag {
    /// A tag with the text `text`.
    pub fn new(text: &str) -> Self {
        Tag(CompactString::new(text))
    }

    /// The tag's text.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Deref for Tag {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for Tag {
    #[inline]
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl Borrow<str> for Tag {
    #[inline]
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.as_str(), f)
    }
}

impl From<&str> for Tag {
    fn from(text: &str) -> Self {
        Tag(CompactString::new(text))
    }
}

impl From<&String> for Tag {
    fn from(text: &String) -> Self {
        Tag(CompactString::new(text))
    }
}

/// Reuses the `String`'s buffer when the text is too long to store inline.
impl From<String> for Tag {
    fn from(text: String) -> Self {
        Tag(CompactString::from(text))
    }
}

impl From<Box<str>> for Tag {
    fn from(text: Box<str>) -> Self {
        Tag(CompactString::from(text))
    }
}

impl From<Cow<'_, str>> for Tag {
    fn from(text: Cow<'_, str>) -> Self {
        Tag(CompactString::from(text))
    }
}

impl From<&Tag> for Tag {
    fn from(tag: &Tag) -> Self {
        tag.clone()
    }
}

impl From<Tag> for String {
    fn from(tag: Tag) -> Self {
        tag.0.into_string()
    }
}

impl PartialEq<str> for Tag {
    fn eq(&self, other: &str) -> bool {
        self.0.as_str() == other
    }
}

impl PartialEq<&str> for Tag {
    fn eq(&self, other: &&str) -> bool {
        self.0.as_str() == *other
    }
}

impl PartialEq<String> for Tag {
    fn eq(&self, other: &String) -> bool {
        self.0.as_str() == other.as_str()
    }
}

impl PartialEq<Tag> for str {
    fn eq(&self, other: &Tag) -> bool {
        self == other.0.as_str()
    }
}

impl PartialEq<Tag> for &str {
    fn eq(&self, other: &Tag) -> bool {
        *self == other.0.as_str()
    }
}

impl PartialEq<Tag> for String {
    fn eq(&self, other: &Tag) -> bool {
        self.as_str() == other.0.as_str()
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Tag {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.as_str())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Tag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        CompactString::deserialize(d).map(Tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_tags_keep_their_text() {
        // 24 bytes fit inline; 25 and a multi-byte text past the limit do not.
        for text in [
            "",
            "a",
            "tag00",
            "x".repeat(24).as_str(),
            "y".repeat(25).as_str(),
            "é".repeat(20).as_str(),
        ] {
            let tag = Tag::from(text);
            assert_eq!(tag.as_str(), text);
            assert_eq!(tag, text);
            assert_eq!(String::from(tag.clone()), text);
            assert_eq!(Tag::from(text.to_string()), tag);
            assert_eq!(format!("{tag}"), text);
            assert_eq!(format!("{tag:?}"), format!("{text:?}"));
        }
    }

    #[test]
    fn tags_order_and_hash_as_their_strings() {
        use std::collections::BTreeSet;
        let set: BTreeSet<Tag> = ["b", "A", "a"].into_iter().map(Tag::from).collect();
        let order: Vec<&str> = set.iter().map(Tag::as_str).collect();
        assert_eq!(order, ["A", "a", "b"]);
        assert!(set.contains("a"));
    }

    #[test]
    fn a_tag_is_no_larger_than_a_string() {
        assert_eq!(std::mem::size_of::<Tag>(), std::mem::size_of::<String>());
    }
}
