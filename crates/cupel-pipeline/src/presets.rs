//! Named presets: ready-made [`PolicyConfig`]s for common intents.
//!
//! Every preset deduplicates and uses [`OverflowStrategy::Throw`](cupel_core::OverflowStrategy::Throw).
//! Weights are relative (a composite normalises them).
//!
//! | name | scorers (weight) | slicer | placer | for |
//! | --- | --- | --- | --- | --- |
//! | `chat` | recency 3, kind 1 | greedy | chronological | conversations: recent turns first, in reading order |
//! | `code-review` | kind 2, priority 2, recency 1 | greedy | chronological | reviews where file kind and caller priority matter most |
//! | `rag` | reflexive 3, kind 1 | greedy | u-shaped | retrieval answers: the retriever's relevance hint drives selection; best at the edges |
//! | `document-qa` | kind 2, reflexive 2, priority 1 | knapsack (bucket 100) | u-shaped | long documents competing for a tight budget: optimal packing |
//! | `tool-use` | kind 2, recency 2, priority 1 | greedy | chronological | agent tool loops: fresh tool outputs and instructions |
//! | `long-running` | recency 3, frequency 1, kind 1 | greedy | chronological | long sessions: recency plus items that share topics with many others |
//! | `debugging` | priority 3, kind 2, recency 1 | greedy | chronological | incident work: caller-flagged priority first |

use cupel_core::CupelError;

use crate::config::{PolicyConfig, ScorerConfig, SlicerConfig};
use crate::names::{PlacerType, ScorerType, SlicerType};

/// A named preset: its name, a one-line purpose, and its configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset {
    /// The lookup name (kebab-case).
    pub name: &'static str,
    /// What the preset is for.
    pub description: &'static str,
    /// The policy it configures.
    pub config: PolicyConfig,
}

fn config(scorers: &[(ScorerType, f64)], slicer: SlicerConfig, placer: PlacerType) -> PolicyConfig {
    PolicyConfig {
        scorers: scorers
            .iter()
            .map(|&(t, w)| ScorerConfig::new(t).weight(w))
            .collect(),
        slicer,
        placer: placer.into(),
        placer_params: None,
        deduplication: true,
        overflow_strategy: Default::default(),
    }
}

/// All presets, in documentation order.
pub fn presets() -> Vec<Preset> {
    use PlacerType::{Chronological, UShaped};
    use ScorerType::{Frequency, Kind, Priority, Recency, Reflexive};
    let greedy = || SlicerConfig::new(SlicerType::Greedy);
    let mut knapsack = SlicerConfig::new(SlicerType::Knapsack);
    knapsack.bucket_size = Some(100);
    vec![
        Preset {
            name: "chat",
            description: "Conversations: recent turns first, kept in reading order.",
            config: config(&[(Recency, 3.0), (Kind, 1.0)], greedy(), Chronological),
        },
        Preset {
            name: "code-review",
            description: "Code review: item kind and caller priority matter most, then recency.",
            config: config(
                &[(Kind, 2.0), (Priority, 2.0), (Recency, 1.0)],
                greedy(),
                Chronological,
            ),
        },
        Preset {
            name: "rag",
            description: "Retrieval-augmented answers: the relevance hint drives selection; best items at the edges.",
            config: config(&[(Reflexive, 3.0), (Kind, 1.0)], greedy(), UShaped),
        },
        Preset {
            name: "document-qa",
            description: "Questions over long documents: optimal knapsack packing of a tight budget.",
            config: config(
                &[(Kind, 2.0), (Reflexive, 2.0), (Priority, 1.0)],
                knapsack,
                UShaped,
            ),
        },
        Preset {
            name: "tool-use",
            description: "Agent tool loops: fresh tool outputs and instructions first.",
            config: config(
                &[(Kind, 2.0), (Recency, 2.0), (Priority, 1.0)],
                greedy(),
                Chronological,
            ),
        },
        Preset {
            name: "long-running",
            description: "Long sessions: recency plus items that share tags with many others.",
            config: config(
                &[(Recency, 3.0), (Frequency, 1.0), (Kind, 1.0)],
                greedy(),
                Chronological,
            ),
        },
        Preset {
            name: "debugging",
            description: "Incident and debugging work: caller-flagged priority first.",
            config: config(
                &[(Priority, 3.0), (Kind, 2.0), (Recency, 1.0)],
                greedy(),
                Chronological,
            ),
        },
    ]
}

/// Looks a preset up by name, ignoring ASCII case (and `_` vs `-`).
///
/// # Errors
/// [`CupelError::PipelineConfig`] listing the known names.
///
/// ```
/// let chat = cupel_pipeline::preset("Chat")?;
/// assert_eq!(chat.name, "chat");
/// assert!(cupel_pipeline::preset("nope").is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn preset(name: &str) -> Result<Preset, CupelError> {
    let wanted = name.trim().to_ascii_lowercase().replace('_', "-");
    let all = presets();
    let names: Vec<&str> = all.iter().map(|p| p.name).collect();
    let joined = names.join(", ");
    all.into_iter().find(|p| p.name == wanted).ok_or_else(|| {
        CupelError::PipelineConfig(format!(
            "unknown preset `{name}` (expected one of: {joined})"
        ))
    })
}
