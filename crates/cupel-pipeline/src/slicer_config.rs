//! [`SlicerConfig`]: one variant per slicer type, each owning exactly the
//! keys that apply to that slicer.
//!
//! On the wire the slicer's keys sit next to `slicer` in the policy table.
//! They are read into a private flat wire struct and converted once into
//! the variant `slicer` names; a key present that the variant's struct has
//! no field for is rejected there, naming the key and the variant's keys
//! (read from the struct with [`field_names`]).

use serde::{Deserialize, Serialize};

use cupel_core::ConfigError;
use cupel_core::strict::field_names;
use cupel_slicers::ScarcityBehavior;

use crate::config::{CountQuotaConfig, QuotaConfig, scarcity_wire};
use crate::names::{ComponentType, SlicerType};

/// A `knapsack` slicer's keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KnapsackSlicerConfig {
    /// Bucket size (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<i64>,
    /// Optional second guard, in keep-table cells (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_cells: Option<u64>,
    /// Guard in bytes of keep table (default 64 MiB,
    /// [`DEFAULT_MAX_TABLE_BYTES`](cupel_core::DEFAULT_MAX_TABLE_BYTES)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_bytes: Option<u64>,
}

/// A `quota` slicer's keys: the quotas, the inner slicer and, for a
/// knapsack inner slicer, its keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QuotaSlicerConfig {
    /// A knapsack inner slicer's bucket size (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<i64>,
    /// A knapsack inner slicer's cell guard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_cells: Option<u64>,
    /// A knapsack inner slicer's byte guard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_bytes: Option<u64>,
    /// The slicer the quotas decorate (default `greedy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner_slicer: Option<SlicerType>,
    /// Percentage quotas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<QuotaConfig>,
}

/// A `count_quota` slicer's keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CountQuotaSlicerConfig {
    /// A knapsack inner slicer's bucket size (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<i64>,
    /// A knapsack inner slicer's cell guard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_cells: Option<u64>,
    /// A knapsack inner slicer's byte guard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_bytes: Option<u64>,
    /// The slicer the quotas decorate (default `greedy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner_slicer: Option<SlicerType>,
    /// Count quotas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<CountQuotaConfig>,
    /// `degrade` (default) or `throw` on the wire.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "scarcity_wire"
    )]
    pub scarcity_behavior: Option<ScarcityBehavior>,
}

/// A `count_constrained_knapsack` slicer's keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CountConstrainedKnapsackSlicerConfig {
    /// Bucket size (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<i64>,
    /// Optional second guard, in keep-table cells (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_cells: Option<u64>,
    /// Guard in bytes of keep table (default 64 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_bytes: Option<u64>,
    /// Count quotas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<CountQuotaConfig>,
    /// `degrade` (default) or `throw` on the wire.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "scarcity_wire"
    )]
    pub scarcity_behavior: Option<ScarcityBehavior>,
}

/// A custom slicer (a `slicer` name that is not built in, resolved through
/// a [`ComponentRegistry`](crate::ComponentRegistry)): its name and own table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CustomSlicerConfig {
    /// The registered name (the `slicer` key on the wire).
    #[serde(skip)]
    pub name: String,
    /// The slicer's own table (`slicer_params`), handed to its constructor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slicer_params: Option<serde_json::Value>,
}

/// A slicer and its keys: one variant per slicer type, holding the keys
/// that apply to it and no others.
///
/// On the wire the keys sit next to `slicer` (default `greedy`) in the
/// policy table; a key of another slicer (`bucket_size` on `greedy`) is
/// rejected when the table is read.
///
/// ```
/// use cupel_pipeline::{PolicyConfig, SlicerConfig, SlicerType};
/// let cfg = PolicyConfig::from_toml_str(
///     "slicer = \"knapsack\"\nbucket_size = 50\n[[scorers]]\ntype = \"recency\"\n",
/// )?;
/// let SlicerConfig::Knapsack(k) = &cfg.slicer else { unreachable!("slicer = knapsack") };
/// assert_eq!(k.bucket_size, Some(50));
/// assert_eq!(cfg.slicer.slicer_type(), SlicerType::Knapsack);
/// assert_eq!(cfg.slicer.keys(), ["bucket_size", "max_table_cells", "max_table_bytes"]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawSlicer", into = "RawSlicer")]
#[non_exhaustive]
pub enum SlicerConfig {
    /// `greedy` (no keys).
    Greedy,
    /// `score_order` (no keys).
    ScoreOrder,
    /// `contiguous` (no keys).
    Contiguous,
    /// `knapsack`.
    Knapsack(KnapsackSlicerConfig),
    /// `quota`.
    Quota(QuotaSlicerConfig),
    /// `count_quota`.
    CountQuota(CountQuotaSlicerConfig),
    /// `count_constrained_knapsack`.
    CountConstrainedKnapsack(CountConstrainedKnapsackSlicerConfig),
    /// A slicer that is not built in.
    Custom(CustomSlicerConfig),
}

impl Default for SlicerConfig {
    /// `greedy`, the default slicer.
    fn default() -> Self {
        SlicerConfig::Greedy
    }
}

impl From<SlicerType> for SlicerConfig {
    fn from(t: SlicerType) -> Self {
        Self::new(t)
    }
}

impl SlicerConfig {
    /// A slicer of `slicer` type with every key at its default.
    pub fn new(slicer: impl Into<ComponentType<SlicerType>>) -> Self {
        RawSlicer::blank(slicer.into()).into_variant()
    }

    /// The slicer type (the `slicer` key on the wire).
    pub fn slicer_type(&self) -> ComponentType<SlicerType> {
        ComponentType::Builtin(match self {
            Self::Greedy => SlicerType::Greedy,
            Self::ScoreOrder => SlicerType::ScoreOrder,
            Self::Contiguous => SlicerType::Contiguous,
            Self::Knapsack(_) => SlicerType::Knapsack,
            Self::Quota(_) => SlicerType::Quota,
            Self::CountQuota(_) => SlicerType::CountQuota,
            Self::CountConstrainedKnapsack(_) => SlicerType::CountConstrainedKnapsack,
            Self::Custom(c) => return ComponentType::Custom(c.name.clone()),
        })
    }

    /// The keys this slicer accepts next to `slicer`: the fields of the
    /// variant's struct (read with [`field_names`]; none for a slicer
    /// without keys).
    pub fn keys(&self) -> Vec<&'static str> {
        match self {
            Self::Greedy | Self::ScoreOrder | Self::Contiguous => Vec::new(),
            Self::Knapsack(_) => field_names::<KnapsackSlicerConfig>(),
            Self::Quota(_) => field_names::<QuotaSlicerConfig>(),
            Self::CountQuota(_) => field_names::<CountQuotaSlicerConfig>(),
            Self::CountConstrainedKnapsack(_) => {
                field_names::<CountConstrainedKnapsackSlicerConfig>()
            }
            Self::Custom(_) => field_names::<CustomSlicerConfig>(),
        }
    }

    /// The knapsack keys this slicer has (`bucket_size`, `max_table_cells`,
    /// `max_table_bytes`; a decorator's apply to a knapsack inner slicer),
    /// all absent for a slicer without them.
    pub fn knapsack_keys(&self) -> KnapsackSlicerConfig {
        let (bucket_size, max_table_cells, max_table_bytes) = match self {
            Self::Knapsack(c) => (c.bucket_size, c.max_table_cells, c.max_table_bytes),
            Self::Quota(c) => (c.bucket_size, c.max_table_cells, c.max_table_bytes),
            Self::CountQuota(c) => (c.bucket_size, c.max_table_cells, c.max_table_bytes),
            Self::CountConstrainedKnapsack(c) => {
                (c.bucket_size, c.max_table_cells, c.max_table_bytes)
            }
            _ => (None, None, None),
        };
        KnapsackSlicerConfig {
            bucket_size,
            max_table_cells,
            max_table_bytes,
        }
    }

    /// This slicer with the knapsack keys `k`, where it has them.
    #[must_use]
    pub fn with_knapsack_keys(self, k: &KnapsackSlicerConfig) -> Self {
        let mut raw = RawSlicer::from(self);
        (raw.bucket_size, raw.max_table_cells, raw.max_table_bytes) =
            (k.bucket_size, k.max_table_cells, k.max_table_bytes);
        raw.into_variant()
    }
}

/// The flat wire shape of a [`SlicerConfig`]: `slicer` and every slicer
/// key, as the policy table holds them.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct RawSlicer {
    #[serde(default = "default_slicer")]
    pub(crate) slicer: ComponentType<SlicerType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slicer_params: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bucket_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_table_cells: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_table_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) inner_slicer: Option<SlicerType>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) quotas: Vec<QuotaConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) entries: Vec<CountQuotaConfig>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "scarcity_wire"
    )]
    pub(crate) scarcity_behavior: Option<ScarcityBehavior>,
}

pub(crate) fn default_slicer() -> ComponentType<SlicerType> {
    ComponentType::Builtin(SlicerType::Greedy)
}

impl RawSlicer {
    /// A slicer of type `slicer` with no keys.
    fn blank(slicer: ComponentType<SlicerType>) -> Self {
        RawSlicer {
            slicer,
            slicer_params: None,
            bucket_size: None,
            max_table_cells: None,
            max_table_bytes: None,
            inner_slicer: None,
            quotas: Vec::new(),
            entries: Vec::new(),
            scarcity_behavior: None,
        }
    }

    /// The configuration these keys describe.
    ///
    /// # Errors
    /// A key present that the variant's struct has no field for, naming it
    /// and the keys the slicer accepts ([`SlicerConfig::keys`]).
    pub(crate) fn into_config(self) -> Result<SlicerConfig, ConfigError> {
        let present = self.present_keys();
        let config = self.into_variant();
        let keys = config.keys();
        if let Some(key) = present.into_iter().find(|k| !keys.contains(k)) {
            return Err(ConfigError::new(format!(
                "key `{key}` does not apply to slicer `{}`",
                config.slicer_type()
            ))
            .with_key_path(key)
            .with_expected(keys));
        }
        Ok(config)
    }

    /// The keys present besides `slicer`, in table order, read from the
    /// table's own serialization so that no key can be missed.
    fn present_keys(&self) -> Vec<&'static str> {
        let Ok(serde_json::Value::Object(table)) = serde_json::to_value(self) else {
            return Vec::new();
        };
        field_names::<RawSlicer>()
            .into_iter()
            .filter(|k| *k != "slicer" && table.contains_key(*k))
            .collect()
    }

    /// The variant `slicer` names, with the fields its struct has.
    fn into_variant(self) -> SlicerConfig {
        let t = match self.slicer {
            ComponentType::Builtin(t) => t,
            ComponentType::Custom(name) => {
                return SlicerConfig::Custom(CustomSlicerConfig {
                    name,
                    slicer_params: self.slicer_params,
                });
            }
        };
        let (bucket_size, max_table_cells, max_table_bytes) =
            (self.bucket_size, self.max_table_cells, self.max_table_bytes);
        match t {
            SlicerType::Greedy => SlicerConfig::Greedy,
            SlicerType::ScoreOrder => SlicerConfig::ScoreOrder,
            SlicerType::Contiguous => SlicerConfig::Contiguous,
            SlicerType::Knapsack => SlicerConfig::Knapsack(KnapsackSlicerConfig {
                bucket_size,
                max_table_cells,
                max_table_bytes,
            }),
            SlicerType::Quota => SlicerConfig::Quota(QuotaSlicerConfig {
                bucket_size,
                max_table_cells,
                max_table_bytes,
                inner_slicer: self.inner_slicer,
                quotas: self.quotas,
            }),
            SlicerType::CountQuota => SlicerConfig::CountQuota(CountQuotaSlicerConfig {
                bucket_size,
                max_table_cells,
                max_table_bytes,
                inner_slicer: self.inner_slicer,
                entries: self.entries,
                scarcity_behavior: self.scarcity_behavior,
            }),
            SlicerType::CountConstrainedKnapsack => {
                SlicerConfig::CountConstrainedKnapsack(CountConstrainedKnapsackSlicerConfig {
                    bucket_size,
                    max_table_cells,
                    max_table_bytes,
                    entries: self.entries,
                    scarcity_behavior: self.scarcity_behavior,
                })
            }
        }
    }
}

impl TryFrom<RawSlicer> for SlicerConfig {
    type Error = ConfigError;

    fn try_from(raw: RawSlicer) -> Result<Self, ConfigError> {
        raw.into_config()
    }
}

impl From<SlicerConfig> for RawSlicer {
    fn from(c: SlicerConfig) -> Self {
        let mut r = RawSlicer::blank(c.slicer_type());
        let k = c.knapsack_keys();
        (r.bucket_size, r.max_table_cells, r.max_table_bytes) =
            (k.bucket_size, k.max_table_cells, k.max_table_bytes);
        match c {
            SlicerConfig::Quota(q) => (r.inner_slicer, r.quotas) = (q.inner_slicer, q.quotas),
            SlicerConfig::CountQuota(q) => {
                (r.inner_slicer, r.entries) = (q.inner_slicer, q.entries);
                r.scarcity_behavior = q.scarcity_behavior;
            }
            SlicerConfig::CountConstrainedKnapsack(q) => {
                (r.entries, r.scarcity_behavior) = (q.entries, q.scarcity_behavior);
            }
            SlicerConfig::Custom(c) => r.slicer_params = c.slicer_params,
            _ => {}
        }
        r
    }
}
