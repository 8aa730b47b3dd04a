//! One way to read configuration strictly: every unknown key is an error
//! that names the key by its path, for any serde format.
//!
//! The pipeline's policy files, the gate's configuration and the
//! command-line tool's inputs all read through [`deserialize`]. It finds
//! unknown keys two ways at once and reports both the same:
//!
//! * a key a type ignores (most of our types accept unknown keys under plain
//!   serde, for forward compatibility) is noticed as serde skips it;
//! * a key a type rejects itself (`#[serde(deny_unknown_fields)]`) comes back
//!   from serde as an error, which is turned into the same
//!   [`StrictError::UnknownKey`].
//!
//! A key path is spelled one way everywhere ([`KeyPath`]'s `Display`):
//! fields joined by dots, array indices in brackets —
//! `scorers[0].wieght`, `compact_code.rules[1].threshold`,
//! `items[3].pined`.
//!
//! The keys a table accepts come from its type: [`field_names`] asks a
//! `Deserialize` implementation for the names it matches, so an error hint
//! built from it can never miss a field the type has.
//!
//! [`line_col`] and [`one_line`] turn a parser's byte offset and message
//! into what a person reads: a 1-based line and column (in characters) and
//! one line of text.
//!
//! ```
//! use cupel_core::strict::{self, StrictError};
//!
//! #[derive(serde::Deserialize)]
//! struct Scorer { weight: f64 }
//! #[derive(serde::Deserialize)]
//! struct Policy { scorers: Vec<Scorer> }
//!
//! let json = r#"{"scorers": [{"weight": 1.0, "wieght": 2.0}]}"#;
//! let mut de = serde_json::Deserializer::from_str(json);
//! match strict::deserialize::<Policy, _>(&mut de) {
//!     Err(StrictError::UnknownKey { path }) => {
//!         assert_eq!(path.to_string(), "scorers[0].wieght");
//!         assert_eq!(path.parent_field(), Some("scorers"));
//!     }
//!     _ => unreachable!("`wieght` is not a key of Scorer"),
//! }
//! assert_eq!(strict::field_names::<Scorer>(), ["weight"]);
//! ```

use std::cell::Cell;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Visitor};

use crate::{ConfigError, ConfigErrorKind};

/// One step of a [`KeyPath`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathSegment {
    /// A key of a table (object).
    Key(String),
    /// An index into an array.
    Index(usize),
}

/// Where a value sits in a document: `scorers[0].wieght`.
///
/// Displayed with dots between keys and brackets around indices; the empty
/// path is the document's root and displays as the empty string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyPath {
    segments: Vec<PathSegment>,
}

impl KeyPath {
    /// The root of the document.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a path spelled with brackets (`scorers[0].curve`) or with
    /// numeric dotted steps (`scorers.0.curve`, serde_ignored's spelling);
    /// `?` steps (a place a tool could not name) and empty steps are dropped.
    ///
    /// ```
    /// use cupel_core::strict::KeyPath;
    /// assert_eq!(KeyPath::parse("scorers.0.curve").to_string(), "scorers[0].curve");
    /// assert_eq!(KeyPath::parse("a[1][2].?.b").to_string(), "a[1][2].b");
    /// ```
    pub fn parse(raw: &str) -> Self {
        let mut path = Self::new();
        for step in raw.replace('[', ".").replace(']', "").split('.') {
            if step.is_empty() || step == "?" {
                continue;
            }
            match step.parse::<usize>() {
                Ok(i) => path.push_index(i),
                Err(_) => path.push_key(step),
            }
        }
        path
    }

    /// Appends a key step.
    pub fn push_key(&mut self, key: impl Into<String>) {
        self.segments.push(PathSegment::Key(key.into()));
    }

    /// Appends an index step.
    pub fn push_index(&mut self, index: usize) {
        self.segments.push(PathSegment::Index(index));
    }

    /// Removes the last step, if any, and returns it.
    pub fn pop(&mut self) -> Option<PathSegment> {
        self.segments.pop()
    }

    /// This path with `other`'s steps appended.
    #[must_use]
    pub fn join(&self, other: &KeyPath) -> KeyPath {
        let mut out = self.clone();
        out.segments.extend(other.segments.iter().cloned());
        out
    }

    /// The steps, root first.
    pub fn segments(&self) -> &[PathSegment] {
        &self.segments
    }

    /// Mutable access to the steps (to renumber an index, say).
    pub fn segments_mut(&mut self) -> &mut Vec<PathSegment> {
        &mut self.segments
    }

    /// Whether this is the root.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// The last step's key, if the last step is a key.
    pub fn last_key(&self) -> Option<&str> {
        match self.segments.last() {
            Some(PathSegment::Key(k)) => Some(k),
            _ => None,
        }
    }

    /// The nearest key above the last step, skipping array indices: the
    /// field that holds the table the last key sits in (`scorers` for
    /// `scorers[0].wieght`, `windows` for `curve.windows[1].x`); `None` at
    /// the top level.
    pub fn parent_field(&self) -> Option<&str> {
        let (_, above) = self.segments.split_last()?;
        above.iter().rev().find_map(|s| match s {
            PathSegment::Key(k) => Some(k.as_str()),
            PathSegment::Index(_) => None,
        })
    }
}

impl From<Vec<PathSegment>> for KeyPath {
    fn from(segments: Vec<PathSegment>) -> Self {
        Self { segments }
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.segments.iter().enumerate() {
            match seg {
                PathSegment::Key(k) if i == 0 => f.write_str(k)?,
                PathSegment::Key(k) => write!(f, ".{k}")?,
                PathSegment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Why [`deserialize`] failed.
#[derive(Debug)]
pub enum StrictError<E> {
    /// A key no field of the type at that place matches. The path ends with
    /// the key itself.
    UnknownKey {
        /// Where the key sits, the key last.
        path: KeyPath,
    },
    /// The format's own error (syntax, a value of the wrong type, a missing
    /// field), with the path of the value it concerns (empty when the error
    /// is not about one value).
    Invalid {
        /// Where the value sits.
        path: KeyPath,
        /// The deserializer's error, with whatever position it carries.
        error: E,
    },
}

/// What a strict read's report needs from a parser's error, as the caller's
/// `locate` function gives it to [`StrictError::into_config_error`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Located {
    /// The parser's message on one line, without its own position suffix
    /// (see [`one_line`] and [`without_position`]).
    pub message: String,
    /// The 1-based line and column (in characters), where known.
    pub at: Option<(usize, usize)>,
    /// Whether the document itself is malformed (a syntax error), rather
    /// than a value being of the wrong type.
    pub syntax: bool,
}

impl<E: std::error::Error + Send + Sync + 'static> StrictError<E> {
    /// The one conversion of a strict read's failure into a
    /// [`ConfigError`], for every reader: what differs between readers is
    /// passed in.
    ///
    /// * `what` names the document: an unknown key reads
    ///   ``unknown {what} key `{path}` `` (kind
    ///   [`ConfigErrorKind::UnknownKey`], with the key path and
    ///   `expected(path)` as the expected keys);
    /// * `locate` reads the parser's error: a bad value reads
    ///   ``invalid {what}: `{path}`: {message}`` (or
    ///   `invalid {what}: {message}` when it concerns no one value), with
    ///   the key path, the position, the message alone as
    ///   [`detail`](ConfigError::detail), the kind
    ///   [`Syntax`](ConfigErrorKind::Syntax) or
    ///   [`Invalid`](ConfigErrorKind::Invalid), and the parser's error as
    ///   the source.
    ///
    /// A reader with its own error type converts from the result once
    /// (by [`kind`](ConfigError::kind)), instead of matching on this enum.
    ///
    /// ```
    /// use cupel_core::ConfigErrorKind;
    /// use cupel_core::strict::{self, Located};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Scorer { weight: f64 }
    ///
    /// let locate = |e: &serde_json::Error| Located {
    ///     message: strict::without_position(&e.to_string(), e.line(), e.column()).to_owned(),
    ///     at: (e.line() > 0).then(|| (e.line(), e.column())),
    ///     syntax: e.is_syntax() || e.is_eof(),
    /// };
    /// let read = |json: &str| {
    ///     let mut de = serde_json::Deserializer::from_str(json);
    ///     strict::deserialize::<Scorer, _>(&mut de).map_err(|e| {
    ///         e.into_config_error("scorer", |_| strict::field_names::<Scorer>(), locate)
    ///     })
    /// };
    /// let e = read(r#"{"weight": 1.0, "wieght": 2.0}"#).err().unwrap();
    /// assert_eq!(e.to_string(), "unknown scorer key `wieght`");
    /// assert_eq!((e.kind(), e.expected()), (ConfigErrorKind::UnknownKey, &["weight".to_string()][..]));
    /// let e = read(r#"{"weight": "x"}"#).err().unwrap();
    /// assert_eq!(e.kind(), ConfigErrorKind::Invalid);
    /// assert_eq!(e.key_path(), Some("weight"));
    /// assert_eq!(e.to_string(), format!("invalid scorer: `weight`: {} (line 1, column 14)", e.detail()));
    /// ```
    pub fn into_config_error(
        self,
        what: &str,
        expected: impl FnOnce(&KeyPath) -> Vec<&'static str>,
        locate: impl FnOnce(&E) -> Located,
    ) -> ConfigError {
        match self {
            StrictError::UnknownKey { path } => {
                ConfigError::new(format!("unknown {what} key `{path}`"))
                    .with_kind(ConfigErrorKind::UnknownKey)
                    .with_expected(expected(&path))
                    .with_key_path(path.to_string())
            }
            StrictError::Invalid { path, error } => {
                let Located {
                    message,
                    at,
                    syntax,
                } = locate(&error);
                let mut err = if path.is_empty() {
                    ConfigError::new(format!("invalid {what}: {message}"))
                } else {
                    ConfigError::new(format!("invalid {what}: `{path}`: {message}"))
                        .with_key_path(path.to_string())
                };
                if let Some((line, column)) = at {
                    err = err.with_position(line, column);
                }
                let kind = if syntax {
                    ConfigErrorKind::Syntax
                } else {
                    ConfigErrorKind::Invalid
                };
                err.with_kind(kind).with_detail(message).with_source(error)
            }
        }
    }
}

/// Deserializes `T` from `de`, rejecting unknown keys.
///
/// Returns the first error found: a format or type error as
/// [`StrictError::Invalid`] (with the value's path), else the first unknown
/// key as [`StrictError::UnknownKey`].
///
/// # Errors
/// As described above.
pub fn deserialize<'de, T, D>(de: D) -> Result<T, StrictError<D::Error>>
where
    T: Deserialize<'de>,
    D: de::Deserializer<'de>,
{
    let mut track = serde_path_to_error::Track::new();
    let mut unknown: Option<KeyPath> = None;
    let tracked = serde_path_to_error::Deserializer::new(de, &mut track);
    let result: Result<T, D::Error> = serde_ignored::deserialize(tracked, |p| {
        if unknown.is_none() {
            unknown = Some(from_ignored(&p));
        }
    });
    match result {
        Ok(value) => match unknown {
            Some(path) => Err(StrictError::UnknownKey { path }),
            None => Ok(value),
        },
        Err(error) => {
            let mut path = from_tracked(&track.path());
            // A type with `deny_unknown_fields` says "unknown field `k`, ...".
            if let Some(key) = unknown_field(&error.to_string()) {
                if path.last_key() != Some(key.as_str()) {
                    path.push_key(key);
                }
                return Err(StrictError::UnknownKey { path });
            }
            Err(StrictError::Invalid { path, error })
        }
    }
}

/// The key named by serde's "unknown field `k`" message, if it is one.
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.split("unknown field `").nth(1)?;
    let end = rest.find('`')?;
    Some(rest[..end].to_owned())
}

fn from_ignored(p: &serde_ignored::Path<'_>) -> KeyPath {
    use serde_ignored::Path as P;
    let mut out = match p {
        P::Root => return KeyPath::new(),
        P::Seq { parent, .. }
        | P::Map { parent, .. }
        | P::Some { parent }
        | P::NewtypeStruct { parent }
        | P::NewtypeVariant { parent } => from_ignored(parent),
    };
    match p {
        P::Seq { index, .. } => out.push_index(*index),
        P::Map { key, .. } => out.push_key(key.clone()),
        _ => {}
    }
    out
}

fn from_tracked(p: &serde_path_to_error::Path) -> KeyPath {
    use serde_path_to_error::Segment;
    let mut out = KeyPath::new();
    for s in p {
        match s {
            Segment::Seq { index } => out.push_index(*index),
            Segment::Map { key } => out.push_key(key.clone()),
            Segment::Enum { variant } => out.push_key(variant.clone()),
            Segment::Unknown => {}
        }
    }
    out
}

/// The keys `T`'s `Deserialize` implementation matches, in declaration
/// order, read from the type itself; empty for a type that is not read as
/// a struct (a map, an enum, a hand-written implementation that does not
/// call `deserialize_struct`).
///
/// Aliases serde accepts are included, except a camelCase alias of a
/// snake_case name that is listed (`maxTokens` next to `max_tokens`): hints
/// show the documented spelling.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Budget {
///     #[serde(alias = "maxTokens")]
///     max_tokens: i64,
///     #[serde(rename = "type")]
///     kind: String,
/// }
/// assert_eq!(cupel_core::strict::field_names::<Budget>(), ["max_tokens", "type"]);
/// ```
pub fn field_names<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
    let seen = Cell::new(None);
    // The probe always fails; only the field list it saw on the way matters.
    let _ = T::deserialize(FieldProbe { seen: &seen });
    let all = seen.get().unwrap_or_default();
    all.iter()
        .copied()
        .filter(|name| {
            let snake = snake_case(name);
            snake == *name || !all.contains(&snake.as_str())
        })
        .collect()
}

fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A deserializer that records the field list of the struct asked of it.
struct FieldProbe<'a> {
    seen: &'a Cell<Option<&'static [&'static str]>>,
}

/// The error [`FieldProbe`] returns.
#[derive(Debug)]
struct ProbeDone;

impl fmt::Display for ProbeDone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field probe")
    }
}

impl std::error::Error for ProbeDone {}

impl de::Error for ProbeDone {
    fn custom<T: fmt::Display>(_: T) -> Self {
        ProbeDone
    }
}

impl<'de> de::Deserializer<'de> for FieldProbe<'_> {
    type Error = ProbeDone;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ProbeDone> {
        Err(ProbeDone)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ProbeDone> {
        self.seen.set(Some(fields));
        Err(ProbeDone)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// A parser message without the ` at line L column C` its `Display` ends
/// with (serde_json's spelling), so the position can be shown once, in the
/// caller's own form. A message without that suffix is returned whole.
///
/// ```
/// use cupel_core::strict::without_position;
/// assert_eq!(without_position("expected `,` at line 2 column 7", 2, 7), "expected `,`");
/// assert_eq!(without_position("expected `,`", 2, 7), "expected `,`");
/// ```
pub fn without_position(message: &str, line: usize, column: usize) -> &str {
    let suffix = format!(" at line {line} column {column}");
    message.strip_suffix(suffix.as_str()).unwrap_or(message)
}

/// Joins a possibly multi-line parser message into one line: lines
/// trimmed, blank ones dropped, the rest joined with `"; "`.
///
/// ```
/// assert_eq!(
///     cupel_core::strict::one_line("invalid type\n  expected a table\n"),
///     "invalid type; expected a table"
/// );
/// ```
pub fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The 1-based line and column (counted in characters) of byte offset `at`
/// in `text`. An offset inside a character counts as that character; one
/// past the end is the position after the last character.
///
/// ```
/// use cupel_core::strict::line_col;
/// assert_eq!(line_col("a = 1\nbé = x", 10), (2, 4));
/// assert_eq!(line_col("é", 1), (1, 1));
/// ```
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = text.get(..at).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before.get(line_start..).unwrap_or_default().chars().count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Rule {
        threshold: Option<f64>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Denying {
        rules: Vec<Rule>,
    }

    fn json<T: for<'de> Deserialize<'de>>(s: &str) -> Result<T, StrictError<serde_json::Error>> {
        let mut de = serde_json::Deserializer::from_str(s);
        deserialize(&mut de)
    }

    #[test]
    fn an_ignored_key_and_a_denied_key_read_the_same() {
        let ignored = json::<Denying>(r#"{"rules": [{}, {"thresold": 1}]}"#);
        let denied = json::<Denying>(r#"{"rules": [], "rulez": 1}"#);
        match (ignored, denied) {
            (
                Err(StrictError::UnknownKey { path: a }),
                Err(StrictError::UnknownKey { path: b }),
            ) => {
                assert_eq!(a.to_string(), "rules[1].thresold");
                assert_eq!(b.to_string(), "rulez");
                assert_eq!(a.parent_field(), Some("rules"));
                assert_eq!(b.parent_field(), None);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_type_error_carries_the_value_path() {
        match json::<Denying>(r#"{"rules": [{"threshold": "x"}]}"#) {
            Err(StrictError::Invalid { path, error }) => {
                assert_eq!(path.to_string(), "rules[0].threshold");
                assert_eq!(error.line(), 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn paths_parse_from_either_spelling() {
        let p = KeyPath::parse("scorers.0.children[2].weight");
        assert_eq!(
            p.segments(),
            [
                PathSegment::Key("scorers".into()),
                PathSegment::Index(0),
                PathSegment::Key("children".into()),
                PathSegment::Index(2),
                PathSegment::Key("weight".into()),
            ]
        );
        assert_eq!(p.to_string(), "scorers[0].children[2].weight");
        assert_eq!(KeyPath::parse("").to_string(), "");
    }

    #[test]
    fn field_names_of_a_map_are_empty() {
        assert!(field_names::<std::collections::BTreeMap<String, i64>>().is_empty());
        assert_eq!(field_names::<Denying>(), ["rules"]);
    }

    #[test]
    fn line_col_counts_characters_and_clamps() {
        // "ab\n" is bytes 0..3; "é" is bytes 3..5; "c" is byte 5.
        let text = "ab\néc";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        assert_eq!(line_col(text, 4), (2, 1));
        assert_eq!(line_col(text, 5), (2, 2));
        assert_eq!(line_col(text, 99), (2, 3));
    }
}
