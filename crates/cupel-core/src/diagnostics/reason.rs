//! Why an item was included or excluded.

use std::fmt;

/// Why the pipeline left an item out.
///
/// Every variant carries the data that explains the decision. On the wire
/// (`serde` feature) a reason is an object whose `"reason"` field names the
/// variant, with the variant's fields as siblings:
/// `{"reason": "BudgetExceeded", "item_tokens": 400, "available_tokens": 50}`.
/// Reason names this version does not know deserialize to
/// [`ExclusionReason::Unknown`] instead of failing.
///
/// Variants marked *reserved* are defined by the specification for forward
/// compatibility; the built-in stages never emit them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ExclusionReason {
    /// The item did not fit the budget (Slice stage, or Place under `Truncate`).
    BudgetExceeded {
        /// The item's tokens.
        item_tokens: i64,
        /// The room the item actually had, at least 0: the effective target
        /// minus what the slicer selected, or the narrower room a
        /// budget-splitting slicer reports (a quota kind's share); under
        /// `Truncate`, the target minus what was kept when the pass reached
        /// the item (see the pipeline docs for the exact rule).
        available_tokens: i64,
    },
    /// *Reserved.* The item scored below a threshold.
    ScoredTooLow {
        /// The item's score.
        score: f64,
        /// The threshold it missed.
        threshold: f64,
    },
    /// A byte-identical item with a higher score (or an earlier position) was kept.
    Deduplicated {
        /// The content of the surviving item.
        deduplicated_against: String,
    },
    /// *Reserved.* The item's kind exceeded its percentage quota cap.
    QuotaCapExceeded {
        /// The capped kind.
        kind: String,
        /// The cap.
        cap: i64,
        /// The count or amount that exceeded it.
        actual: i64,
    },
    /// *Reserved.* The item was displaced to satisfy another kind's quota.
    QuotaRequireDisplaced {
        /// The kind whose requirement displaced it.
        displaced_by_kind: String,
    },
    /// The item's token count was negative (Classify stage).
    NegativeTokens {
        /// The negative count.
        tokens: i64,
    },
    /// The pinned items made this item impossible to fit: alone it is larger
    /// than the effective target left by the pinned tokens, yet fits the one
    /// without them (at Slice), or it would have been kept had the pinned
    /// tokens not counted (under `Truncate`). No pinned item is named for more
    /// tokens than it holds.
    PinnedOverride {
        /// Content of the pinned item held responsible.
        displaced_by: String,
    },
    /// *Reserved.* A user-defined filter removed the item.
    Filtered {
        /// The filter's name.
        filter_name: String,
    },
    /// A count-quota slicer dropped the item because its kind already had
    /// `cap` items (Slice stage). Not in the specification's list of eight; it
    /// is this implementation's report of count-cap exclusions.
    CountCapExceeded {
        /// The capped kind.
        kind: String,
        /// The kind's `cap_count`.
        cap: i64,
        /// How many items of the kind were already selected.
        count: i64,
    },
    /// The item belongs to an atomic group (an extension: see
    /// `spec/18-atomic-groups.md`) that was left out as a whole, so every
    /// member of the group carries this reason and the group's id. Not in the
    /// specification's list of eight; readers that predate it read it as an
    /// unknown reason.
    ///
    /// Emitted at Slice (the slicer left the group out), at Place under
    /// `Truncate` (the group did not fit what was left), and at Classify for
    /// the other members of a group one of whose members has negative tokens
    /// (that member itself is reported as `NegativeTokens`; the others get
    /// `available_tokens = 0`).
    GroupExcluded {
        /// The group id.
        group: String,
        /// The group's total tokens (its non-negative members).
        group_tokens: i64,
        /// The room the group had, at least 0 (same rule as
        /// [`BudgetExceeded`](ExclusionReason::BudgetExceeded)).
        available_tokens: i64,
    },
    /// A reason this version does not know, read from another implementation's data.
    Unknown {
        /// The reason name as found on the wire.
        reason: String,
    },
}

impl ExclusionReason {
    /// The variant name, as used on the wire (`"BudgetExceeded"`, ...); for
    /// [`Unknown`](ExclusionReason::Unknown) the foreign name it was read with.
    pub fn name(&self) -> &str {
        match self {
            ExclusionReason::Unknown { reason } => reason,
            other => other.variant_name(),
        }
    }

    /// The variant name as a `'static` string, with every
    /// [`Unknown`](ExclusionReason::Unknown) reason reported as `"Unknown"` — a
    /// bounded set of values, as telemetry attributes need.
    pub fn variant_name(&self) -> &'static str {
        match self {
            ExclusionReason::BudgetExceeded { .. } => "BudgetExceeded",
            ExclusionReason::ScoredTooLow { .. } => "ScoredTooLow",
            ExclusionReason::Deduplicated { .. } => "Deduplicated",
            ExclusionReason::QuotaCapExceeded { .. } => "QuotaCapExceeded",
            ExclusionReason::QuotaRequireDisplaced { .. } => "QuotaRequireDisplaced",
            ExclusionReason::NegativeTokens { .. } => "NegativeTokens",
            ExclusionReason::PinnedOverride { .. } => "PinnedOverride",
            ExclusionReason::Filtered { .. } => "Filtered",
            ExclusionReason::CountCapExceeded { .. } => "CountCapExceeded",
            ExclusionReason::GroupExcluded { .. } => "GroupExcluded",
            ExclusionReason::Unknown { .. } => "Unknown",
        }
    }

    /// Whether `self` and `other` are the same variant, ignoring their fields.
    pub fn same_variant(&self, other: &ExclusionReason) -> bool {
        match (self, other) {
            (ExclusionReason::Unknown { reason: a }, ExclusionReason::Unknown { reason: b }) => {
                a == b
            }
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

impl fmt::Display for ExclusionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExclusionReason::BudgetExceeded {
                item_tokens,
                available_tokens,
            } => write!(
                f,
                "BudgetExceeded: {item_tokens} tokens requested, {available_tokens} available"
            ),
            ExclusionReason::ScoredTooLow { score, threshold } => {
                write!(f, "ScoredTooLow: score {score} below threshold {threshold}")
            }
            ExclusionReason::Deduplicated {
                deduplicated_against,
            } => write!(f, "Deduplicated: duplicate of {deduplicated_against:?}"),
            ExclusionReason::QuotaCapExceeded { kind, cap, actual } => {
                write!(f, "QuotaCapExceeded: kind {kind} at {actual}, cap {cap}")
            }
            ExclusionReason::QuotaRequireDisplaced { displaced_by_kind } => {
                write!(
                    f,
                    "QuotaRequireDisplaced: displaced by kind {displaced_by_kind}"
                )
            }
            ExclusionReason::NegativeTokens { tokens } => {
                write!(f, "NegativeTokens: {tokens} tokens")
            }
            ExclusionReason::PinnedOverride { displaced_by } => {
                write!(
                    f,
                    "PinnedOverride: displaced by pinned item {displaced_by:?}"
                )
            }
            ExclusionReason::Filtered { filter_name } => write!(f, "Filtered: {filter_name}"),
            ExclusionReason::CountCapExceeded { kind, cap, count } => {
                write!(
                    f,
                    "CountCapExceeded: kind {kind} already has {count} items, cap {cap}"
                )
            }
            ExclusionReason::GroupExcluded {
                group,
                group_tokens,
                available_tokens,
            } => write!(
                f,
                "GroupExcluded: group {group:?} ({group_tokens} tokens) left out whole, {available_tokens} available"
            ),
            ExclusionReason::Unknown { reason } => f.write_str(reason),
        }
    }
}

/// Why the pipeline selected an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InclusionReason {
    /// Selected on its score within the budget.
    Scored,
    /// Pinned: bypassed scoring and slicing.
    Pinned,
    /// Zero tokens: included at no budget cost.
    ZeroToken,
    /// A reason this version does not know, read from another implementation's data.
    Unknown {
        /// The reason name as found on the wire.
        reason: String,
    },
}

impl InclusionReason {
    /// The variant name (`"Scored"`, `"Pinned"`, `"ZeroToken"`).
    pub fn name(&self) -> &str {
        match self {
            InclusionReason::Scored => "Scored",
            InclusionReason::Pinned => "Pinned",
            InclusionReason::ZeroToken => "ZeroToken",
            InclusionReason::Unknown { reason } => reason,
        }
    }
}

impl fmt::Display for InclusionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "serde")]
mod serde_impl {
    use super::*;
    use serde::de::Error as _;
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    impl Serialize for ExclusionReason {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(None)?;
            m.serialize_entry("reason", self.name())?;
            match self {
                ExclusionReason::BudgetExceeded {
                    item_tokens,
                    available_tokens,
                } => {
                    m.serialize_entry("item_tokens", item_tokens)?;
                    m.serialize_entry("available_tokens", available_tokens)?;
                }
                ExclusionReason::ScoredTooLow { score, threshold } => {
                    m.serialize_entry("score", score)?;
                    m.serialize_entry("threshold", threshold)?;
                }
                ExclusionReason::Deduplicated {
                    deduplicated_against,
                } => m.serialize_entry("deduplicated_against", deduplicated_against)?,
                ExclusionReason::QuotaCapExceeded { kind, cap, actual } => {
                    m.serialize_entry("kind", kind)?;
                    m.serialize_entry("cap", cap)?;
                    m.serialize_entry("actual", actual)?;
                }
                ExclusionReason::QuotaRequireDisplaced { displaced_by_kind } => {
                    m.serialize_entry("displaced_by_kind", displaced_by_kind)?;
                }
                ExclusionReason::NegativeTokens { tokens } => {
                    m.serialize_entry("tokens", tokens)?;
                }
                ExclusionReason::PinnedOverride { displaced_by } => {
                    m.serialize_entry("displaced_by", displaced_by)?;
                }
                ExclusionReason::Filtered { filter_name } => {
                    m.serialize_entry("filter_name", filter_name)?;
                }
                ExclusionReason::CountCapExceeded { kind, cap, count } => {
                    m.serialize_entry("kind", kind)?;
                    m.serialize_entry("cap", cap)?;
                    m.serialize_entry("count", count)?;
                }
                ExclusionReason::GroupExcluded {
                    group,
                    group_tokens,
                    available_tokens,
                } => {
                    m.serialize_entry("group", group)?;
                    m.serialize_entry("group_tokens", group_tokens)?;
                    m.serialize_entry("available_tokens", available_tokens)?;
                }
                ExclusionReason::Unknown { .. } => {}
            }
            m.end()
        }
    }

    /// Every field any variant may carry; unknown keys are ignored.
    #[derive(Deserialize)]
    struct RawReason {
        reason: String,
        item_tokens: Option<i64>,
        available_tokens: Option<i64>,
        score: Option<f64>,
        threshold: Option<f64>,
        deduplicated_against: Option<String>,
        kind: Option<String>,
        cap: Option<i64>,
        actual: Option<i64>,
        count: Option<i64>,
        displaced_by_kind: Option<String>,
        tokens: Option<i64>,
        displaced_by: Option<String>,
        filter_name: Option<String>,
        group: Option<String>,
        group_tokens: Option<i64>,
    }

    fn need<T, E: serde::de::Error>(v: Option<T>, reason: &str, field: &str) -> Result<T, E> {
        v.ok_or_else(|| E::custom(format!("{reason} reason is missing field `{field}`")))
    }

    impl<'de> Deserialize<'de> for ExclusionReason {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let r = RawReason::deserialize(d)?;
            let n = r.reason.as_str();
            Ok(match n {
                "BudgetExceeded" => ExclusionReason::BudgetExceeded {
                    item_tokens: need(r.item_tokens, n, "item_tokens")?,
                    available_tokens: need(r.available_tokens, n, "available_tokens")?,
                },
                "ScoredTooLow" => ExclusionReason::ScoredTooLow {
                    score: need(r.score, n, "score")?,
                    threshold: need(r.threshold, n, "threshold")?,
                },
                "Deduplicated" => ExclusionReason::Deduplicated {
                    deduplicated_against: need(r.deduplicated_against, n, "deduplicated_against")?,
                },
                "QuotaCapExceeded" => ExclusionReason::QuotaCapExceeded {
                    kind: need(r.kind, n, "kind")?,
                    cap: need(r.cap, n, "cap")?,
                    actual: need(r.actual, n, "actual")?,
                },
                "QuotaRequireDisplaced" => ExclusionReason::QuotaRequireDisplaced {
                    displaced_by_kind: need(r.displaced_by_kind, n, "displaced_by_kind")?,
                },
                "NegativeTokens" => ExclusionReason::NegativeTokens {
                    tokens: need(r.tokens, n, "tokens")?,
                },
                "PinnedOverride" => ExclusionReason::PinnedOverride {
                    displaced_by: need(r.displaced_by, n, "displaced_by")?,
                },
                "Filtered" => ExclusionReason::Filtered {
                    filter_name: need(r.filter_name, n, "filter_name")?,
                },
                "CountCapExceeded" => ExclusionReason::CountCapExceeded {
                    kind: need(r.kind, n, "kind")?,
                    cap: need(r.cap, n, "cap")?,
                    count: need(r.count, n, "count")?,
                },
                "GroupExcluded" => ExclusionReason::GroupExcluded {
                    group: need(r.group, n, "group")?,
                    group_tokens: need(r.group_tokens, n, "group_tokens")?,
                    available_tokens: need(r.available_tokens, n, "available_tokens")?,
                },
                "" => return Err(D::Error::custom("exclusion reason name must not be empty")),
                _ => ExclusionReason::Unknown { reason: r.reason },
            })
        }
    }

    impl Serialize for InclusionReason {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(Some(1))?;
            m.serialize_entry("reason", self.name())?;
            m.end()
        }
    }

    #[derive(Deserialize)]
    struct RawInclusion {
        reason: String,
    }

    impl<'de> Deserialize<'de> for InclusionReason {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let r = RawInclusion::deserialize(d)?;
            Ok(match r.reason.as_str() {
                "Scored" => InclusionReason::Scored,
                "Pinned" => InclusionReason::Pinned,
                "ZeroToken" => InclusionReason::ZeroToken,
                "" => return Err(D::Error::custom("inclusion reason name must not be empty")),
                _ => InclusionReason::Unknown { reason: r.reason },
            })
        }
    }
}
