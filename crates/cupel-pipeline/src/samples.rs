//! Sample inputs: realistic scenarios for demos, examples and your own experiments.
//!
//! [`SUPPORT_CHAT`] is the scenario `cupel demo` runs: a support chat about a
//! smart thermostat that went offline after a firmware update — 31 candidate
//! items (a pinned system prompt, timestamped chat turns, tool outputs,
//! retrieved articles with relevance hints, one retrieved twice, memories, and
//! a broken item with a negative token count) for a 1536-token window with 384
//! tokens kept for the answer. The file is TOML with a `[budget]`, a `[policy]`
//! (the [`PolicyConfig`] schema) and `[[items]]`; every number in it is fixed,
//! so runs are reproducible.

use serde::Deserialize;

use cupel_core::{ContextBudget, ContextItem, CupelError};

use crate::PolicyConfig;

/// The support-chat scenario as TOML text (see the [module docs](self)).
pub const SUPPORT_CHAT: &str = include_str!("samples/support_chat.toml");

/// A parsed sample: budget, policy and candidate items.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The budget.
    pub budget: ContextBudget,
    /// The policy.
    pub policy: PolicyConfig,
    /// The candidate items, in input order.
    pub items: Vec<ContextItem>,
}

#[derive(Deserialize)]
struct SampleFile {
    budget: ContextBudget,
    policy: PolicyConfig,
    items: Vec<ContextItem>,
}

/// Parses [`SUPPORT_CHAT`].
///
/// # Errors
/// Never for the shipped file; [`CupelError::PipelineConfig`] if it were malformed.
///
/// ```
/// let sample = cupel_pipeline::samples::support_chat()?;
/// assert_eq!(sample.items.len(), 31);
/// let pipeline = cupel_pipeline::Pipeline::new(sample.policy.build()?, sample.budget);
/// let window = pipeline.run(&sample.items)?;
/// assert!(window.iter().map(|i| i.tokens()).sum::<i64>() <= 1024);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn support_chat() -> Result<Sample, CupelError> {
    let bad = |e: String| CupelError::PipelineConfig(format!("support-chat sample: {e}"));
    let de = toml::de::Deserializer::parse(SUPPORT_CHAT).map_err(|e| bad(e.to_string()))?;
    let f: SampleFile = cupel_core::strict::deserialize(de).map_err(|e| {
        let e = e.into_config_error(
            "sample",
            |_| Vec::new(),
            |e| crate::config::toml_located(SUPPORT_CHAT, e),
        );
        bad(e.to_string())
    })?;
    f.policy.check_keys()?;
    Ok(Sample {
        budget: f.budget,
        policy: f.policy,
        items: f.items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_parses_strictly_and_matches_its_description() {
        let s = support_chat().unwrap();
        assert_eq!(s.items.len(), 31);
        assert_eq!(
            (
                s.budget.max_tokens(),
                s.budget.target_tokens(),
                s.budget.output_reserve()
            ),
            (1536, 1024, 384)
        );
        assert_eq!(s.items.iter().filter(|i| i.pinned()).count(), 1);
        assert_eq!(s.items.iter().filter(|i| i.tokens() < 0).count(), 1);
        // Parsed strictly: no unknown or misplaced key anywhere in the file.
        s.policy.build().unwrap();
    }
}
