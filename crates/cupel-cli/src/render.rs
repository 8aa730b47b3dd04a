//! Text output: the window, the explanation table, the budget bar, presets.
//!
//! Everything is laid out for an 80-column terminal: long contents are cut
//! with `…`, long lists wrap. Widths are display columns (Unicode's display
//! width via `unicode-width`: an East Asian wide character takes two, a
//! combining mark none), not characters; see [`width`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use cupel_core::{ContextItem, ExclusionReason, IncludedItem, InclusionReason, SelectionReport};
use cupel_pipeline::{CurveConfig, InnerScorer, PolicyConfig, ScorerConfig, SlicerConfig};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::input::{PolicyOrigin, Prepared};

/// The terminal width everything is laid out for.
pub(crate) const WIDTH: usize = 80;

/// Width of the budget bar between its brackets.
const BAR_WIDTH: usize = 60;

/// Columns `s` takes on a terminal: East Asian wide characters count two,
/// combining marks and zero-width characters none (Unicode's display width).
pub(crate) fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Columns one character takes (control characters: none; they never reach
/// the output, see [`clip`]).
fn char_width(c: char) -> usize {
    UnicodeWidthChar::width(c).unwrap_or(0)
}

/// `s` followed by spaces up to `columns` display columns (left-aligned
/// cell); `format!("{:<w$}")` pads by characters, which misaligns wide text.
pub(crate) fn pad(s: &str, columns: usize) -> String {
    let mut out = String::with_capacity(s.len() + columns);
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', columns.saturating_sub(width(s))));
    out
}

/// Collapses whitespace runs to one space, blanks out other control
/// characters (no terminal escapes from item contents), and cuts to `width`
/// display columns, ending with `…` when something was cut.
///
/// Reads only as far into `s` as the clipped text needs (about `width`
/// characters after the leading blanks and collapsed runs), so showing 80
/// columns of a 100 MB item costs 80 characters, not a split of the whole
/// content (issue 31). Columns are display columns (issue 27): a CJK
/// character takes two, so a clipped cell never overflows its column.
pub(crate) fn clip(s: &str, width: usize) -> String {
    let blank = |c: char| c.is_whitespace() || c.is_control();
    let mut out = String::new();
    let mut used = 0usize;
    let mut gap = false;
    for c in s.chars() {
        if blank(c) {
            gap = used > 0;
            continue;
        }
        let extra = usize::from(gap);
        if used + extra + char_width(c) > width {
            // Something is cut: end on `…` within `width` columns.
            let mut cut = String::new();
            let mut cut_used = 0usize;
            for k in out.chars() {
                let w = char_width(k);
                if cut_used + w + 1 > width {
                    break;
                }
                cut.push(k);
                cut_used += w;
            }
            cut.truncate(cut.trim_end().len());
            if width > 0 {
                cut.push('…');
            }
            return cut;
        }
        if gap {
            out.push(' ');
            gap = false;
        }
        out.push(c);
        used += extra + char_width(c);
    }
    out
}

/// Greedy word wrap of `text` to lines of at most `width` display columns.
///
/// Control characters other than [`GLUE`] separate words like whitespace, so
/// no terminal escape in a kind or file name reaches the output.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut used = 0usize;
    let words = text
        .split(|c: char| c.is_whitespace() || (c.is_control() && c != GLUE))
        .filter(|w| !w.is_empty());
    for word in words {
        let w = self::width(word);
        let need = used + usize::from(!line.is_empty()) + w;
        if !line.is_empty() && need > width {
            lines.push(std::mem::take(&mut line));
            used = 0;
        }
        if !line.is_empty() {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += w;
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `label` followed by `text` wrapped under it (continuation lines indented).
pub(crate) fn labelled(out: &mut String, label: &str, label_width: usize, text: &str) {
    let lines = wrap(text, WIDTH.saturating_sub(label_width).max(20));
    if lines.is_empty() {
        let _ = writeln!(out, "{}", label.trim_end());
    }
    for (i, l) in lines.iter().enumerate() {
        let lab = if i == 0 { label } else { "" };
        let l = l.replace(GLUE, " ");
        let _ = writeln!(out, "{lab:<label_width$}{l}");
    }
}

/// A score with three decimals; `NaN` as such, `-0.0` as `0.000`.
pub(crate) fn fmt_score(s: f64) -> String {
    if s.is_nan() {
        "NaN".into()
    } else if s == 0.0 {
        "0.000".into()
    } else {
        format!("{s:.3}")
    }
}

/// `part / whole` in percent with one decimal; 0.0 when `whole <= 0`.
pub(crate) fn pct(part: i128, whole: i128) -> String {
    if whole <= 0 {
        return "0.0%".into();
    }
    // Integer arithmetic in tenths of a percent, rounded half up: no float drift.
    let tenths = (part * 1000 * 2 + whole) / (whole * 2);
    format!("{}.{}%", tenths / 10, (tenths % 10).abs())
}

// ----- policy description ---------------------------------------------------------

fn weight(w: f64) -> String {
    format!("{w}")
}

/// `(name, detail)`: `("decay", Some("half-life 900s"))`.
fn scorer_parts(s: &ScorerConfig) -> (String, Option<String>) {
    let detail = match s {
        ScorerConfig::Decay(d) => d.curve.as_ref().map(|c| match c {
            CurveConfig::Exponential { half_life_secs } => {
                format!("half-life {half_life_secs}s")
            }
            CurveConfig::Window { max_age_secs } => format!("window {max_age_secs}s"),
            CurveConfig::Step { windows } => format!("{} steps", windows.len()),
            _ => "curve".to_owned(),
        }),
        ScorerConfig::Kind(k) => k
            .weights
            .as_ref()
            .map(|w| format!("{} custom weights", w.len())),
        ScorerConfig::Tag(t) => t.tag_weights.as_ref().map(|w| format!("{} tags", w.len())),
        ScorerConfig::MetadataKey(m) => match (&m.key, &m.value) {
            (Some(k), Some(v)) => Some(format!("{k}={v}")),
            _ => None,
        },
        ScorerConfig::Scaled(c) => c.inner_scorer.as_ref().map(|i| match i {
            InnerScorer::Name(t) => t.as_str().to_string(),
            InnerScorer::Config(c) => scorer_label(c),
        }),
        ScorerConfig::Composite(c) => c.children.as_ref().map(|c| scorers_text(c)),
        ScorerConfig::Hybrid(h) => h.children.as_ref().map(|c| {
            let fusion = match h.fusion {
                Some(cupel_pipeline::FusionConfig::Weighted) => "weighted".to_string(),
                _ => format!("rrf k {}", h.rrf_k.unwrap_or(60.0)),
            };
            format!("{fusion}: {}", scorers_text(c))
        }),
        _ => None,
    };
    (s.scorer_type().to_string(), detail)
}

fn scorer_label(s: &ScorerConfig) -> String {
    match scorer_parts(s) {
        (name, Some(d)) => format!("{name} ({d})"),
        (name, None) => name,
    }
}

/// `recency 3, kind 1` (a weighted composite) or `reflexive` (one scorer).
pub(crate) fn scorers_text(scorers: &[ScorerConfig]) -> String {
    match scorers {
        [] => "none".into(),
        [only] => scorer_label(only),
        many => many
            .iter()
            .map(|s| match scorer_parts(s) {
                (name, Some(d)) => format!("{name} {} ({d})", weight(s.weight_value())),
                (name, None) => format!("{name} {}", weight(s.weight_value())),
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// `greedy`, `knapsack (bucket 100)`, `quota (Memory 10-30%; inner greedy)`, ...
pub(crate) fn slicer_text(cfg: &PolicyConfig) -> String {
    let s = &cfg.slicer;
    let mut parts: Vec<String> = Vec::new();
    if let Some(b) = s.knapsack_keys().bucket_size {
        parts.push(format!("bucket {b}"));
    } else if matches!(
        s,
        SlicerConfig::Knapsack(_) | SlicerConfig::CountConstrainedKnapsack(_)
    ) {
        parts.push("bucket 100".into());
    }
    let (quotas, entries, inner) = match s {
        SlicerConfig::Quota(q) => (&q.quotas[..], &[][..], q.inner_slicer),
        SlicerConfig::CountQuota(q) => (&[][..], &q.entries[..], q.inner_slicer),
        SlicerConfig::CountConstrainedKnapsack(q) => (&[][..], &q.entries[..], None),
        _ => (&[][..], &[][..], None),
    };
    for q in quotas {
        parts.push(format!("{} {}-{}%", q.kind, q.require, q.cap));
    }
    for e in entries {
        parts.push(format!("{} {}..{}", e.kind, e.require_count, e.cap_count));
    }
    if let Some(i) = inner {
        parts.push(format!("inner {i}"));
    }
    if parts.is_empty() {
        s.slicer_type().to_string()
    } else {
        format!("{} ({})", s.slicer_type(), parts.join("; "))
    }
}

fn overflow_text(cfg: &PolicyConfig) -> String {
    cupel_pipeline::overflow_strategy_name(cfg.overflow_strategy).to_owned()
}

/// Placeholder for a space that must not become a line break.
pub(crate) const GLUE: char = '\u{1}';

/// A policy's settings, as `; `-separated parts that wrap between parts (the
/// scorer list may also wrap inside).
pub(crate) fn policy_summary(cfg: &PolicyConfig) -> String {
    let glued = |s: String| s.replace(' ', &GLUE.to_string());
    [
        format!("scorers {}", scorers_text(&cfg.scorers)),
        // A slicer with many quotas may wrap between its `; `-separated
        // parts, never inside one.
        format!("slicer {}", slicer_text(cfg))
            .split("; ")
            .map(|part| glued(part.to_string()))
            .collect::<Vec<_>>()
            .join("; "),
        glued(format!("placer {}", cfg.placer)),
        glued(format!("overflow {}", overflow_text(cfg))),
        glued(format!(
            "dedup {}",
            if cfg.deduplication { "on" } else { "off" }
        )),
    ]
    .join("; ")
}

// ----- header ------------------------------------------------------------------------

/// `policy`, `budget` (and `tokens`) lines shared by every text output.
pub(crate) fn header(p: &Prepared) -> String {
    let mut out = String::new();
    labelled(&mut out, "policy  ", 8, &origin_text(&p.origin));
    labelled(&mut out, "        ", 8, &policy_summary(&p.config));
    out.push_str(&budget_line(p));
    out
}

/// Where a policy came from, for the `policy` line.
pub(crate) fn origin_text(origin: &PolicyOrigin) -> String {
    match origin {
        PolicyOrigin::File(f) => format!("from --policy {f}"),
        PolicyOrigin::Preset(n) => format!("preset `{n}`"),
        PolicyOrigin::Table(f) => format!("the [policy] table of {f}"),
        PolicyOrigin::DefaultPreset => {
            "preset `recent-dense` (the default: no --policy or [policy])".into()
        }
    }
}

/// The `budget` line (and the `tokens` line when counts were computed).
pub(crate) fn budget_line(p: &Prepared) -> String {
    let mut out = String::new();
    let b = &p.budget;
    let mut budget = format!(
        "max_tokens {}, target_tokens {}, output_reserve {}",
        b.max_tokens(),
        b.target_tokens(),
        b.output_reserve()
    );
    for (kind, n) in b.reserved_slots() {
        let _ = write!(budget, ", reserved{GLUE}{kind}{GLUE}{n}");
    }
    if b.estimation_safety_margin_percent() > 0.0 {
        let _ = write!(
            budget,
            ", safety{GLUE}margin{GLUE}{}%",
            b.estimation_safety_margin_percent()
        );
    }
    labelled(&mut out, "budget  ", 8, &budget);
    if let Some((enc, n)) = &p.counted {
        let items = if *n == 1 { "item" } else { "items" };
        labelled(
            &mut out,
            "tokens  ",
            8,
            &format!("counted with {enc} for {n} {items} without `tokens`"),
        );
    }
    out
}

// ----- item identity ----------------------------------------------------------------------

/// Finds an item's input index (D-1: identity is the index) from a report
/// entry: report items are clones of the input items, and a [`ContextItem`]
/// clone shares its allocation ([`ContextItem::ptr_eq`]), so equal contents at
/// two positions stay apart.
///
/// Built once in O(N); every lookup is one hash probe (issue 18: the old
/// per-lookup scan of equal contents made N identical items quadratic).
struct Indexer<'a> {
    items: &'a [ContextItem],
    /// [`ContextItem::ptr_id`] -> first input position with that allocation.
    by_ptr: HashMap<usize, usize>,
    by_content: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Indexer<'a> {
    fn new(items: &'a [ContextItem]) -> Self {
        let mut by_content: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut by_ptr: HashMap<usize, usize> = HashMap::with_capacity(items.len());
        for (i, it) in items.iter().enumerate() {
            by_content.entry(it.content()).or_default().push(i);
            by_ptr.entry(it.ptr_id()).or_insert(i);
        }
        Self {
            items,
            by_ptr,
            by_content,
        }
    }

    /// The input index of an included row: its item's, or, for an item the
    /// window holds as a variant (a new item, chapter 22), the row's position.
    fn included_index(&self, inc: &IncludedItem) -> Option<usize> {
        self.index_of(&inc.item).or_else(|| {
            (inc.variant.is_some() && inc.position < self.items.len()).then_some(inc.position)
        })
    }

    fn index_of(&self, item: &ContextItem) -> Option<usize> {
        self.by_ptr
            .get(&item.ptr_id())
            .copied()
            .filter(|&i| self.items.get(i).is_some_and(|x| x.ptr_eq(item)))
    }
}

fn idx_text(i: Option<usize>) -> String {
    i.map_or_else(|| "?".into(), |i| i.to_string())
}

// ----- the window ---------------------------------------------------------------------

/// The selected window, in placed order.
pub(crate) fn window(p: &Prepared, report: &SelectionReport) -> String {
    let ix = Indexer::new(&p.items);
    let mut out = String::new();
    let tokens = report.included_tokens();
    let _ = writeln!(
        out,
        "window: {} of {} items, {} tokens ({} of max_tokens)",
        report.included.len(),
        report.total_candidates,
        tokens,
        pct(tokens, i128::from(p.budget.max_tokens()))
    );
    if report.included.is_empty() {
        let _ = writeln!(out, "  (empty)");
        return out;
    }
    let rows: Vec<[String; 4]> = report
        .included
        .iter()
        .map(|inc| {
            [
                idx_text(ix.included_index(inc)),
                inc.item.kind().to_string(),
                inc.item.tokens().to_string(),
                fmt_score(inc.score),
            ]
        })
        .collect();
    let w = widths(&rows, ["item", "kind", "tokens", "score"], [4, 14, 12, 9]);
    let used: usize = w.iter().map(|x| x + 2).sum();
    let cw = WIDTH.saturating_sub(used).max(10);
    item_table_head(&mut out, &w, "content");
    for (row, inc) in rows.iter().zip(&report.included) {
        let _ = writeln!(
            out,
            "{:>w0$}  {}  {:>w2$}  {:>w3$}  {}",
            row[0],
            pad(&clip(&row[1], w[1]), w[1]),
            row[2],
            row[3],
            clip(&content_text(&inc.item), cw),
            w0 = w[0],
            w2 = w[2],
            w3 = w[3]
        );
    }
    out
}

/// An item's content as listed: prefixed with `[group] ` when the item
/// belongs to an atomic group (ungrouped items print as before).
pub(crate) fn content_text(item: &ContextItem) -> std::borrow::Cow<'_, str> {
    match item.group() {
        Some(g) => format!("[{g}] {}", item.content()).into(),
        None => item.content().into(),
    }
}

/// Column widths: at least the header, at most `max` (or the header, if longer).
pub(crate) fn widths<'r, const N: usize>(
    rows: impl IntoIterator<Item = &'r [String; N]>,
    head: [&str; N],
    max: [usize; N],
) -> [usize; N] {
    let mut w = head.map(str::len);
    for row in rows {
        for (w, cell) in w.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    for ((w, max), head) in w.iter_mut().zip(max).zip(head) {
        *w = (*w).min(max.max(head.len()));
    }
    w
}

// ----- the explanation ------------------------------------------------------------------

/// One item's reason, with the details that explain it.
///
/// `kept(content)` is the position of the item a duplicate lost to;
/// `pinned(content)` the position of the pinned item with that content.
pub(crate) fn exclusion_text(
    reason: &ExclusionReason,
    kept: impl Fn(&str) -> Option<usize>,
    pinned: impl Fn(&str) -> Option<usize>,
) -> String {
    match reason {
        ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        } if item_tokens > available_tokens => {
            format!("BudgetExceeded: {item_tokens} > {available_tokens} available")
        }
        // The slicer left it out although it would fit the room it had (the
        // knapsack's bucket rounding, a custom slicer): say so without claiming `>`.
        ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        } => format!("BudgetExceeded: {item_tokens} tokens, {available_tokens} left"),
        ExclusionReason::Deduplicated {
            deduplicated_against,
        } => match kept(deduplicated_against) {
            Some(k) => format!("Deduplicated: duplicate of #{k}"),
            None => format!(
                "Deduplicated: duplicate of {:?}",
                clip(deduplicated_against, 20)
            ),
        },
        ExclusionReason::PinnedOverride { displaced_by } => match pinned(displaced_by) {
            Some(k) => format!("PinnedOverride: displaced by #{k}"),
            None => format!("PinnedOverride: displaced by {:?}", clip(displaced_by, 20)),
        },
        ExclusionReason::NegativeTokens { tokens } => format!("NegativeTokens: {tokens}"),
        ExclusionReason::CountCapExceeded { kind, cap, count } => {
            format!("CountCapExceeded: {kind} has {count}, cap {cap}")
        }
        ExclusionReason::GroupExcluded {
            group,
            group_tokens,
            available_tokens,
        } if group_tokens > available_tokens => format!(
            "GroupExcluded {}: {group_tokens} > {available_tokens}",
            clip(group, 16)
        ),
        ExclusionReason::GroupExcluded {
            group,
            group_tokens,
            available_tokens,
        } => format!(
            "GroupExcluded {}: {group_tokens} tokens, {available_tokens} left",
            clip(group, 16)
        ),
        ExclusionReason::ScoredTooLow { score, threshold } => {
            format!(
                "ScoredTooLow: {} < {}",
                fmt_score(*score),
                fmt_score(*threshold)
            )
        }
        other => other.to_string(),
    }
}

/// The head of a table of items with columns item, kind, tokens and score
/// (widths `w`), then `last` (the free column).
pub(crate) fn item_table_head(out: &mut String, w: &[usize], last: &str) {
    let _ = writeln!(
        out,
        "{:>w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {last}",
        "item",
        "kind",
        "tokens",
        "score",
        w0 = w[0],
        w1 = w[1],
        w2 = w[2],
        w3 = w[3]
    );
}

/// The line above the explanation table.
pub(crate) const EXPLAIN_CAPTION: &str =
    "Every candidate: included (in window order), then excluded (by score).\n\n";

/// Every item — included in placed order, then excluded by score — with its
/// status, score, tokens, kind, reason and content.
pub(crate) fn explain_table(p: &Prepared, report: &SelectionReport) -> String {
    let ix = Indexer::new(&p.items);
    let (kept_by_content, pinned_by_content) = content_index(&ix, report);
    let mut rows: Vec<ExplainRow<'_>> = Vec::new();
    for inc in &report.included {
        let i = ix.included_index(inc);
        rows.push(ExplainRow {
            cells: [
                idx_text(i),
                "included".into(),
                fmt_score(inc.score),
                inc.item.tokens().to_string(),
                inc.item.kind().to_string(),
            ],
            reason: match inc.variant {
                // Short: the reason column is narrow (80 columns in all).
                Some(v) => format!(
                    "{}, variant {} (-{})",
                    inc.reason, v.variant, v.tokens_saved
                ),
                None => inc.reason.to_string(),
            },
            item: &inc.item,
            notes: &inc.notes,
        });
    }
    for exc in &report.excluded {
        let i = ix.index_of(&exc.item);
        rows.push(ExplainRow {
            cells: [
                idx_text(i),
                "excluded".into(),
                fmt_score(exc.score),
                exc.item.tokens().to_string(),
                exc.item.kind().to_string(),
            ],
            reason: exclusion_text(
                &exc.reason,
                |c| match kept_by_content.get(c) {
                    Some(&(first, second)) if Some(first) == i => second,
                    Some(&(first, _)) => Some(first),
                    None => None,
                },
                |c| pinned_by_content.get(c).copied(),
            ),
            item: &exc.item,
            notes: &exc.notes,
        });
    }
    explain_rows(&rows)
}

/// One row of [`explain_table`]: its cells, its reason, the item and what
/// the scorers noted.
struct ExplainRow<'r> {
    cells: [String; 5],
    reason: String,
    item: &'r ContextItem,
    notes: &'r [cupel_core::ScoreNote],
}

/// Per content, built once: the first two positions that did not lose to
/// deduplication (a duplicate names the first one that is not itself), and
/// the first pinned position.
#[allow(clippy::type_complexity)]
fn content_index<'i>(
    ix: &Indexer<'i>,
    report: &SelectionReport,
) -> (
    HashMap<&'i str, (usize, Option<usize>)>,
    HashMap<&'i str, usize>,
) {
    let dedup_losers: HashSet<usize> = report
        .excluded
        .iter()
        .filter(|e| matches!(e.reason, ExclusionReason::Deduplicated { .. }))
        .filter_map(|e| ix.index_of(&e.item))
        .collect();
    let mut kept_by_content: HashMap<&str, (usize, Option<usize>)> = HashMap::new();
    let mut pinned_by_content: HashMap<&str, usize> = HashMap::new();
    for (content, positions) in &ix.by_content {
        let mut keepers = positions
            .iter()
            .copied()
            .filter(|k| !dedup_losers.contains(k));
        if let Some(first) = keepers.next() {
            kept_by_content.insert(content, (first, keepers.next()));
        }
        if let Some(&k) = positions
            .iter()
            .find(|&&k| ix.items.get(k).is_some_and(ContextItem::pinned))
        {
            pinned_by_content.insert(content, k);
        }
    }
    (kept_by_content, pinned_by_content)
}

/// The rows of [`explain_table`], aligned, each with its content and notes
/// below it.
fn explain_rows(rows: &[ExplainRow<'_>]) -> String {
    let w = widths(
        rows.iter().map(|r| &r.cells),
        ["item", "status", "score", "tokens", "kind"],
        [6, 8, 9, 12, 14],
    );
    let used: usize = w.iter().map(|x| x + 2).sum();
    let rw = WIDTH.saturating_sub(used).max(20);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {:<w4$}  reason",
        "item",
        "status",
        "score",
        "tokens",
        "kind",
        w0 = w[0],
        w1 = w[1],
        w2 = w[2],
        w3 = w[3],
        w4 = w[4]
    );
    let indent = w[0] + 2;
    for r in rows {
        let c = &r.cells;
        let _ = writeln!(
            out,
            "{:>w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {}  {}",
            c[0],
            c[1],
            c[2],
            c[3],
            pad(&clip(&c[4], w[4]), w[4]),
            clip(&r.reason, rw),
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3]
        );
        let _ = writeln!(
            out,
            "{:indent$}{}",
            "",
            clip(&content_text(r.item), WIDTH.saturating_sub(indent))
        );
        // What the scorers noted (e.g. "relevance 0.82: matched tokyo, travel").
        for n in r.notes {
            let _ = writeln!(
                out,
                "{:indent$}{}",
                "",
                clip(&n.to_string(), WIDTH.saturating_sub(indent))
            );
        }
    }
    if rows.is_empty() {
        let _ = writeln!(out, "  (no items)");
    }
    out
}

/// Totals, exclusion reasons, budget utilisation and the bar.
pub(crate) fn totals(p: &Prepared, report: &SelectionReport) -> String {
    let mut out = String::new();
    let inc_tokens = report.included_tokens();
    let exc_tokens: i128 = report
        .excluded
        .iter()
        .map(|e| i128::from(e.item.tokens()))
        .sum();
    let count = |n: usize, what: &str| {
        if n == 1 {
            format!("1 {what}")
        } else {
            format!("{n} {what}s")
        }
    };
    // Pinned by the report's reason, not the item's flag: a pinned member
    // pins its whole group (spec 18, AG-1), flagged or not.
    let (pinned, pinned_tokens) = report
        .included
        .iter()
        .filter(|i| i.reason == InclusionReason::Pinned)
        .fold((0usize, 0i128), |(n, t), i| {
            (n + 1, t + i128::from(i.item.tokens()))
        });
    let _ = writeln!(
        out,
        "{} candidates, {} tokens considered",
        report.total_candidates, report.total_tokens_considered
    );
    let mut by_reason: BTreeMap<String, usize> = BTreeMap::new();
    for e in &report.excluded {
        *by_reason.entry(e.reason.name().to_string()).or_default() += 1;
    }
    let reasons = by_reason
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let pinned_text = format!(
        "(pinned: {}, {} tokens)",
        count(pinned, "item"),
        pinned_tokens
    );
    let rows = [
        ("included  ", report.included.len(), inc_tokens, pinned_text),
        (
            "excluded  ",
            report.excluded.len(),
            exc_tokens,
            if reasons.is_empty() {
                String::new()
            } else {
                format!("({reasons})")
            },
        ),
    ];
    for (label, n, t, extra) in rows {
        let head = format!("{label}{:<9} {t:>7} tokens  ", count(n, "item"));
        labelled(&mut out, &head, width(&head), &extra);
    }
    for s in &report.count_requirement_shortfalls {
        let _ = writeln!(
            out,
            "shortfall: {} required {}, only {} available",
            clip(s.kind.as_str(), 40),
            s.required_count,
            s.satisfied_count
        );
    }
    let max = i128::from(p.budget.max_tokens());
    let target = i128::from(p.budget.target_tokens());
    let _ = writeln!(
        out,
        "utilisation  {inc_tokens} of {max} max_tokens = {} (target {target}: {})",
        pct(inc_tokens, max),
        pct(inc_tokens, target)
    );
    out.push_str(&bar(p, report));
    out
}

// ----- the budget bar ---------------------------------------------------------------------

/// A letter per kind: its initial if free, else the lowercase initial, else
/// another letter of its name, else a digit.
pub(crate) fn assign_letters(kinds: &[String]) -> Vec<char> {
    let mut used: HashSet<char> = HashSet::from(['.', '~']);
    let mut out = Vec::with_capacity(kinds.len());
    for k in kinds {
        let alnum: Vec<char> = k.chars().filter(char::is_ascii_alphanumeric).collect();
        let mut candidates: Vec<char> = Vec::new();
        if let Some(&c) = alnum.first() {
            candidates.push(c.to_ascii_uppercase());
            candidates.push(c.to_ascii_lowercase());
        }
        candidates.extend(alnum.iter().filter(|c| c.is_ascii_uppercase()));
        candidates.extend(alnum.iter().map(char::to_ascii_uppercase));
        candidates.extend(alnum.iter().map(char::to_ascii_lowercase));
        candidates.extend('0'..='9');
        candidates.extend(['#', '%', '&', '*', '+', '=', '@']);
        let c = candidates
            .into_iter()
            .find(|c| !used.contains(c))
            .unwrap_or('?');
        used.insert(c);
        out.push(c);
    }
    out
}

/// Splits `width` cells among `parts` proportionally (largest remainder),
/// giving every non-zero part at least one cell when there is room.
fn apportion(parts: &[i128], width: usize) -> Vec<usize> {
    let total: i128 = parts.iter().sum();
    if total <= 0 {
        return vec![0; parts.len()];
    }
    let w = i128::try_from(width).unwrap_or(0);
    let mut cells: Vec<usize> = parts
        .iter()
        .map(|&p| usize::try_from(p * w / total).unwrap_or(0))
        .collect();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(parts[i] * w % total));
    let mut left = width.saturating_sub(cells.iter().sum());
    for &i in order.iter().cycle().take(parts.len() * 2) {
        if left == 0 {
            break;
        }
        if parts[i] > 0 {
            cells[i] += 1;
            left -= 1;
        }
    }
    // Every non-zero part visible: take a cell from the biggest one.
    for i in 0..parts.len() {
        if parts[i] > 0
            && cells[i] == 0
            && let Some(big) = (0..cells.len()).max_by_key(|&j| (cells[j], std::cmp::Reverse(j)))
            && cells[big] > 1
        {
            cells[big] -= 1;
            cells[i] = 1;
        }
    }
    cells
}

/// `[SSMMMMTTDD......~~~~]` with a legend: how `max_tokens` was spent by kind.
fn bar(p: &Prepared, report: &SelectionReport) -> String {
    let mut out = String::new();
    // Kinds in order of first appearance in the window.
    let mut kinds: Vec<String> = Vec::new();
    let mut tokens: Vec<i128> = Vec::new();
    let mut seen: HashMap<&cupel_core::ContextKind, usize> = HashMap::new();
    for inc in &report.included {
        let k = inc.item.kind();
        let t = i128::from(inc.item.tokens()).max(0);
        match seen.get(k) {
            Some(&i) => tokens[i] += t,
            None => {
                seen.insert(k, kinds.len());
                kinds.push(k.to_string());
                tokens.push(t);
            }
        }
    }
    let used: i128 = tokens.iter().sum();
    let max = i128::from(p.budget.max_tokens());
    let reserve = i128::from(p.budget.output_reserve());
    let scale = max.max(used + reserve);
    if scale <= 0 {
        let _ = writeln!(out, "(max_tokens is 0: no budget to draw)");
        return out;
    }
    let free = (scale - used - reserve).max(0);
    let letters = assign_letters(&kinds);
    let mut parts: Vec<(char, String, i128)> = Vec::new();
    for ((k, t), c) in kinds.iter().zip(&tokens).zip(&letters) {
        if *t > 0 {
            parts.push((*c, k.clone(), *t));
        }
    }
    parts.push(('.', "free".into(), free));
    parts.push(('~', "output reserve".into(), reserve));
    let amounts: Vec<i128> = parts.iter().map(|x| x.2).collect();
    let cells = apportion(&amounts, BAR_WIDTH);
    let mut line = String::from("[");
    for ((c, _, _), n) in parts.iter().zip(&cells) {
        line.extend(std::iter::repeat_n(*c, *n));
    }
    line.push(']');
    let _ = writeln!(out, "{line}");
    let legend: Vec<String> = parts
        .iter()
        .filter(|x| x.2 > 0 || x.0 == '.')
        .map(|(c, name, t)| format!("{c} {} {t} ({})", clip(name, 24), pct(*t, max)))
        .collect();
    // Pack legend entries into 80-column lines.
    let mut row = String::new();
    for entry in legend {
        if !row.is_empty() && width(&row) + 3 + width(&entry) > WIDTH {
            let _ = writeln!(out, "{row}");
            row.clear();
        }
        if !row.is_empty() {
            row.push_str("   ");
        }
        row.push_str(&entry);
    }
    if !row.is_empty() {
        let _ = writeln!(out, "{row}");
    }
    out
}

// ----- presets ------------------------------------------------------------------------------

/// `recency 3 (75%), kind 1 (25%)`: weights with their normalised shares.
fn weighted_shares(scorers: &[ScorerConfig]) -> String {
    if scorers.len() < 2 {
        return scorers_text(scorers);
    }
    let total: f64 = scorers.iter().map(ScorerConfig::weight_value).sum();
    scorers
        .iter()
        .map(|s| {
            let share = if total > 0.0 {
                format!(" ({:.0}%)", s.weight_value() / total * 100.0)
            } else {
                String::new()
            };
            format!("{} {}{share}", scorer_label(s), weight(s.weight_value()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

const COMPONENTS: &[(&str, &str)] = &[
    (
        "recency",
        "newer timestamps rank higher (rank / (n - 1)); undated items 0",
    ),
    (
        "priority",
        "higher `priority` ranks higher; items without one 0",
    ),
    (
        "kind",
        "SystemPrompt 1.0, Memory 0.8, ToolOutput 0.6, Document 0.4, Message 0.2",
    ),
    (
        "reflexive",
        "the item's `future_relevance_hint`, clamped to [0, 1]",
    ),
    (
        "frequency",
        "share of the other items that share a tag with it",
    ),
    ("greedy", "fills the target by score per token"),
    (
        "knapsack",
        "best total score that fits; tokens rounded up to buckets",
    ),
    ("chronological", "oldest first; undated items last"),
    (
        "u_shaped",
        "best items at the start and the end, weakest in the middle",
    ),
];

/// `cupel presets`.
pub(crate) fn presets() -> String {
    let mut out = String::new();
    for p in cupel_pipeline::presets() {
        let c = &p.config;
        let _ = writeln!(out, "{}", p.name);
        labelled(&mut out, "  ", 2, p.description);
        labelled(&mut out, "  scorers   ", 12, &weighted_shares(&c.scorers));
        labelled(&mut out, "  slicer    ", 12, &slicer_text(c));
        labelled(&mut out, "  placer    ", 12, c.placer.as_str());
        labelled(
            &mut out,
            "  overflow  ",
            12,
            &format!(
                "{}; deduplication {}",
                overflow_text(c),
                if c.deduplication { "on" } else { "off" }
            ),
        );
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "What the components do:");
    for (name, what) in COMPONENTS {
        labelled(&mut out, &format!("  {name:<15}"), 17, what);
    }
    let _ = writeln!(out);
    labelled(
        &mut out,
        "",
        0,
        "Weights are relative: a composite scorer divides each by their sum. Use a \
         preset with `cupel select INPUT --policy NAME`, or copy its settings into a \
         [policy] table to adjust them.",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_flattens_and_cuts_with_an_ellipsis() {
        assert_eq!(clip("a\n  b\tc", 10), "a b c");
        // 10 chars allowed: 9 kept ("abcde fgh") + "…"
        assert_eq!(clip("abcde fghij klm", 10), "abcde fgh…");
        // a cut right after a space drops the space
        assert_eq!(clip("abcd efgh", 6), "abcd…");
        assert_eq!(clip("éééééé", 3).chars().count(), 3);
        // Display columns: each CJK character takes two, so six of them are
        // 12 columns. At 6 columns: the longest prefix of at most 5 is 漢字
        // (4 columns; a third would make 6 + 1 for `…` = 7), then `…`.
        assert_eq!(clip("漢字漢字漢字", 12), "漢字漢字漢字");
        assert_eq!(clip("漢字漢字漢字", 6), "漢字…");
        assert_eq!(clip("漢字漢字漢字", 5), "漢字…");
        assert_eq!(width(&clip("漢字漢字漢字", 4)), 3);
        // an ANSI escape cannot reach the terminal
        assert_eq!(clip("a\u{1b}[31mred", 20), "a [31mred");
    }

    /// The flatten-everything-then-cut definition `clip` must match: the
    /// flattened text if it fits `width` display columns, else the longest
    /// prefix of at most `width - 1` columns, trimmed, and `…`.
    fn clip_by_definition(s: &str, width: usize) -> String {
        let flat = s
            .split(|c: char| c.is_whitespace() || c.is_control())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if super::width(&flat) <= width {
            return flat;
        }
        let mut out = String::new();
        for c in flat.chars() {
            if super::width(&out) + char_width(c) + 1 > width {
                break;
            }
            out.push(c);
        }
        out.truncate(out.trim_end().len());
        if width > 0 {
            out.push('…');
        }
        out
    }

    #[test]
    fn clip_streams_but_matches_the_definition() {
        let texts = [
            "",
            "  ",
            "a",
            " a b ",
            "ab  cd\n\nef",
            "é é\tééé  x",
            "\u{1b}\u{1b}a",
        ];
        for t in texts {
            for width in 0..12 {
                assert_eq!(
                    clip(t, width),
                    clip_by_definition(t, width),
                    "{t:?} {width}"
                );
            }
        }
        // 16 MiB without a space: only the first 80 characters are read.
        let huge = "x".repeat(16 << 20);
        assert_eq!(clip(&huge, 80), format!("{}…", "x".repeat(79)));
    }

    #[test]
    fn wrap_keeps_lines_within_width() {
        assert_eq!(wrap("aa bb cc dd", 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap("toolongword x", 4), ["toolongword", "x"]);
    }

    #[test]
    fn wrapped_text_carries_no_terminal_escapes() {
        // A reserved-slot kind spelled with an escape sequence: the ESC
        // separates words like a space; GLUE survives for `labelled`.
        assert_eq!(
            wrap("reserved\u{1}\u{1b}[2Jx\u{1}1", 80),
            ["reserved\u{1} [2Jx\u{1}1"]
        );
        let mut out = String::new();
        labelled(&mut out, "budget  ", 8, "slots \u{1b}[31mred");
        assert_eq!(out, "budget  slots [31mred\n");
    }

    #[test]
    fn percentages_round_half_up_in_tenths() {
        // 1318 / 2048 = 0.64355... -> 64.4%
        assert_eq!(pct(1318, 2048), "64.4%");
        // 1 / 8 = 12.5% exactly; 1 / 16 = 6.25% -> 6.3% (half up)
        assert_eq!(pct(1, 8), "12.5%");
        assert_eq!(pct(1, 16), "6.3%");
        assert_eq!(pct(5, 0), "0.0%");
    }

    #[test]
    fn apportion_is_exact_and_shows_small_parts() {
        // 60 cells over [30, 20, 10] of 60 -> exactly 30/20/10
        assert_eq!(apportion(&[30, 20, 10], 60), [30, 20, 10]);
        // [1, 999] over 10 cells: exact 0.01 and 9.99 -> 0 + 10, then the
        // small part borrows one cell: [1, 9]
        assert_eq!(apportion(&[1, 999], 10), [1, 9]);
        // always sums to the width
        let c = apportion(&[7, 11, 13, 0, 17], 60);
        assert_eq!(c.iter().sum::<usize>(), 60);
        assert_eq!(c[3], 0);
    }

    #[test]
    fn widths_fit_the_longest_cell_between_header_and_cap() {
        let rows = [
            ["12345".to_string(), "a".to_string()],
            ["7".to_string(), "éé".to_string()],
        ];
        // Column 0: longest cell 5 chars, capped at 3. Column 1: longest cell
        // 2 chars ("éé", 4 bytes) is below the 4-char header, which wins.
        assert_eq!(widths(&rows, ["id", "kind"], [3, 10]), [3, 4]);
        // A cap below the header length is raised to the header.
        assert_eq!(widths(&rows, ["id", "kind"], [1, 1]), [2, 4]);
        // No rows: the headers.
        assert_eq!(
            widths(&[] as &[[String; 2]], ["id", "kind"], [9, 9]),
            [2, 4]
        );
    }

    #[test]
    fn items_are_found_by_allocation_not_by_content() {
        let items = vec![
            ContextItem::new("same", 1).unwrap(),
            ContextItem::new("other", 1).unwrap(),
            ContextItem::new("same", 1).unwrap(),
        ];
        let ix = Indexer::new(&items);
        // Clones (what a report holds) find their own position...
        assert_eq!(ix.index_of(&items[2].clone()), Some(2));
        assert_eq!(ix.index_of(&items[0].clone()), Some(0));
        // ...an equal item that is not one of the inputs is not guessed.
        assert_eq!(ix.index_of(&ContextItem::new("same", 1).unwrap()), None);
        assert_eq!(ix.by_content["same"], [0, 2]);
    }

    #[test]
    fn letters_are_initials_then_lowercase_on_collision() {
        let kinds: Vec<String> = ["SystemPrompt", "Message", "Memory", "Mystery"]
            .map(String::from)
            .to_vec();
        // Memory collides with Message's M -> m; Mystery: M, m taken -> 'Y'
        assert_eq!(assign_letters(&kinds), ['S', 'M', 'm', 'Y']);
    }

    #[test]
    fn scores_print_with_three_decimals() {
        assert_eq!(fmt_score(0.5), "0.500");
        assert_eq!(fmt_score(-0.0), "0.000");
        assert_eq!(fmt_score(f64::NAN), "NaN");
    }
}
