//! `cupel demo`: the embedded support-chat scenario, selected and explained.

use crate::Durations;
use crate::error::CliError;
use crate::input::{self, Format, RunSettings, Source};
use crate::render;

/// The scenario, in the INPUT format (`cupel demo --print-input` prints it).
pub(crate) const SCENARIO: &str = cupel_pipeline::samples::SUPPORT_CHAT;

const INTRO: &str = "\
Cupel demo: a support chat about a thermostat that went offline after a
firmware update. 31 candidate items (a pinned system prompt, chat turns, tool
outputs, retrieved articles, memories, a duplicate and a broken item) compete
for a 1536-token window with 384 tokens kept free for the answer. Each
exchange (a user turn, the tool outputs it prompted, the reply) is an atomic
group: kept or dropped whole, so the window reads as a conversation.
";

const OUTRO: &str = "\
Try it on your own data: `cupel demo --print-input > chat.toml`, edit, then
`cupel explain chat.toml` (or `--policy rag`, `--target-tokens 800`, ...).

Ask it what-if questions:
  cupel sweep chat.toml --from 512 --to 1536 --points 9 --plot sweep.svg
  cupel marginal chat.toml --slack 200           # what 200 tokens less loses
  cupel min-budget chat.toml --item 12 --exact   # the budget #12 needs
  cupel compare chat.toml --policy chat --policy rag
";

/// Runs the scenario: the window, then the explanation (or the JSON report,
/// when `json` says how to write its durations).
pub(crate) fn run(print_input: bool, json: Option<Durations>) -> Result<String, CliError> {
    if print_input {
        return Ok(SCENARIO.to_string());
    }
    let src = Source {
        name: "demo.toml".into(),
        text: SCENARIO.to_string(),
        format: Format::Toml,
    };
    let prepared = input::prepare(&src, &RunSettings::default(), None)?;
    let report = crate::dry_run(&prepared)?;
    if let Some(durations) = json {
        return crate::json(report, durations);
    }
    let mut out = String::from(INTRO);
    out.push('\n');
    out.push_str(&render::header(&prepared));
    out.push('\n');
    out.push_str(&render::window(&prepared, &report));
    out.push('\n');
    out.push_str(render::EXPLAIN_CAPTION);
    out.push_str(&render::explain_table(&prepared, &report));
    out.push('\n');
    out.push_str(&render::totals(&prepared, &report));
    out.push('\n');
    out.push_str(OUTRO);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::ContextItem;

    fn scenario() -> input::Prepared {
        let src = Source {
            name: "demo.toml".into(),
            text: SCENARIO.to_string(),
            format: Format::Toml,
        };
        input::prepare(&src, &RunSettings::default(), None).unwrap()
    }

    #[test]
    fn the_scenario_has_what_the_intro_promises() {
        let p = scenario();
        assert_eq!(p.items.len(), 31);
        assert_eq!(p.items.iter().filter(|i| i.pinned()).count(), 1);
        assert!(p.items.iter().any(|i| i.tokens() < 0));
        let contents: Vec<&str> = p.items.iter().map(ContextItem::content).collect();
        let dupes = contents
            .iter()
            .enumerate()
            .filter(|(i, c)| contents[..*i].contains(c))
            .count();
        assert_eq!(dupes, 1);
        assert_eq!(
            (p.budget.max_tokens(), p.budget.output_reserve()),
            (1536, 384)
        );
    }

    /// The demo's token counts are the real cl100k_base counts of the contents.
    #[cfg(feature = "tiktoken")]
    #[test]
    fn token_counts_are_cl100k_base_counts() {
        use cupel_core::TokenCounter;
        let c = crate::tokens::TiktokenCounter::new("cl100k_base").unwrap();
        for (i, item) in scenario().items.iter().enumerate() {
            if item.tokens() >= 0 {
                assert_eq!(item.tokens(), c.count_tokens(item.content()), "items[{i}]");
            }
        }
    }

    #[test]
    fn the_demo_is_deterministic() {
        assert_eq!(run(false, None).unwrap(), run(false, None).unwrap());
        let zeroed = Some(Durations::Zeroed);
        assert_eq!(run(false, zeroed).unwrap(), run(false, zeroed).unwrap());
    }
}
