//! Skeleton facade: re-exports arrive with the pipeline.
pub use cupel_core as core;
