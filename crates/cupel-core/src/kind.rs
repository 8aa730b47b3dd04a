//! Case-insensitive, extensible string enumerations: [`ContextKind`] and [`ContextSource`].

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use crate::CupelError;

/// The bytes of `s` as an array of its length (for a static spelling).
const fn spelling_bytes<const N: usize>(s: &str) -> [u8; N] {
    let b = s.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N && i < b.len() {
        out[i] = b[i];
        i += 1;
    }
    out
}

/// A static spelling as `&str`: the bytes came from a `&str`, so they are
/// UTF-8; were they not, the constant would fail to compile (const
/// evaluation), never at run time.
#[allow(clippy::panic)]
const fn spelling_str(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => panic!("a well-known spelling is not UTF-8"),
    }
}

macro_rules! folded_name {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal, $err:ident, default = $default:ident,
        [$( $(#[$cmeta:meta])* $cname:ident = $cval:literal ),* $(,)?]
    ) => {
        $(#[$meta])*
        #[derive(Clone)]
        pub struct $name(Cow<'static, str>);

        impl $name {
            $(
                $(#[$cmeta])*
                pub const $cname: $name = {
                    // The spelling lives in a static, so every crate that
                    // uses this constant points at the same bytes and
                    // `eq_str` can tell well-known values apart by address
                    // (a literal is copied into each crate that inlines it).
                    static SPELLING: [u8; $cval.len()] = spelling_bytes($cval);
                    $name(Cow::Borrowed(spelling_str(&SPELLING)))
                };
            )*

            #[doc = concat!("Creates a ", $what, " from any non-blank string.")]
            ///
            /// The original spelling is kept for display; comparison, hashing and
            /// ordering fold ASCII case.
            ///
            /// # Errors
            #[doc = concat!("[`CupelError::", stringify!($err), "`] when the value is empty or whitespace-only.")]
            pub fn new(value: impl Into<String>) -> Result<Self, CupelError> {
                let value = value.into();
                if value.trim().is_empty() {
                    return Err(CupelError::$err { value });
                }
                // Reuse the static spelling for well-known values that match exactly.
                $( if value == $cval { return Ok(Self::$cname); } )*
                Ok($name(Cow::Owned(value)))
            }

            /// The value as given at construction (original case).
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Whether this value equals `other` under ASCII case folding.
            #[inline]
            pub fn eq_str(&self, other: &str) -> bool {
                // The same bytes (a well-known value shares its static
                // spelling): equal without comparing them.
                (std::ptr::eq(self.0.as_ptr(), other.as_ptr()) && self.0.len() == other.len())
                    || self.0.eq_ignore_ascii_case(other)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$default
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.eq_str(&other.0)
            }
        }

        impl Eq for $name {}

        impl Hash for $name {
            fn hash<H: Hasher>(&self, state: &mut H) {
                for b in self.0.bytes() {
                    state.write_u8(b.to_ascii_lowercase());
                }
                // Terminator so that ("ab","c") and ("a","bc") hash differently in tuples.
                state.write_u8(0xff);
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $name {
            fn cmp(&self, other: &Self) -> Ordering {
                let a = self.0.bytes().map(|b| b.to_ascii_lowercase());
                let b = other.0.bytes().map(|b| b.to_ascii_lowercase());
                a.cmp(b)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = CupelError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::new(s)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = CupelError;
            fn try_from(s: &str) -> Result<Self, Self::Error> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = CupelError;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                Self::new(s)
            }
        }

        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::new(s).map_err(serde::de::Error::custom)
            }
        }
    };
}

folded_name! {
    /// What an item is: a message, a document, a tool output, ...
    ///
    /// An *extensible* enumeration: the well-known values are associated
    /// constants, and any other non-blank string is allowed too. Equality,
    /// hashing and ordering fold ASCII case, so `"toolOutput"` equals
    /// [`ContextKind::TOOL_OUTPUT`]; the original spelling is kept for display.
    ///
    /// ```
    /// use cupel_core::ContextKind;
    /// let k = ContextKind::new("toolOUTPUT")?;
    /// assert_eq!(k, ContextKind::TOOL_OUTPUT);
    /// assert_eq!(k.to_string(), "toolOUTPUT");
    /// assert!(ContextKind::new("   ").is_err());
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    ContextKind, "kind", InvalidKind, default = MESSAGE,
    [
        /// A conversational message (the default kind).
        MESSAGE = "Message",
        /// A document or file.
        DOCUMENT = "Document",
        /// The output of a tool call.
        TOOL_OUTPUT = "ToolOutput",
        /// A stored memory or fact.
        MEMORY = "Memory",
        /// A system-level instruction.
        SYSTEM_PROMPT = "SystemPrompt",
    ]
}

folded_name! {
    /// Where an item came from: chat, a tool, retrieval, ...
    ///
    /// Extensible and case-insensitive exactly like [`ContextKind`].
    ///
    /// ```
    /// use cupel_core::ContextSource;
    /// assert_eq!(ContextSource::new("RAG")?, ContextSource::RAG);
    /// assert_eq!(ContextSource::default(), ContextSource::CHAT);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    ContextSource, "source", InvalidSource, default = CHAT,
    [
        /// A user chat interaction (the default source).
        CHAT = "Chat",
        /// A tool or function call.
        TOOL = "Tool",
        /// A retrieval-augmented-generation source.
        RAG = "Rag",
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;
    use std::collections::{BTreeSet, HashSet};

    fn hash_of<T: Hash>(t: &T) -> u64 {
        let mut h = DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    #[test]
    fn kind_equality_folds_ascii_case() {
        for s in ["Message", "message", "MESSAGE", "mEsSaGe"] {
            let k = ContextKind::new(s).unwrap();
            assert_eq!(k, ContextKind::MESSAGE, "{s}");
            assert_eq!(hash_of(&k), hash_of(&ContextKind::MESSAGE), "{s}");
        }
        assert_ne!(ContextKind::MESSAGE, ContextKind::DOCUMENT);
    }

    #[test]
    fn kind_hash_set_deduplicates_case_variants() {
        let set: HashSet<ContextKind> = ["Tool", "TOOL", "tool", "Doc"]
            .into_iter()
            .map(|s| ContextKind::new(s).unwrap())
            .collect();
        assert_eq!(set.len(), 2);
        let ordered: BTreeSet<ContextKind> = ["b", "A", "a", "B"]
            .into_iter()
            .map(|s| ContextKind::new(s).unwrap())
            .collect();
        let names: Vec<String> = ordered
            .iter()
            .map(|k| k.as_str().to_ascii_lowercase())
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn kind_preserves_spelling_and_reuses_constants() {
        assert_eq!(ContextKind::new("memORY").unwrap().as_str(), "memORY");
        assert!(matches!(
            ContextKind::new("Memory").unwrap().0,
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn blank_kind_and_source_are_rejected_with_value() {
        for s in ["", " ", "\t\n"] {
            assert_eq!(
                ContextKind::new(s),
                Err(CupelError::InvalidKind {
                    value: s.to_string()
                })
            );
            assert_eq!(
                ContextSource::new(s),
                Err(CupelError::InvalidSource {
                    value: s.to_string()
                })
            );
        }
    }

    #[test]
    fn source_equality_folds_ascii_case() {
        for s in ["Chat", "chat", "CHAT"] {
            let v: ContextSource = s.parse().unwrap();
            assert_eq!(v, ContextSource::CHAT);
            assert_eq!(hash_of(&v), hash_of(&ContextSource::CHAT));
        }
    }

    #[test]
    fn non_ascii_is_compared_exactly() {
        // Only ASCII letters fold; other code points compare byte-exactly.
        assert_ne!(
            ContextKind::new("É").unwrap(),
            ContextKind::new("é").unwrap()
        );
        assert_eq!(
            ContextKind::new("Éa").unwrap(),
            ContextKind::new("ÉA").unwrap()
        );
    }
}
