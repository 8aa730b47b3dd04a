//! Trace events, stages and the overflow event.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::{ContextBudget, ContextItem, ContextKind};

/// The observable pipeline stages. (Sort is internal and has no event.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum PipelineStage {
    /// Partition into pinned / scoreable; exclude negative-token items.
    Classify,
    /// Score every scoreable item.
    Score,
    /// Remove byte-identical duplicates.
    Deduplicate,
    /// Select what fits the effective budget.
    Slice,
    /// Merge pinned items, handle overflow, order the window.
    Place,
    /// A stage name this version does not know (read from other implementations' data).
    #[cfg_attr(feature = "serde", serde(other))]
    Unknown,
}

impl PipelineStage {
    /// The five stages every run reports, in order.
    pub const ALL: [PipelineStage; 5] = [
        PipelineStage::Classify,
        PipelineStage::Score,
        PipelineStage::Deduplicate,
        PipelineStage::Slice,
        PipelineStage::Place,
    ];

    /// The stage name as written in events (`"Classify"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            PipelineStage::Classify => "Classify",
            PipelineStage::Score => "Score",
            PipelineStage::Deduplicate => "Deduplicate",
            PipelineStage::Slice => "Slice",
            PipelineStage::Place => "Place",
            PipelineStage::Unknown => "Unknown",
        }
    }

    /// The lowercase name used in telemetry span names (`"classify"`, ...).
    pub fn lowercase_name(self) -> &'static str {
        match self {
            PipelineStage::Classify => "classify",
            PipelineStage::Score => "score",
            PipelineStage::Deduplicate => "deduplicate",
            PipelineStage::Slice => "slice",
            PipelineStage::Place => "place",
            PipelineStage::Unknown => "unknown",
        }
    }
}

impl fmt::Display for PipelineStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much a [`DiagnosticTraceCollector`](crate::DiagnosticTraceCollector) records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum TraceDetailLevel {
    /// One event per stage (durations and counts).
    #[default]
    Stage,
    /// Stage events plus one event per item decision.
    Item,
}

/// One recorded observation: a whole stage, or one item's decision.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct TraceEvent {
    /// The stage that produced the event.
    pub stage: PipelineStage,
    /// Wall-clock duration of the stage in milliseconds; `0.0` for item events.
    pub duration_ms: f64,
    /// Items that entered the stage; `1` for item events.
    pub item_count: usize,
    /// Optional human-readable detail (item events say what was decided).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub message: Option<String>,
}

/// Timing and throughput of one stage of one run, as the pipeline measured it.
///
/// Richer than a [`TraceEvent`]: it carries the true wall-clock start and end,
/// so exporters that build spans after the fact can still give them their real
/// timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct StageTrace {
    /// The stage.
    pub stage: PipelineStage,
    /// Wall-clock time the stage started.
    pub started_at: SystemTime,
    /// How long it ran (monotonic clock).
    pub duration: Duration,
    /// Items entering the stage.
    pub item_count_in: usize,
    /// Items leaving the stage.
    pub item_count_out: usize,
}

impl StageTrace {
    /// Wall-clock time the stage ended (`started_at + duration`).
    pub fn ended_at(&self) -> SystemTime {
        self.started_at + self.duration
    }

    /// The stage-level [`TraceEvent`] for this stage (`item_count` = items in).
    pub fn to_event(&self) -> TraceEvent {
        TraceEvent {
            stage: self.stage,
            duration_ms: self.duration.as_secs_f64() * 1000.0,
            item_count: self.item_count_in,
            message: None,
        }
    }
}

/// Reported when the merged selection exceeds the target under
/// [`OverflowStrategy::Proceed`](crate::OverflowStrategy::Proceed).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct OverflowEvent {
    /// Tokens above `target_tokens`.
    pub tokens_over_budget: i64,
    /// Every item of the merged selection (pinned first, then sliced).
    pub overflowing_items: Vec<ContextItem>,
    /// The budget that was exceeded.
    pub budget: ContextBudget,
}

/// A count requirement a count-quota slicer could not meet (`Degrade` mode).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct CountRequirementShortfall {
    /// The kind that fell short.
    pub kind: ContextKind,
    /// Its configured `require_count`.
    pub required_count: usize,
    /// How many candidates could be committed.
    pub satisfied_count: usize,
}

/// An item a count-quota slicer removed because its kind had reached its cap.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct CapExclusion {
    /// Index of the item in the slicer's input.
    pub index: usize,
    /// The capped kind.
    pub kind: ContextKind,
    /// The kind's `cap_count`.
    pub cap: usize,
    /// How many items of the kind were already selected when this one came up.
    pub count: usize,
}

impl TraceEvent {
    /// An event of `stage`, its duration in milliseconds, the items it saw
    /// and an optional message.
    pub fn new(
        stage: PipelineStage,
        duration_ms: f64,
        item_count: usize,
        message: Option<String>,
    ) -> Self {
        Self {
            stage,
            duration_ms,
            item_count,
            message,
        }
    }
}

impl StageTrace {
    /// The trace of `stage`: start, duration, items in and out.
    pub fn new(
        stage: PipelineStage,
        started_at: SystemTime,
        duration: Duration,
        item_count_in: usize,
        item_count_out: usize,
    ) -> Self {
        Self {
            stage,
            started_at,
            duration,
            item_count_in,
            item_count_out,
        }
    }
}

impl OverflowEvent {
    /// An overflow of `tokens_over_budget` tokens by `overflowing_items`
    /// against `budget`.
    pub fn new(
        tokens_over_budget: i64,
        overflowing_items: Vec<ContextItem>,
        budget: ContextBudget,
    ) -> Self {
        Self {
            tokens_over_budget,
            overflowing_items,
            budget,
        }
    }
}

impl CountRequirementShortfall {
    /// `kind` required `required_count` items and got `satisfied_count`.
    pub fn new(kind: ContextKind, required_count: usize, satisfied_count: usize) -> Self {
        Self {
            kind,
            required_count,
            satisfied_count,
        }
    }
}

impl CapExclusion {
    /// Item `index` of `kind` removed: `count` already selected, cap `cap`.
    pub fn new(index: usize, kind: ContextKind, cap: usize, count: usize) -> Self {
        Self {
            index,
            kind,
            cap,
            count,
        }
    }
}
