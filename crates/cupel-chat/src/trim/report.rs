//! The trim's decisions as a [`SelectionReport`]: one item per message.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::OnceLock;

use cupel_core::{
    ContextItem, ContextKind, ExcludedItem, ExclusionReason, IncludedItem, InclusionReason,
    SelectionReport, VariantChoice, VariantReason, score_cmp_desc,
};

use super::run::Unit;
use super::{Decision, InputNote, MessageRow};
use crate::message::{Content, Message, Part};

/// The texts `m.text()` joins, in order: the content's own texts, then
/// those of its tool results. Allocates nothing.
fn text_parts(m: &Message) -> impl Iterator<Item = &str> {
    let results = m.content.parts().iter().filter_map(|p| match p {
        Part::ToolResult(r) => Some(content_texts(&r.content)),
        _ => None,
    });
    content_texts(&m.content).chain(results.flatten())
}

/// [`Content::texts`](crate::message::Content::texts) without the vector.
fn content_texts(c: &Content) -> impl Iterator<Item = &str> {
    let (whole, parts) = match c {
        Content::Text(t) => (Some(t.as_str()), &[][..]),
        Content::Parts(p) => (None, &p[..]),
        Content::Absent | Content::Null => (None, &[][..]),
    };
    whole
        .into_iter()
        .chain(parts.iter().filter_map(|p| match p {
            Part::Text { text, .. } => Some(text.as_str()),
            _ => None,
        }))
}

/// Appends to `out` the first `max` characters of `m`'s text with every
/// run of whitespace collapsed to one space (and none at either end), `…`
/// appended when cut: the excerpt of `m.text()`, read from the message's
/// parts without building the whole text, so a huge tool output costs
/// `max` characters, not its length. Returns `false`, having appended
/// nothing, when `m.text()` would be empty.
fn write_excerpt(m: &Message, max: usize, out: &mut String) -> bool {
    if let Content::Text(text) = &m.content
        && is_one_line(text, max)
    {
        // The only part, and already its own excerpt.
        out.push_str(text);
        return true;
    }
    let mut parts = text_parts(m).peekable();
    // `m.text()` joins the parts with '\n': it is empty only for no part,
    // or a single empty one.
    let Some(first) = parts.peek().copied() else {
        return false;
    };
    let start = out.len();
    let mut count = 0usize;
    let mut seen = 0usize;
    for text in parts {
        seen += 1;
        for word in text.split(char::is_whitespace).filter(|w| !w.is_empty()) {
            if out.len() > start {
                if count == max {
                    out.push('…');
                    return true;
                }
                out.push(' ');
                count += 1;
            }
            let len = if word.is_ascii() {
                word.len()
            } else {
                word.chars().count()
            };
            if count + len <= max {
                out.push_str(word);
                count += len;
            } else {
                out.extend(word.chars().take(max - count));
                out.push('…');
                return true;
            }
        }
    }
    seen > 1 || !first.is_empty()
}

/// Whether `text` is its own excerpt of at most `max` characters: not
/// empty, ASCII, at most `max` bytes, words separated by single spaces and
/// no whitespace at either end (ASCII whitespace as `char::is_whitespace`
/// has it: space, tab, line feed, vertical tab, form feed, carriage return).
fn is_one_line(text: &str, max: usize) -> bool {
    if text.len() > max {
        return false;
    }
    // At the start, a space would be a leading one.
    let mut after_space = true;
    for &c in text.as_bytes() {
        if c == b' ' {
            if after_space {
                return false;
            }
            after_space = true;
        } else if !c.is_ascii() || matches!(c, b'\t'..=b'\r') {
            return false;
        } else {
            after_space = false;
        }
    }
    // Neither empty nor ending in a space.
    !after_space
}

/// [`write_excerpt`] into a string of its own (`None` when `m.text()` is empty).
#[cfg(test)]
fn excerpt(m: &Message, max: usize) -> Option<String> {
    let mut out = String::new();
    write_excerpt(m, max, &mut out).then_some(out)
}

/// Each message's notes, joined with `; ` (a message may be named by several).
fn notes_by_position(notes: &[InputNote]) -> BTreeMap<usize, String> {
    let mut note_of: BTreeMap<usize, String> = BTreeMap::new();
    for note in notes {
        for p in note.positions() {
            let joined = note_of.entry(p).or_default();
            if !joined.is_empty() {
                joined.push_str("; ");
            }
            let _ = write!(joined, "{note}");
        }
    }
    note_of
}

/// Whether [`build_report`] lists the row among the included items.
fn is_included(d: &Decision) -> bool {
    match d {
        Decision::Recalled { .. } => true,
        Decision::NotRecalled { .. } => false,
        d => d.is_pinned() || d.is_kept(),
    }
}

/// A trim's decisions as a [`SelectionReport`] (one item per message),
/// built the first time it is read.
///
/// The trim itself only records each message's [`Decision`] (its
/// [`rows`](super::Trimmed::rows)); turning them into report items (an
/// excerpt of each message, its metadata, its group) costs several times
/// the trim, so it waits until someone reads the report. It dereferences
/// to the [`SelectionReport`], so `out.report.included` and
/// `&*out.report` read it as a field would; [`into_report`](Self::into_report)
/// takes it. It holds its own copy of the rows: editing
/// [`Trimmed::rows`](super::Trimmed::rows) afterwards does not change it.
///
/// ```
/// use cupel_chat::{Message, Trim, trim};
/// let messages = vec![Message::user("What is 2+2?"), Message::assistant("4")];
/// let out = trim(&messages, &Trim::openai(100))?;
/// // Built here, on first read.
/// assert_eq!(out.report.included.len(), 2);
/// assert_eq!(out.report.included[0].item.content(), "#0 user: What is 2+2?");
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
#[derive(Clone, Default)]
pub struct TrimReport<'a> {
    /// The rows, each `unit` kept only when its unit holds several
    /// messages (the report's atomic group).
    rows: Vec<MessageRow<'a>>,
    notes: Vec<InputNote>,
    built: OnceLock<SelectionReport>,
}

impl<'a> TrimReport<'a> {
    /// The report of `rows`, built when first read.
    pub(super) fn new(rows: &[MessageRow<'a>], units: &[Unit], notes: &[InputNote]) -> Self {
        let rows = rows
            .iter()
            .map(|r| MessageRow {
                unit: r.unit.filter(|&u| units.get(u).is_some_and(|u| u.len > 1)),
                ..r.clone()
            })
            .collect();
        TrimReport {
            rows,
            notes: notes.to_vec(),
            built: OnceLock::new(),
        }
    }

    /// An empty report, as [`Trim::report`](super::Trim::report)`(false)` gives.
    pub(super) fn empty() -> Self {
        TrimReport {
            rows: Vec::new(),
            notes: Vec::new(),
            built: OnceLock::from(SelectionReport::default()),
        }
    }

    /// The report (built now if not yet).
    pub fn get(&self) -> &SelectionReport {
        self.built
            .get_or_init(|| build_report(&self.rows, &self.notes))
    }

    /// The report, owned.
    pub fn into_report(self) -> SelectionReport {
        let TrimReport { rows, notes, built } = self;
        built
            .into_inner()
            .unwrap_or_else(|| build_report(&rows, &notes))
    }
}

impl std::ops::Deref for TrimReport<'_> {
    type Target = SelectionReport;

    fn deref(&self) -> &SelectionReport {
        self.get()
    }
}

impl fmt::Debug for TrimReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.get(), f)
    }
}

impl From<TrimReport<'_>> for SelectionReport {
    fn from(r: TrimReport<'_>) -> Self {
        r.into_report()
    }
}

/// The report of `rows` (each `unit` already kept only for a group).
fn build_report(rows: &[MessageRow<'_>], notes: &[InputNote]) -> SelectionReport {
    let n = rows.len().max(1) as f64;
    let note_of = notes_by_position(notes);
    let kept = rows.iter().filter(|r| is_included(&r.decision)).count();
    let mut included = Vec::with_capacity(kept);
    let mut excluded = Vec::with_capacity(rows.len() - kept);
    // One buffer for every item's content: each item then allocates its
    // content once, at its exact length.
    let mut buf = String::new();
    for r in rows {
        let grouped = r.unit;
        let note = note_of.get(&r.position).map(String::as_str);
        // Content is never empty and the group id is `unit-N`: building cannot fail.
        let Some(item) = item_of(r.message, r, grouped, note, &mut buf) else {
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
                ExcludedItem::new(item, relevance.score, exclusion(&r.decision, grouped))
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
            d => excluded.push(
                ExcludedItem::new(item, score, exclusion(d, grouped)).at_position(r.position),
            ),
        }
    }
    sort_by_score_desc(&mut excluded);
    SelectionReport::new(included, excluded)
}

/// Sorts `excluded` by score descending, stably. Input order is score
/// ascending (newest scores highest) unless relevance reorders it: a
/// strictly ascending list (no ties) is reversed in place, a descending one
/// left as it is, and only another order sorted (the sort would find the
/// same runs, but first allocate a buffer as large as the list).
fn sort_by_score_desc(excluded: &mut [ExcludedItem]) {
    let order = |w: &[ExcludedItem]| score_cmp_desc(w[0].score, w[1].score);
    if excluded.windows(2).all(|w| order(w) != Ordering::Greater) {
        return;
    }
    if excluded.windows(2).all(|w| order(w) == Ordering::Greater) {
        excluded.reverse();
        return;
    }
    excluded.sort_by(|a, b| score_cmp_desc(a.score, b.score));
}

/// Appends `n` in decimal, as `Display` writes it, without the formatter.
fn push_decimal(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[i..].iter().map(|&d| char::from(d)));
}

/// The group id of unit `u`: `unit-N`.
fn unit_group(u: usize) -> String {
    let mut id = String::with_capacity(8);
    id.push_str("unit-");
    push_decimal(&mut id, u);
    id
}

/// One message as a report item: `#position label: excerpt`, its kind,
/// the tokens sent, its unit as a group, and metadata.
fn item_of(
    m: &Message,
    r: &MessageRow<'_>,
    unit: Option<usize>,
    note: Option<&str>,
    buf: &mut String,
) -> Option<ContextItem> {
    buf.clear();
    buf.push('#');
    push_decimal(buf, r.position);
    // The `position` metadata is the number just written.
    let digits = buf.len();
    buf.push(' ');
    m.write_label(buf);
    let bare = buf.len();
    buf.push_str(": ");
    if !write_excerpt(m, 200, buf) {
        buf.truncate(bare);
    }
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
    let mut builder = ContextItem::builder(buf.as_str(), sent)
        .kind(kind)
        .pinned(r.decision.is_pinned())
        .group_opt(unit.map(unit_group));
    // In key order (`note`, `position`, `relevance` or `rewritten`,
    // `role`), each appended without a search; short keys and values are
    // stored inline, allocating nothing per entry.
    if let Some(note) = note {
        builder = builder.metadata_str("note", note);
    }
    builder = builder.metadata_str("position", &buf[1..digits]);
    match &r.decision {
        Decision::Partial { .. } => builder = builder.metadata("rewritten", r.reason()),
        Decision::Recalled { relevance, .. } | Decision::NotRecalled { relevance, .. } => {
            builder = builder.metadata("relevance", relevance.to_string());
        }
        _ => {}
    }
    builder.metadata_str("role", m.role.as_str()).build().ok()
}

/// Why a dropped message is out, as the report's reason.
fn exclusion(d: &Decision, unit: Option<usize>) -> ExclusionReason {
    match (d, unit) {
        (
            Decision::DoesNotFit {
                unit_tokens,
                available_tokens,
                ..
            },
            Some(u),
        ) => ExclusionReason::GroupExcluded {
            group: unit_group(u),
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

    #[test]
    fn a_one_line_text_is_its_own_excerpt() {
        // Single spaces between words, ASCII, at most `max` bytes: as it is.
        assert_eq!(
            excerpt(&Message::user("ab cd"), 5).as_deref(),
            Some("ab cd")
        );
        // 6 characters over a maximum of 5: cut after "ab cd".
        assert_eq!(
            excerpt(&Message::user("ab cde"), 5).as_deref(),
            Some("ab cd…")
        );
        // Vertical tab and form feed are whitespace (`char::is_whitespace`).
        assert_eq!(
            excerpt(&Message::user("a\x0bb\x0cc"), 9).as_deref(),
            Some("a b c")
        );
        assert_eq!(excerpt(&Message::user("a  b "), 9).as_deref(), Some("a b"));
        assert!(!is_one_line("", 9) && !is_one_line(" a", 9) && !is_one_line("é", 9));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn one_line_texts_give_the_excerpt_of_the_definition(
            text in "[ ab\t\n\x0b\x0c\r\x1céx]{0,14}",
            max in 0usize..16,
        ) {
            let m = Message::user(text);
            proptest::prop_assert_eq!(excerpt(&m, max), by_definition(&m, max));
        }

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
