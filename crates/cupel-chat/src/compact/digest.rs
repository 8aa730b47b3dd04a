//! [`DigestSummarizer`]: the offline default, a deterministic extractive
//! digest of the evicted exchanges.

use super::{SummarizeError, Summarizer, SummaryInput, date_of, one_line};
use crate::message::{Message, Role};

/// A deterministic, bounded extractive digest: one line per evicted
/// exchange (a user message and what followed it up to the next), with
/// its date when the messages carry one, the user's request, the tools
/// called and the assistant's conclusion (its last text), each quote cut
/// to [`quote_chars`](Self::quote_chars). The previous summary's lines
/// come first (folding); when the whole is over the bound (estimated at
/// 3 bytes per token) the oldest lines go first, replaced by one line
/// counting them. Needs no model and no network.
///
/// ```
/// use cupel_chat::{DigestSummarizer, Message, Summarizer};
/// # use cupel_chat::{Compaction, Trim, trim};
/// let msgs = vec![
///     Message::user("Where is order 42?"),
///     Message::assistant_calls([("c1", "track", "{\"order\":42}")]),
///     Message::tool("c1", "In transit."),
///     Message::assistant("It is in transit."),
///     Message::user("word ".repeat(40)),
/// ];
/// let c = Compaction::new(DigestSummarizer::new()).max_tokens(60)?;
/// let opts = Trim::openai(120).summarize(c);
/// let out = trim(&msgs, &opts)?;
/// let text = out.summary.unwrap().summary.unwrap().text().to_string();
/// assert_eq!(text, "- Asked: Where is order 42? Tools: track. Concluded: It is in transit.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DigestSummarizer {
    quote_chars: usize,
}

impl Default for DigestSummarizer {
    fn default() -> Self {
        Self::new()
    }
}

/// The bytes per token the digest assumes for its own bound (English text
/// runs about 4 bytes per token in `o200k_base`; 3 leaves room).
const BYTES_PER_TOKEN: usize = 3;

impl DigestSummarizer {
    /// A digest quoting at most 160 characters of each request and conclusion.
    pub fn new() -> Self {
        DigestSummarizer { quote_chars: 160 }
    }

    /// The most characters quoted from a request or a conclusion (at least 8).
    pub fn quote_chars(mut self, chars: usize) -> Self {
        self.quote_chars = chars.max(8);
        self
    }

    fn quote(&self, text: &str) -> String {
        let text = one_line(text);
        if text.chars().count() <= self.quote_chars {
            return text;
        }
        let cut: String = text.chars().take(self.quote_chars - 1).collect();
        format!("{}…", cut.trim_end())
    }

    /// One exchange's line.
    fn exchange_line(&self, messages: &[&Message]) -> String {
        let date = messages.iter().find_map(|m| date_of(m));
        let request = messages
            .iter()
            .find(|m| m.role == Role::User && !m.is_tool_result())
            .map(|m| self.quote(&m.content.texts().join(" ")))
            .filter(|t| !t.is_empty());
        let mut tools: Vec<(&str, usize)> = Vec::new();
        for c in messages.iter().flat_map(|m| m.calls()) {
            match tools.iter_mut().find(|(n, _)| *n == c.name) {
                Some((_, k)) => *k += 1,
                None => tools.push((c.name.as_str(), 1)),
            }
        }
        let conclusion = messages
            .iter()
            .rev()
            .filter(|m| m.role == Role::Assistant)
            .map(|m| self.quote(&m.content.texts().join(" ")))
            .find(|t| !t.is_empty());
        let mut line = String::from("-");
        if let Some(d) = date {
            line.push_str(&format!(" [{d}]"));
        }
        if let Some(r) = request {
            line.push_str(&format!(" Asked: {}", end_sentence(&r)));
        }
        if !tools.is_empty() {
            let names: Vec<String> = tools
                .iter()
                .map(|(n, k)| {
                    if *k > 1 {
                        format!("{n} x{k}")
                    } else {
                        n.to_string()
                    }
                })
                .collect();
            line.push_str(&format!(" Tools: {}.", names.join(", ")));
        }
        if let Some(c) = conclusion {
            line.push_str(&format!(" Concluded: {}", end_sentence(&c)));
        }
        line
    }
}

/// `text` ending with a sentence terminator.
fn end_sentence(text: &str) -> String {
    if text.ends_with(['.', '!', '?', '…']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

impl Summarizer for DigestSummarizer {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, SummarizeError> {
        let mut lines: Vec<String> = input
            .previous
            .map(|p| p.text().lines().map(str::to_string).collect())
            .unwrap_or_default();
        // The exchanges: a new one at each user message that is not only
        // tool results.
        let all: Vec<&Message> = input
            .evicted
            .iter()
            .flat_map(|u| u.messages.iter().copied())
            .collect();
        let mut start = 0;
        for i in 1..=all.len() {
            let opens = all
                .get(i)
                .is_some_and(|m| m.role == Role::User && !m.is_tool_result());
            if i == all.len() || opens {
                lines.push(self.exchange_line(&all[start..i]));
                start = i;
            }
        }
        // The bound: drop the oldest lines (an earlier omission line first).
        let budget = usize::try_from(input.max_tokens.max(1))
            .unwrap_or(usize::MAX)
            .saturating_mul(BYTES_PER_TOKEN);
        let mut omitted = 0usize;
        if let Some(first) = lines.first()
            && let Some(n) = first
                .strip_prefix("- (")
                .and_then(|r| r.split_once(" earlier exchanges omitted.)"))
                .and_then(|(n, _)| n.parse::<usize>().ok())
        {
            omitted = n;
            lines.remove(0);
        }
        let size = |ls: &[String], om: usize| {
            ls.iter().map(|l| l.len() + 1).sum::<usize>() + if om > 0 { 40 } else { 0 }
        };
        while lines.len() > 1 && size(&lines, omitted) > budget {
            lines.remove(0);
            omitted += 1;
        }
        if omitted > 0 {
            lines.insert(0, format!("- ({omitted} earlier exchanges omitted.)"));
        }
        Ok(lines.join("\n"))
    }

    fn describe(&self) -> String {
        "digest".to_string()
    }
}
