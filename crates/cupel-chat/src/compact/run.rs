//! One fold: the summariser's input, its call, the size bound, and the
//! report — shared by the trim and the session, blocking and async.

use std::sync::Arc;

use cupel_core::Summary;

use super::{
    Compaction, Evicted, Oversize, RunningSummary, SUMMARY_HEADER, SummaryFailure, SummaryInput,
    SummaryReport, SummaryStatus,
};
use crate::count::MessageCounter;
use crate::message::Message;
use crate::wire::Format;

/// The summary text as the message carries it: the header line, then the text.
pub(crate) fn with_header(text: &str) -> String {
    format!("{SUMMARY_HEADER}\n{text}")
}

/// The summary message for `text` after the pinned messages `pinned`.
pub(crate) fn summary_message(format: Format, pinned: &[Message], text: &str) -> Message {
    crate::inject::synthesize(format, pinned, &with_header(text))
}

/// One fold's facts, before and after the summariser runs.
pub(crate) struct Folding<'a> {
    pub(crate) format: Format,
    pub(crate) counter: Arc<dyn MessageCounter>,
    /// The window's pinned prefix (the summary's role follows it).
    pub(crate) pinned: Vec<Message>,
    pub(crate) compaction: &'a Compaction,
    pub(crate) previous: Option<RunningSummary>,
    /// Raw units evicted since the previous summary, oldest first.
    pub(crate) evicted: Vec<Evicted<'a>>,
    /// Their tokens.
    pub(crate) evicted_tokens: i64,
    /// The session turn, if any.
    pub(crate) turn: Option<usize>,
    /// The summary's index in the window as sent.
    pub(crate) at: usize,
}

impl<'a> Folding<'a> {
    /// What the summariser reads (`None`: nothing to fold).
    pub(crate) fn input(&self) -> Option<SummaryInput<'_>> {
        if self.evicted.is_empty() {
            return None;
        }
        Some(SummaryInput {
            format: self.format,
            previous: self.previous.as_ref(),
            evicted: self.evicted.clone(),
            max_tokens: self.compaction.max_tokens,
        })
    }

    /// The fold with the blocking summariser.
    pub(crate) fn run(self) -> SummaryReport {
        let result = self.input().map(|input| match &self.compaction.summarizer {
            Some(s) => s.summarize(&input).map_err(SummaryFailure::Summarizer),
            None => Err(SummaryFailure::NoSummarizer),
        });
        self.finish(result)
    }

    /// The fold with an async summariser.
    pub(crate) async fn run_async(self, summarizer: &dyn super::AsyncSummarizer) -> SummaryReport {
        let result = match self.input() {
            Some(input) => Some(
                summarizer
                    .summarize(&input)
                    .await
                    .map_err(SummaryFailure::Summarizer),
            ),
            None => None,
        };
        self.finish(result)
    }

    fn tokens_of(&self, text: &str) -> i64 {
        self.counter
            .count_message(&summary_message(self.format, &self.pinned, text))
    }

    /// The report, from the summariser's answer (`None`: not called).
    pub(crate) fn finish(self, result: Option<Result<String, SummaryFailure>>) -> SummaryReport {
        let evicted: Vec<usize> = self
            .evicted
            .iter()
            .flat_map(|u| u.positions.iter().copied())
            .collect();
        let (status, summary) = match result {
            None => (SummaryStatus::Unchanged, self.kept_previous()),
            Some(Err(why)) => (SummaryStatus::Failed(why), self.kept_previous()),
            Some(Ok(text)) => {
                match self
                    .bounded(text.trim())
                    .and_then(|(text, tokens, cut_from)| {
                        Ok((self.made(text, tokens, &evicted)?, cut_from))
                    }) {
                    Ok((s, cut_from)) => (SummaryStatus::Made { cut_from }, Some(s)),
                    Err(why) => (SummaryStatus::Failed(why), self.kept_previous()),
                }
            }
        };
        let message = summary
            .as_ref()
            .map(|s| s.message(self.format, &self.pinned));
        SummaryReport {
            status,
            summary,
            message,
            at: self.at,
            evicted,
            reserve: self.compaction.max_tokens,
        }
    }

    /// The previous summary, recounted with this counter (a resumed one
    /// may have been counted by another).
    fn kept_previous(&self) -> Option<RunningSummary> {
        let mut p = self.previous.clone()?;
        let tokens = self.tokens_of(p.text());
        p.summary = Summary::new(p.summary.text(), tokens).ok()?;
        Some(p)
    }

    fn made(
        &self,
        text: String,
        tokens: i64,
        evicted: &[usize],
    ) -> Result<RunningSummary, SummaryFailure> {
        let prev = self.previous.as_ref();
        let messages = evicted.len();
        Ok(RunningSummary {
            // `text` is non-empty (checked) and `tokens` a count.
            summary: Summary::new(text, tokens.max(0)).map_err(|_| SummaryFailure::Empty)?,
            through: evicted
                .iter()
                .copied()
                .max()
                .or(prev.and_then(|p| p.through)),
            positions: evicted.to_vec(),
            covers: prev.map_or(0, |p| p.covers).saturating_add(messages),
            original_tokens: prev
                .map_or(0, |p| p.original_tokens)
                .saturating_add(self.evicted_tokens),
            folds: prev.map_or(0, |p| p.folds).saturating_add(1),
            turn: self.turn,
        })
    }

    /// `text` within the bound: as it is, cut at a sentence, or refused.
    /// Returns the text, its message tokens and the tokens before a cut.
    fn bounded(&self, text: &str) -> Result<(String, i64, Option<i64>), SummaryFailure> {
        if text.is_empty() {
            return Err(SummaryFailure::Empty);
        }
        let max = self.compaction.max_tokens;
        let tokens = self.tokens_of(text);
        if tokens <= max {
            return Ok((text.to_string(), tokens, None));
        }
        let refused = SummaryFailure::Oversized {
            tokens,
            max_tokens: max,
        };
        if self.compaction.oversize == Oversize::Reject {
            return Err(refused);
        }
        let ends = sentence_ends(text);
        // The longest sentence prefix that fits (binary search: a longer
        // prefix never counts fewer tokens).
        let (mut lo, mut hi, mut best) = (0usize, ends.len(), None);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let prefix = text[..ends[mid]].trim_end();
            let t = self.tokens_of(prefix);
            if t <= max {
                best = Some((prefix, t));
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        match best {
            Some((prefix, t)) if !prefix.is_empty() => Ok((prefix.to_string(), t, Some(tokens))),
            _ => Err(refused),
        }
    }
}

/// Byte offsets just after each sentence of `text`: after a `.`, `!` or
/// `?` followed by whitespace (or at the end), and at each line end.
pub(crate) fn sentence_ends(text: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let end = match c {
            '.' | '!' | '?' => next.is_none_or(char::is_whitespace),
            '\n' => true,
            _ => false,
        };
        if end {
            ends.push(i + c.len_utf8());
        }
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentence_ends_after_terminators_followed_by_space_and_at_line_ends() {
        let t = "A b. C d! E.f\nG? H";
        // "A b." ends at 4; "C d!" at 9; "E.f" has no space after '.', the
        // line ends at 14 (after '\n'); "G?" at 16; "H" is no sentence.
        assert_eq!(sentence_ends(t), vec![4, 9, 14, 16]);
    }
}
