//! A strictness pass over JSON documents: serde_json (like most JSON
//! parsers) lets the last of two equal keys win in a map, silently. This
//! pass walks the document once, without building it, and fails on the
//! first key given twice in one object, naming its path (issue 18). It also
//! requires the document to be an object.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::input::{Seg, render_path};

/// Walks one JSON value, keeping the path to it.
struct Check<'p> {
    path: &'p mut Vec<Seg>,
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
            path.push(Seg::Index(i));
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
            path.push(Seg::Key(key.clone()));
            if !seen.insert(key) {
                let at = render_path(path);
                return Err(de::Error::custom(format!("duplicate key `{at}`")));
            }
            map.next_value_seed(Check { path: &mut *path })?;
            path.pop();
        }
        Ok(())
    }
}

/// Checks that `text` is one JSON object with no key given twice in any
/// object. Errors are serde_json's (with line and column).
pub(crate) fn check(text: &str) -> Result<(), serde_json::Error> {
    let first = text.trim_start().chars().next();
    if first.is_some_and(|c| c != '{') {
        return Err(de::Error::custom(
            "the document must be a JSON object ({ ... }), not an array or a bare value",
        ));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let mut path = Vec::new();
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
}
