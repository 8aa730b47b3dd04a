//! A strictness pass over JSON documents: serde_json (like most JSON
//! parsers) lets the last of two equal keys win in a map, silently. This
//! pass walks the document once, without building it, and fails on the
//! first key given twice in one object, naming its path (issue 18). It also
//! requires the document to be an object.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use cupel_core::strict::KeyPath;

/// Walks one JSON value, keeping the path to it.
struct Check<'p> {
    path: &'p mut KeyPath,
}

impl<'de> DeserializeSeed<'de> for Check<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i128<E>(self, _: i128) -> Result<(), E> {
        Ok(())
    }
    fn visit_u128<E>(self, _: u128) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let path = self.path;
        let mut i = 0usize;
        loop {
            path.push_index(i);
            let more = seq.next_element_seed(Check { path: &mut *path })?;
            path.pop();
            if more.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let path = self.path;
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            path.push_key(key.clone());
            if !seen.insert(key) {
                return Err(de::Error::custom(format!("duplicate key `{path}`")));
            }
            map.next_value_seed(Check { path: &mut *path })?;
            path.pop();
        }
        Ok(())
    }
}

/// Where a document that should be one JSON object starts with something
/// else: its 1-based line and column (in characters) and what is there, in
/// words. `None` when it starts with `{` (or holds only whitespace: the
/// parser reports that as an unexpected end).
///
/// The words name the usual mistakes precisely: a comment (JSON has none), a
/// byte-order mark that is not at the very start of the input, a control
/// character such as NUL, an array, or a bare value.
pub(crate) fn top_level_problem(text: &str) -> Option<(usize, usize, String)> {
    let (mut line, mut column) = (1usize, 1usize);
    for c in text.chars() {
        match c {
            '{' => return None,
            '\n' => {
                line += 1;
                column = 1;
            }
            ' ' | '\t' | '\r' => column += 1,
            _ => {
                let what = match c {
                    '[' => "an array".to_string(),
                    '#' | '/' => format!("a `{c}` comment (JSON has no comments)"),
                    '\u{feff}' => {
                        "a byte-order mark (U+FEFF), which may only open the input".to_string()
                    }
                    c if c.is_control() => {
                        format!("the control character U+{:04X}", u32::from(c))
                    }
                    _ => "a bare value".to_string(),
                };
                return Some((line, column, what));
            }
        }
    }
    None
}

/// Checks that `text` is one JSON object with no key given twice in any
/// object. Errors are serde_json's (with line and column); callers that can
/// say where a non-object starts ask [`top_level_problem`] first.
pub(crate) fn check(text: &str) -> Result<(), serde_json::Error> {
    let first = text.trim_start().chars().next();
    if first.is_some_and(|c| c != '{') {
        return Err(de::Error::custom(
            "the document must be a JSON object ({ ... }), not an array or a bare value",
        ));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let mut path = KeyPath::new();
    Check { path: &mut path }.deserialize(&mut de)?;
    de.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_named_with_their_path() {
        let e =
            check(r#"{"budget": {"reserved_slots": {"Message": 40, "Message": 0}}}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("duplicate key `budget.reserved_slots.Message`"),
            "{e}"
        );
        let e = check(r#"{"items": [{"content": "a"}, {"content": "b", "content": "c"}]}"#)
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("duplicate key `items[1].content`"),
            "{e}"
        );
        assert!(check(r#"{"a": {"x": 1}, "b": {"x": 1}}"#).is_ok());
    }

    #[test]
    fn the_document_must_be_an_object() {
        for doc in ["[]", "[{\"content\": \"a\"}]", "1", "\"x\"", "null"] {
            assert!(check(doc).is_err(), "{doc}");
        }
        assert!(check("  {}").is_ok());
    }

    #[test]
    fn a_non_object_start_is_located_and_named() {
        let p = |t: &str| top_level_problem(t).map(|(l, c, w)| format!("{l}:{c}: {w}"));
        assert_eq!(p("  {}"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("\n  [1]").as_deref(), Some("2:3: an array"));
        assert_eq!(
            p("# note").as_deref(),
            Some("1:1: a `#` comment (JSON has no comments)")
        );
        assert_eq!(
            p("\u{0}{}").as_deref(),
            Some("1:1: the control character U+0000")
        );
        assert_eq!(
            p("\u{feff}{}").as_deref(),
            Some("1:1: a byte-order mark (U+FEFF), which may only open the input")
        );
        assert_eq!(p(" 42").as_deref(), Some("1:2: a bare value"));
    }
}
