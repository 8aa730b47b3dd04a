//! The trim's decisions as a [`SelectionReport`]: one item per message.

use std::collections::BTreeMap;

use cupel_core::{
    ContextItem, ContextKind, ExcludedItem, ExclusionReason, IncludedItem, InclusionReason,
    SelectionReport, VariantChoice, VariantReason, score_cmp_desc,
};

use super::run::Unit;
use super::{Decision, InputNote, MessageRow};
use crate::message::Message;

/// The first `max` characters of `m`'s text with every run of whitespace
/// collapsed to one space (and none at either end), `…` appended when cut:
/// the excerpt of `m.text()`, read from the message's parts without
/// building the whole text, so a huge tool output costs `max` characters,
/// not its length. `None` when `m.text()` would be empty.
fn excerpt(m: &Message, max: usize) -> Option<String> {
    let texts = m.content.texts();
    let results = m.content.parts().iter().filter_map(|p| match p {
        crate::message::Part::ToolResult(r) => Some(r.content.texts()),
        _ => None,
    });
    let mut parts = texts.into_iter().chain(results.flatten()).peekable();
    // `m.text()` joins the parts with '\n': it is empty only for no part,
    // or a single empty one.
    let first = parts.peek().copied()?;
    let mut out = String::new();
    let mut count = 0usize;
    let mut pending_space = false;
    let mut seen = 0usize;
    for text in parts {
        seen += 1;
        if !out.is_empty() {
            pending_space = true;
        }
        for c in text.chars() {
            if c.is_whitespace() {
                pending_space |= !out.is_empty();
                continue;
            }
            for ch in [pending_space.then_some(' '), Some(c)]
                .into_iter()
                .flatten()
            {
                if count == max {
                    out.push('…');
                    return Some(out);
                }
                out.push(ch);
                count += 1;
            }
            pending_space = false;
        }
    }
    (seen > 1 || !first.is_empty()).then_some(out)
}

pub(super) fn build_report(
    messages: &[Message],
    rows: &[MessageRow<'_>],
    units: &[Unit],
    notes: &[InputNote],
) -> SelectionReport {
    let n = rows.len().max(1) as f64;
    // Each message's notes, joined (a message may be named by several).
    let mut note_of: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for note in notes {
        for p in note.positions() {
            note_of.entry(p).or_default().push(note.to_string());
        }
    }
    let mut included = Vec::new();
    let mut excluded = Vec::new();
    for r in rows {
        let group = r
            .unit
            .filter(|&u| units[u].len > 1)
            .map(|u| format!("unit-{u}"));
        let notes = note_of.get(&r.position);
        // Content is never empty and the group id is `unit-N`: building cannot fail.
        let Some(item) = item_of(&messages[r.position], r, group.clone(), notes) else {
            continue;
        };
        // Newest scores highest: the order the newest-turns policy fills in.
        let score = (r.position as f64 + 1.0) / n;
        match &r.decision {
            Decision::Recalled { relevance, .. } => included.push(
                IncludedItem::new(item, relevance.score, InclusionReason::Scored)
                    .at_position(r.position),
            ),
            Decision::NotRecalled { relevance, .. } => excluded.push(
                ExcludedItem::new(item, relevance.score, exclusion(&r.decision, group))
                    .at_position(r.position),
            ),
            d if d.is_pinned() => included.push(
                IncludedItem::new(item, 1.0, InclusionReason::Pinned).at_position(r.position),
            ),
            d if d.is_kept() => {
                let mut row =
                    IncludedItem::new(item, score, InclusionReason::Scored).at_position(r.position);
                if let Decision::Shortened {
                    form, tokens_saved, ..
                } = d
                {
                    row.variant = Some(VariantChoice {
                        variant: *form,
                        reason: VariantReason::DidNotFit,
                        tokens_saved: *tokens_saved,
                    });
                }
                included.push(row);
            }
            d => excluded
                .push(ExcludedItem::new(item, score, exclusion(d, group)).at_position(r.position)),
        }
    }
    excluded.sort_by(|a, b| score_cmp_desc(a.score, b.score));
    SelectionReport::new(included, excluded)
}

/// One message as a report item: `#position label: excerpt`, its kind,
/// the tokens sent, its unit as a group, and metadata.
fn item_of(
    m: &Message,
    r: &MessageRow<'_>,
    group: Option<String>,
    notes: Option<&Vec<String>>,
) -> Option<ContextItem> {
    let label = m.label();
    let content = match excerpt(m, 200) {
        None => format!("#{} {label}", r.position),
        Some(text) => format!("#{} {label}: {text}", r.position),
    };
    let kind = if m.role.is_prompt() {
        ContextKind::SYSTEM_PROMPT
    } else if m.is_tool_result() {
        ContextKind::TOOL_OUTPUT
    } else {
        ContextKind::MESSAGE
    };
    let sent = match &r.decision {
        Decision::Shortened { tokens, .. } | Decision::Partial { tokens, .. } => *tokens,
        _ => r.tokens,
    };
    let mut builder = ContextItem::builder(content, sent)
        .kind(kind)
        .pinned(r.decision.is_pinned())
        .group_opt(group)
        .metadata("position", r.position.to_string())
        .metadata("role", m.role.as_str());
    if let Some(notes) = notes {
        builder = builder.metadata("note", notes.join("; "));
    }
    match &r.decision {
        Decision::Partial { .. } => builder = builder.metadata("rewritten", r.reason()),
        Decision::Recalled { relevance, .. } | Decision::NotRecalled { relevance, .. } => {
            builder = builder.metadata("relevance", relevance.to_string());
        }
        _ => {}
    }
    builder.build().ok()
}

/// Why a dropped message is out, as the report's reason.
fn exclusion(d: &Decision, group: Option<String>) -> ExclusionReason {
    match (d, group) {
        (
            Decision::DoesNotFit {
                unit_tokens,
                available_tokens,
                ..
            },
            Some(group),
        ) => ExclusionReason::GroupExcluded {
            group,
            group_tokens: *unit_tokens,
            available_tokens: *available_tokens,
        },
        (
            Decision::DoesNotFit {
                unit_tokens,
                available_tokens,
                ..
            },
            None,
        ) => ExclusionReason::BudgetExceeded {
            item_tokens: *unit_tokens,
            available_tokens: *available_tokens,
        },
        (other, _) => ExclusionReason::Filtered {
            filter_name: filter_name(other).into(),
        },
    }
}

fn filter_name(d: &Decision) -> &'static str {
    match d {
        Decision::OlderThanCut { .. } => "chat:older-than-cut",
        Decision::OrphanResult { .. } => "chat:orphan-tool-result",
        Decision::UnansweredCall { .. } => "chat:unanswered-tool-call",
        Decision::MalformedResult { .. } => "chat:malformed-tool-result",
        Decision::WithOrphan { .. } => "chat:with-orphan",
        Decision::WithoutFollower { .. } => "chat:without-follower",
        Decision::StartRule { .. } => "chat:start-on",
        Decision::EndRule => "chat:end-on",
        Decision::Alternation { .. } => "chat:alternation",
        Decision::NotRecalled { .. } => "chat:not-recalled",
        _ => "chat",
    }
}

#[cfg(test)]
mod excerpt_tests {
    use super::*;

    /// The excerpt by its definition: `m.text()`, words joined by one space,
    /// cut at `max` characters.
    fn by_definition(m: &Message, max: usize) -> Option<String> {
        let text = m.text();
        if text.is_empty() {
            return None;
        }
        let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(if one_line.chars().count() <= max {
            one_line
        } else {
            let mut t: String = one_line.chars().take(max).collect();
            t.push('…');
            t
        })
    }

    #[test]
    fn a_huge_part_costs_only_the_excerpt() {
        let m = Message::user(format!("  start {}", "x ".repeat(1_000_000)));
        // "start" + 1,000,000 × " x": cut after 9 characters ("start x x").
        assert_eq!(excerpt(&m, 9).as_deref(), Some("start x x…"));
        assert_eq!(excerpt(&Message::user(""), 9), None);
        assert_eq!(excerpt(&Message::user(" \n "), 9).as_deref(), Some(""));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn streams_the_excerpt_of_the_definition(
            texts in proptest::collection::vec("[ a\nb\té]{0,12}", 0..4),
            max in 0usize..12,
        ) {
            let m = Message::user(texts.first().cloned().unwrap_or_default());
            proptest::prop_assert_eq!(excerpt(&m, max), by_definition(&m, max));
            let parts: Vec<serde_json::Value> = texts
                .iter()
                .map(|t| serde_json::json!({"type": "text", "text": t}))
                .collect();
            let doc = serde_json::json!([{"role": "user", "content": parts}]).to_string();
            if let Ok(t) = crate::Transcript::parse(&doc) {
                let m = &t.messages()[0];
                proptest::prop_assert_eq!(excerpt(m, max), by_definition(m, max));
            }
        }
    }
}
