//! Diagnostics: events, reasons, the selection report and trace collectors.

mod collector;
mod event;
mod reason;
mod report;

pub use collector::{
    DiagnosticTraceCollector, EventObserver, ExclusionRecord, FanOut, InclusionRecord,
    NullTraceCollector, TraceCollector,
};
pub use event::{
    CapExclusion, CountRequirementShortfall, OverflowEvent, PipelineStage, StageTrace,
    TraceDetailLevel, TraceEvent,
};
pub use reason::{ExclusionReason, InclusionReason};
pub use report::{ExcludedItem, IncludedItem, SelectionReport};
