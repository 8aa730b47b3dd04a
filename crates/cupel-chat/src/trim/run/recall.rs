//! Phase `recall` of a recall window: the fill again with the newest share
//! as its cap, the older units ranked by BM25 against the query, and the
//! best that fit written into one context message.

use cupel_core::{ContextItem, Query, ScoreContext, Scorer};
use cupel_scorers::{Bm25Scorer, MAX_QUERY_BYTES, bm25_terms};

use super::{Half, Run};
use crate::error::ChatError;
use crate::inject;
use crate::message::{Message, Role};
use crate::trim::recall::{RECALL_HEADER, date_of, line_of};
use crate::trim::{Decision, Recall, RecallOptions, RecallSkip, Relevance};

/// Refuses recall options out of range and a query over the scorer's limit.
pub(super) fn check(r: &RecallOptions) -> Result<(), ChatError> {
    if !(r.newest_share > 0.0 && r.newest_share <= 1.0) {
        return Err(ChatError::InvalidRecall {
            option: "newest_share",
            value: r.newest_share.to_string(),
            expected: "in (0, 1]",
        });
    }
    if !(0.0..=1.0).contains(&r.neighbours) {
        return Err(ChatError::InvalidRecall {
            option: "neighbours",
            value: r.neighbours.to_string(),
            expected: "in [0, 1]",
        });
    }
    if let Some(q) = &r.query
        && q.len() > MAX_QUERY_BYTES
    {
        return Err(ChatError::QueryTooLong {
            bytes: q.len(),
            max: MAX_QUERY_BYTES,
        });
    }
    Ok(())
}

/// `text` cut to at most [`MAX_QUERY_BYTES`], on a character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= MAX_QUERY_BYTES {
        return text;
    }
    let mut end = MAX_QUERY_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One older unit: its text, date, estimated tokens and relevance.
struct Candidate {
    unit: usize,
    text: String,
    tokens: i64,
    score: f64,
}

impl<'a> Run<'a, '_> {
    /// The context message holding `text`, as [`inject::synthesize`]
    /// builds it for the format after the pinned prompts (OpenAI: a
    /// `system` or `developer` message; Anthropic: a `user` text block).
    fn context_message(&self, text: &str) -> Message {
        inject::synthesize(self.opts.format, &self.pinned_roles, text)
    }

    /// Whether the context message may go before the window's first
    /// conversation message (never before tool results: a kept orphan).
    fn placeable(&self) -> bool {
        let Some(&u) = self.kept_units.first() else {
            return true;
        };
        let piece = self.pieces[self.units[u].first];
        let first = match (piece.half, self.halves.get(&piece.msg)) {
            (Half::Text, Some(h)) => &h[1].0,
            _ => &self.messages[piece.msg],
        };
        let probe = self.context_message("");
        inject::check_placement(std::slice::from_ref(first), 0, &probe, self.opts.format).is_ok()
    }

    /// The query: the caller's, or the newest user message's text.
    fn recall_query(&self, r: &RecallOptions) -> String {
        if let Some(q) = &r.query {
            return q.clone();
        }
        let newest = self
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User && (!m.is_tool_result() || m.is_mixed_turn()));
        newest.map_or_else(String::new, |m| {
            cut(&m.content.texts().join("\n")).to_string()
        })
    }

    /// Whether a unit was left out for the budget (not for an orphan, nor
    /// the end rule): an older unit a recall may bring back.
    fn is_older(&self, u: usize) -> bool {
        matches!(
            self.unit_decision[u],
            Some(
                Decision::DoesNotFit { .. }
                    | Decision::OlderThanCut { .. }
                    | Decision::StartRule { .. }
            )
        )
    }

    /// Phase `recall`. The plain fill ran first: when it left nothing older
    /// out, or the query matches nothing, it stands.
    pub(super) fn recall(&mut self, r: &RecallOptions) -> Result<(), super::Failed<'a>> {
        let query = self.recall_query(r);
        // Only the pinned roles matter to the form: no copy of their text.
        self.pinned_roles = (0..self.messages.len())
            .filter(|&i| self.pin[i].is_some())
            .map(|i| Message::new(self.messages[i].role.clone(), ""))
            .collect();
        let cap = (self.available as f64 * r.newest_share).floor() as i64;
        let mut recall = Recall {
            query: query.clone(),
            newest_budget: cap,
            message: None,
            at: 0,
            tokens: 0,
            positions: Vec::new(),
            candidates: 0,
            skipped: None,
        };
        let dropped_for_budget = (0..self.units.len()).any(|u| {
            matches!(
                self.unit_decision[u],
                Some(Decision::DoesNotFit { .. } | Decision::OlderThanCut { .. })
            )
        });
        let scorer = Bm25Scorer::builder()
            .neighbours(r.neighbours)
            .group_key("date")
            .build()
            .map_err(|e| ChatError::InvalidRecall {
                option: "neighbours",
                value: e.to_string(),
                expected: "in [0, 1]",
            })?;
        let words = scorer.query_words(&query);
        recall.skipped = if self.kept_units.is_empty() {
            Some(RecallSkip::NoNewestTurns)
        } else if !dropped_for_budget {
            Some(RecallSkip::NothingOlder)
        } else if words.is_empty() {
            Some(RecallSkip::NoQueryTerms)
        } else {
            None
        };
        if recall.skipped.is_some() {
            self.recalled = Some(recall);
            return Ok(());
        }
        // The plain fill, kept in case nothing is recalled.
        let plain = (
            self.unit_decision.clone(),
            std::mem::take(&mut self.kept_units),
            self.unit_step.clone(),
        );
        self.unit_decision = vec![None; self.units.len()];
        self.unit_step = vec![0; self.unit_step.len()];
        self.cap = Some(cap);
        self.fill()?;
        self.repair();
        if self.kept_units.is_empty() || !self.placeable() {
            recall.skipped = Some(if self.kept_units.is_empty() {
                RecallSkip::NoNewestTurns
            } else {
                RecallSkip::NoPlace
            });
            (self.unit_decision, self.kept_units, self.unit_step) = plain;
            self.cap = None;
            self.recalled = Some(recall);
            return Ok(());
        }
        let mut candidates = self.candidates();
        recall.candidates = candidates.len();
        self.score(&mut candidates, &scorer, &query);
        let chosen = self.choose(&candidates, &words, &mut recall);
        if chosen.is_empty() {
            (self.unit_decision, self.kept_units, self.unit_step) = plain;
            self.cap = None;
            recall.skipped = Some(if candidates.iter().any(|c| c.score > 0.0) {
                RecallSkip::NoRoom
            } else {
                RecallSkip::NothingRelevant
            });
        }
        self.recalled = Some(recall);
        Ok(())
    }

    /// The older units as text, in input order.
    fn candidates(&self) -> Vec<Candidate> {
        let members = self.members();
        let base = self.counter.count_message(&self.context_message(""));
        (0..self.units.len())
            .filter(|&u| self.is_older(u))
            .map(|u| {
                let lines: Vec<String> = members[u]
                    .iter()
                    .map(|&p| {
                        let piece = self.pieces[p];
                        let m = &self.messages[piece.msg];
                        line_of(
                            m,
                            match piece.half {
                                Half::Whole => None,
                                Half::Results => Some(true),
                                Half::Text => Some(false),
                            },
                        )
                    })
                    .collect();
                let mut text = lines.join("\n");
                text.push('\n');
                let tokens = self
                    .counter
                    .count_message(&self.context_message(&text))
                    .saturating_sub(base)
                    .max(1);
                text.pop();
                Candidate {
                    unit: u,
                    text,
                    tokens,
                    score: 0.0,
                }
            })
            .collect()
    }

    /// BM25 of each candidate against the query, over the candidates; the
    /// neighbour lift stays within one date (any, when there are none).
    fn score(&self, candidates: &mut [Candidate], scorer: &Bm25Scorer, query: &str) {
        let members = self.members();
        let items: Vec<Option<ContextItem>> = candidates
            .iter()
            .map(|c| {
                let first = &self.messages[self.pieces[members[c.unit][0]].msg];
                let mut b = ContextItem::builder(c.text.clone(), c.tokens);
                if let Some(d) = date_of(first) {
                    b = b.metadata("date", d);
                }
                b.build().ok()
            })
            .collect();
        // Text is never empty (a line holds its speaker), so every item builds.
        let refs: Vec<&ContextItem> = items.iter().flatten().collect();
        if refs.len() != candidates.len() {
            return;
        }
        let q = Query::new(query);
        let scores = scorer.score_all_in(&refs, &ScoreContext::new().query(Some(&q)));
        for (c, s) in candidates.iter_mut().zip(scores) {
            c.score = if s.is_finite() { s } else { 0.0 };
        }
    }

    /// Best first (ties to the newer unit), skipping what does not fit,
    /// then the message counted whole and trimmed from the least relevant
    /// until it fits. Sets every candidate's decision and `recall`'s
    /// message; returns the recalled units.
    fn choose(
        &mut self,
        candidates: &[Candidate],
        words: &[(String, String)],
        recall: &mut Recall,
    ) -> Vec<usize> {
        let members = self.members();
        let kept: i64 = self
            .kept_units
            .iter()
            .map(|&u| {
                let step = self.unit_step.get(u).copied().unwrap_or(0);
                members[u]
                    .iter()
                    .map(|&p| self.piece_tokens_at(p, step))
                    .fold(0, i64::saturating_add)
            })
            .fold(0, i64::saturating_add);
        let room = self.available.saturating_sub(kept);
        let header = self
            .counter
            .count_message(&self.context_message(RECALL_HEADER));
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|&a, &b| {
            candidates[b]
                .score
                .total_cmp(&candidates[a].score)
                .then(b.cmp(&a))
        });
        let mut left = room.saturating_sub(header);
        let mut chosen: Vec<usize> = Vec::new();
        let mut left_at = vec![0i64; candidates.len()];
        for &k in &order {
            left_at[k] = left.max(0);
            if candidates[k].score > 0.0 && candidates[k].tokens <= left {
                left -= candidates[k].tokens;
                chosen.push(k);
            }
        }
        // `chosen` is best first: drop from its end until the whole fits.
        let (message, tokens) = loop {
            if chosen.is_empty() {
                break (None, 0);
            }
            let m = self.recall_text(candidates, &chosen);
            let t = self.counter.count_message(&m);
            if t <= room {
                break (Some(m), t);
            }
            let mut over = t - room;
            while over > 0
                && let Some(k) = chosen.pop()
            {
                over -= candidates[k].tokens;
            }
        };
        let mut is_chosen = vec![false; candidates.len()];
        for &k in &chosen {
            is_chosen[k] = true;
        }
        for (k, c) in candidates.iter().enumerate() {
            let relevance = Relevance {
                score: c.score,
                terms: if c.score > 0.0 {
                    matched(words, &c.text)
                } else {
                    Vec::new()
                },
            };
            self.unit_decision[c.unit] = Some(if is_chosen[k] {
                Decision::Recalled {
                    relevance,
                    unit_tokens: c.tokens,
                }
            } else {
                Decision::NotRecalled {
                    relevance,
                    unit_tokens: c.tokens,
                    available_tokens: left_at[k],
                }
            });
        }
        let mut positions: Vec<usize> = chosen
            .iter()
            .flat_map(|&k| members[candidates[k].unit].iter())
            .map(|&p| self.pieces[p].msg)
            .collect();
        positions.sort_unstable();
        positions.dedup();
        recall.positions = positions;
        recall.message = message;
        recall.tokens = tokens;
        chosen.iter().map(|&k| candidates[k].unit).collect()
    }

    /// The context message holding `chosen` in input order.
    fn recall_text(&self, candidates: &[Candidate], chosen: &[usize]) -> Message {
        let mut in_order: Vec<usize> = chosen.to_vec();
        in_order.sort_unstable_by_key(|&k| candidates[k].unit);
        let mut text = RECALL_HEADER.to_string();
        for k in in_order {
            text.push('\n');
            text.push_str(&candidates[k].text);
        }
        self.context_message(&text)
    }
}

/// The query words whose term occurs in `text`.
fn matched(words: &[(String, String)], text: &str) -> Vec<String> {
    let terms: std::collections::BTreeSet<String> = bm25_terms(text, true).into_iter().collect();
    words
        .iter()
        .filter(|(_, t)| terms.contains(t))
        .map(|(w, _)| w.clone())
        .collect()
}
