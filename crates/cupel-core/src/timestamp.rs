//! Lenient timestamp parsing shared by every reader of Cupel data.
//!
//! Accepts RFC 3339 (`2024-06-01T12:00:00Z`, `...+02:00`, fractional seconds)
//! and the TOML 1.1 spellings: a space or lowercase `t` between date and time,
//! lowercase `z`, and omitted seconds (`2024-06-01T12:00Z`). An offset is
//! required: a local time without one is rejected rather than guessed.

use chrono::{DateTime, Utc};

/// Parses a timestamp with an offset into UTC.
///
/// ```
/// use cupel_core::parse_timestamp;
/// let a = parse_timestamp("2024-01-01T00:00Z").unwrap();
/// let b = parse_timestamp("2024-01-01 02:00:00+02:00").unwrap();
/// assert_eq!(a, b);
/// assert!(parse_timestamp("2024-01-01T00:00:00").is_none()); // no offset
/// ```
pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    // Normalise separator and case, then add omitted seconds.
    let mut norm: String = s
        .chars()
        .enumerate()
        .map(|(i, c)| match (i, c) {
            (10, ' ' | 't') => 'T',
            (_, 'z') => 'Z',
            _ => c,
        })
        .collect();
    // "YYYY-MM-DDTHH:MM" is 16 bytes; seconds are present when byte 16 is ':'.
    if norm.len() > 16 && norm.is_char_boundary(16) && norm.as_bytes()[16] != b':' {
        norm.insert_str(16, ":00");
    }
    DateTime::parse_from_rfc3339(&norm)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Serde helpers: timestamps as RFC 3339 strings on output; on input an RFC
/// 3339 / TOML 1.1 string or a native TOML datetime.
#[cfg(feature = "serde")]
pub mod serde_timestamp {
    use std::fmt;

    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::de::{self, MapAccess, Visitor};
    use serde::{Deserializer, Serializer};

    /// The key under which the `toml` crate hands native datetimes to serde.
    const TOML_DATETIME_FIELD: &str = "$__toml_private_datetime";

    struct TimestampVisitor;

    impl<'de> Visitor<'de> for TimestampVisitor {
        type Value = DateTime<Utc>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a timestamp with an offset (RFC 3339 or a TOML datetime)")
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            super::parse_timestamp(s).ok_or_else(|| {
                E::custom(format!(
                    "invalid timestamp `{s}`: expected e.g. 2024-06-01T12:00:00Z (an offset is required)"
                ))
            })
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let key: Option<String> = map.next_key()?;
            match key.as_deref() {
                Some(TOML_DATETIME_FIELD) => {
                    let s: String = map.next_value()?;
                    self.visit_str(&s)
                }
                _ => Err(de::Error::custom("expected a timestamp")),
            }
        }
    }

    /// Serialises as RFC 3339 with `Z`.
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }

    /// Deserialises a string or TOML datetime.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        d.deserialize_any(TimestampVisitor)
    }

    /// The same for `Option<DateTime<Utc>>` fields (use with `#[serde(default)]`).
    pub mod option {
        use super::*;

        /// Serialises `Some` as RFC 3339, `None` as none.
        pub fn serialize<S: Serializer>(
            t: &Option<DateTime<Utc>>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => super::serialize(t, s),
                None => s.serialize_none(),
            }
        }

        /// Deserialises an optional timestamp.
        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<DateTime<Utc>>, D::Error> {
            struct OptVisitor;
            impl<'de> Visitor<'de> for OptVisitor {
                type Value = Option<DateTime<Utc>>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("an optional timestamp")
                }
                fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                    Ok(None)
                }
                fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                    Ok(None)
                }
                fn visit_some<D2: Deserializer<'de>>(
                    self,
                    d: D2,
                ) -> Result<Self::Value, D2::Error> {
                    super::deserialize(d).map(Some)
                }
            }
            d.deserialize_option(OptVisitor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rfc3339_and_toml_spellings() {
        let base = parse_timestamp("2024-06-01T12:00:00Z").unwrap();
        for s in [
            "2024-06-01T12:00Z",
            "2024-06-01 12:00:00Z",
            "2024-06-01t12:00:00z",
            "2024-06-01T14:00+02:00",
            "2024-06-01T12:00:00.000Z",
        ] {
            assert_eq!(parse_timestamp(s), Some(base), "{s}");
        }
    }

    #[test]
    fn rejects_local_times_and_garbage() {
        for s in [
            "2024-06-01T12:00:00",
            "2024-06-01",
            "yesterday",
            "",
            "2024-06-01T12:00é",
        ] {
            assert_eq!(parse_timestamp(s), None, "{s}");
        }
    }
}
