//! Component names as written in configuration files and conformance vectors.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Normalises a component name: ASCII-lowercase, `-`/`_`/spaces removed, and a
/// trailing `scorer` / `slice` / `slicer` / `placer` suffix dropped, so that
/// `"metadata_trust"`, `"MetadataTrustScorer"` and `"metadata-trust"` all match.
fn normalise(name: &str) -> String {
    let mut s: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    for suffix in ["scorer", "slicer", "slice", "placer"] {
        if s.len() > suffix.len() && s.ends_with(suffix) {
            s.truncate(s.len() - suffix.len());
            break;
        }
    }
    s
}

/// A component type named in configuration: one of the built-in types, or a
/// name to look up in a [`ComponentRegistry`](crate::ComponentRegistry).
///
/// Reading a policy accepts any name: a name that is not built in becomes
/// [`Custom`](Self::Custom), and building the policy fails, listing the
/// built-in and registered names, when the registry does not know it.
///
/// ```
/// use cupel_pipeline::{ComponentType, ScorerType};
/// let t: ComponentType<ScorerType> = serde_json::from_str("\"Recency\"")?;
/// assert_eq!(t, ScorerType::Recency);
/// let c: ComponentType<ScorerType> = serde_json::from_str("\"keyword\"")?;
/// assert_eq!(c, ComponentType::Custom("keyword".into()));
/// assert_eq!(c.builtin(), None);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ComponentType<T> {
    /// A built-in component.
    Builtin(T),
    /// A custom component, by the name it was registered under.
    Custom(String),
}

impl<T: Copy> ComponentType<T> {
    /// The built-in type, or `None` for a custom name.
    pub fn builtin(&self) -> Option<T> {
        match self {
            ComponentType::Builtin(t) => Some(*t),
            ComponentType::Custom(_) => None,
        }
    }
}

impl<T> From<T> for ComponentType<T> {
    fn from(t: T) -> Self {
        ComponentType::Builtin(t)
    }
}

impl<T: PartialEq> PartialEq<T> for ComponentType<T> {
    fn eq(&self, other: &T) -> bool {
        matches!(self, ComponentType::Builtin(t) if t == other)
    }
}

macro_rules! component_names {
    (
        $(#[$meta:meta])* $name:ident, $what:literal,
        [$( $(#[$vmeta:meta])* $variant:ident = $canonical:literal $(| $alias:literal)* ),* $(,)?]
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// Every variant, in documentation order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The canonical (snake_case) name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $canonical, )*
                }
            }

            /// Looks a name up, accepting snake_case, kebab-case and the spec's spellings.
            pub fn from_name(name: &str) -> Option<Self> {
                let n = normalise(name);
                $(
                    if n == normalise($canonical) $(|| n == normalise($alias))* {
                        return Some($name::$variant);
                    }
                )*
                None
            }

            /// `"a, b, c"` — the accepted canonical names, for error messages.
            pub fn expected() -> String {
                let names: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                names.join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = cupel_core::CupelError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::from_name(s).ok_or_else(|| cupel_core::CupelError::PipelineConfig(format!(
                    concat!("unknown ", $what, " `{}` (expected one of: {})"),
                    s,
                    Self::expected()
                )))
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                // The bare message: the caller adds its own prefix once.
                Self::from_name(&s).ok_or_else(|| serde::de::Error::custom(format!(
                    concat!("unknown ", $what, " `{}` (expected one of: {})"),
                    s,
                    Self::expected()
                )))
            }
        }

        impl ComponentType<$name> {
            /// The name as written: the canonical built-in name or the custom name.
            pub fn as_str(&self) -> &str {
                match self {
                    ComponentType::Builtin(t) => t.as_str(),
                    ComponentType::Custom(n) => n,
                }
            }

            /// A built-in type when `name` is one (any accepted spelling), else a custom name.
            pub fn from_name(name: &str) -> Self {
                match $name::from_name(name) {
                    Some(t) => ComponentType::Builtin(t),
                    None => ComponentType::Custom(name.to_owned()),
                }
            }
        }

        impl fmt::Display for ComponentType<$name> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for ComponentType<$name> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for ComponentType<$name> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                if s.trim().is_empty() {
                    return Err(serde::de::Error::custom(format!(
                        concat!("empty ", $what, " type (expected one of: {} or a registered name)"),
                        $name::expected()
                    )));
                }
                Ok(Self::from_name(&s))
            }
        }
    };
}

component_names! {
    /// The scorer types a [`ScorerConfig`](crate::ScorerConfig) can name.
    ScorerType, "scorer",
    [
        /// `RecencyScorer`.
        Recency = "recency",
        /// `PriorityScorer`.
        Priority = "priority",
        /// `KindScorer`.
        Kind = "kind",
        /// `TagScorer`.
        Tag = "tag",
        /// `FrequencyScorer`.
        Frequency = "frequency",
        /// `ReflexiveScorer`.
        Reflexive = "reflexive",
        /// `CompositeScorer`.
        Composite = "composite",
        /// `ScaledScorer`.
        Scaled = "scaled",
        /// `DecayScorer`.
        Decay = "decay",
        /// `MetadataTrustScorer`.
        MetadataTrust = "metadata_trust",
        /// `MetadataKeyScorer`.
        MetadataKey = "metadata_key",
        /// `PositionScorer`.
        Position = "position",
        /// `Bm25Scorer`: lexical relevance to the run's query.
        Bm25 = "bm25",
        /// `VectorScorer`: cosine similarity to the run's query embedding.
        Vector = "vector",
        /// `HybridScorer`: its children (lexical, vector) fused.
        Hybrid = "hybrid",
    ]
}

component_names! {
    /// The slicer types a policy can name.
    SlicerType, "slicer",
    [
        /// `GreedySlice`.
        Greedy = "greedy",
        /// `KnapsackSlice`.
        Knapsack = "knapsack",
        /// `QuotaSlice`.
        Quota = "quota",
        /// `CountQuotaSlice`.
        CountQuota = "count_quota",
        /// `CountConstrainedKnapsackSlice`.
        CountConstrainedKnapsack = "count_constrained_knapsack",
        /// `ContiguousSlice`.
        Contiguous = "contiguous",
        /// `ScoreOrderSlice`: the best-scoring items that fit.
        ScoreOrder = "score_order",
    ]
}

component_names! {
    /// The placer types a policy can name.
    PlacerType, "placer",
    [
        /// `ChronologicalPlacer`.
        Chronological = "chronological",
        /// `UShapedPlacer` (also written `u-shaped`).
        UShaped = "u_shaped" | "u-shaped",
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_accept_every_spelling() {
        for s in [
            "metadata_trust",
            "MetadataTrustScorer",
            "metadata-trust",
            "METADATATRUST",
        ] {
            assert_eq!(
                ScorerType::from_name(s),
                Some(ScorerType::MetadataTrust),
                "{s}"
            );
        }
        for s in ["u-shaped", "u_shaped", "UShapedPlacer", "ushaped"] {
            assert_eq!(PlacerType::from_name(s), Some(PlacerType::UShaped), "{s}");
        }
        for s in [
            "count_constrained_knapsack",
            "CountConstrainedKnapsackSlice",
        ] {
            assert_eq!(
                SlicerType::from_name(s),
                Some(SlicerType::CountConstrainedKnapsack),
                "{s}"
            );
        }
        assert_eq!(
            SlicerType::from_name("GreedySlice"),
            Some(SlicerType::Greedy)
        );
        assert_eq!(ScorerType::from_name("bogus"), None);
    }

    #[test]
    fn unknown_names_list_the_choices() {
        let e = "fancy".parse::<PlacerType>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "pipeline configuration: unknown placer `fancy` (expected one of: chronological, u_shaped)"
        );
    }
}
