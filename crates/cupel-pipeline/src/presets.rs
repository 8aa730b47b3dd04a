//! Named presets: ready-made [`PolicyConfig`]s for common intents.
//!
//! Every preset uses [`OverflowStrategy::Throw`](cupel_core::OverflowStrategy::Throw)
//! and deduplicates, except `newest-turns` and `chat` (a conversation may
//! repeat itself: "yes", "thanks"). Weights are relative (a composite
//! normalises them). How each fills the budget:
//!
//! * **contiguous** (`newest-turns`, `chat`): newest first by input position,
//!   stopping at the first item (or atomic group) that does not fit, so the
//!   window is the conversation's most recent stretch with no holes;
//! * **greedy**: by score per token, skipping what does not fit and going on
//!   with smaller items (dense, may leave holes);
//! * **knapsack**: the best total score that fits (optimal packing);
//! * **score order** (`recall`): highest score first, skipping what does not
//!   fit (the best-scoring items, whatever their size).
//!
//! | name | scorers (weight) | slicer | placer | for |
//! | --- | --- | --- | --- | --- |
//! | `newest-turns` | position 1 | contiguous | chronological | conversations: the newest turns that fit, no holes, no timestamps needed |
//! | `chat` | position 1 | contiguous | chronological | the same policy as `newest-turns` (the name conversations look for) |
//! | `recent-dense` | recency 3, kind 1 | greedy | chronological | timestamped items: recent and cheap ones first, densely (the policy `chat` had until 0.1) |
//! | `code-review` | kind 2, priority 2, recency 1 | greedy | chronological | reviews where file kind and caller priority matter most |
//! | `rag` | reflexive 3, kind 1 | greedy | u-shaped | retrieval answers: the retriever's relevance hint drives selection; best at the edges |
//! | `document-qa` | kind 2, reflexive 2, priority 1 | knapsack (bucket 100) | u-shaped | long documents competing for a tight budget: optimal packing |
//! | `tool-use` | kind 2, recency 2, priority 1 | greedy | chronological | agent tool loops: fresh tool outputs and instructions |
//! | `long-running` | recency 3, frequency 1, kind 1 | greedy | chronological | long sessions: recency plus items that share topics with many others |
//! | `debugging` | priority 3, kind 2, recency 1 | greedy | chronological | incident work: caller-flagged priority first |
//! | `recall` | bm25 1 (feedback 0.3, neighbours 0.5 and group weight 0.2 in a `session`), recency 0.05 | score order | chronological | question answering over long histories: the turns most relevant to the run's query |

use cupel_core::CupelError;

use crate::config::{
    Bm25ScorerConfig, KnapsackSlicerConfig, PolicyConfig, ScorerConfig, SlicerConfig,
};
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

fn newest_turns() -> PolicyConfig {
    let mut c = config(
        &[(ScorerType::Position, 1.0)],
        SlicerConfig::new(SlicerType::Contiguous),
        PlacerType::Chronological,
    );
    c.deduplication = false;
    c
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
        variants: None,
    }
}

/// The `recall` preset: BM25 (k1 1.2, b 0.75, stemming, feedback
/// [`Bm25Feedback::STANDARD`](cupel_scorers::Bm25Feedback::STANDARD),
/// neighbours 0.5 and group weight 0.2 within the `session` metadata
/// group) weight 1, recency weight 0.05.
fn recall() -> PolicyConfig {
    let bm25 = ScorerConfig::Bm25(Bm25ScorerConfig {
        neighbours: Some(0.5),
        group_key: Some("session".to_owned()),
        feedback: Some(cupel_scorers::Bm25Feedback::STANDARD.weight),
        group_weight: Some(0.2),
        ..Bm25ScorerConfig::default()
    });
    let mut c = config(
        &[],
        SlicerConfig::new(SlicerType::ScoreOrder),
        PlacerType::Chronological,
    );
    c.scorers = vec![bm25, ScorerConfig::new(ScorerType::Recency).weight(0.05)];
    c.deduplication = false;
    c
}

/// All presets, in documentation order.
pub fn presets() -> Vec<Preset> {
    use PlacerType::{Chronological, UShaped};
    use ScorerType::{Frequency, Kind, Priority, Recency, Reflexive};
    let greedy = || SlicerConfig::new(SlicerType::Greedy);
    let knapsack = SlicerConfig::Knapsack(KnapsackSlicerConfig {
        bucket_size: Some(100),
        ..KnapsackSlicerConfig::default()
    });
    vec![
        Preset {
            name: "newest-turns",
            description: "Conversations: the newest turns that fit, by input position (no timestamps needed); fills newest first and stops at the first turn that does not fit, so nothing older enters (no holes); no deduplication; reading order.",
            config: newest_turns(),
        },
        Preset {
            name: "chat",
            description: "Conversations: the same policy as `newest-turns` (newest first by position, contiguous, no deduplication).",
            config: newest_turns(),
        },
        Preset {
            name: "recent-dense",
            description: "Timestamped items: recency and kind, filled greedily by score per token (dense: skips what does not fit and keeps older, smaller items); reading order.",
            config: config(&[(Recency, 3.0), (Kind, 1.0)], greedy(), Chronological),
        },
        Preset {
            name: "code-review",
            description: "Code review: item kind and caller priority matter most, then recency; filled greedily by score per token.",
            config: config(
                &[(Kind, 2.0), (Priority, 2.0), (Recency, 1.0)],
                greedy(),
                Chronological,
            ),
        },
        Preset {
            name: "rag",
            description: "Retrieval-augmented answers: the relevance hint drives selection, filled greedily by score per token; best items at the edges.",
            config: config(&[(Reflexive, 3.0), (Kind, 1.0)], greedy(), UShaped),
        },
        Preset {
            name: "document-qa",
            description: "Questions over long documents: kind and relevance, filled by optimal knapsack packing of a tight budget; best items at the edges.",
            config: config(
                &[(Kind, 2.0), (Reflexive, 2.0), (Priority, 1.0)],
                knapsack,
                UShaped,
            ),
        },
        Preset {
            name: "tool-use",
            description: "Agent tool loops: fresh tool outputs and instructions first, filled greedily by score per token.",
            config: config(
                &[(Kind, 2.0), (Recency, 2.0), (Priority, 1.0)],
                greedy(),
                Chronological,
            ),
        },
        Preset {
            name: "long-running",
            description: "Long sessions: recency plus items that share tags with many others, filled greedily by score per token.",
            config: config(
                &[(Recency, 3.0), (Frequency, 1.0), (Kind, 1.0)],
                greedy(),
                Chronological,
            ),
        },
        Preset {
            name: "debugging",
            description: "Incident and debugging work: caller-flagged priority first, filled greedily by score per token.",
            config: config(
                &[(Priority, 3.0), (Kind, 2.0), (Recency, 1.0)],
                greedy(),
                Chronological,
            ),
        },
        Preset {
            name: "recall",
            description: "Query-aware recall: BM25 relevance to the run's query (stemmed, expanded by pseudo-relevance feedback, a hit lifting its previous and next turn of the same `session` to half its score, a turn of a session about the query lifted by a group prior of 0.2), a small recency tie-break; the best-scoring turns that fit (score order, skipping what does not fit); reading order.",
            config: recall(),
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
