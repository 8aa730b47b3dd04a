//! Ageing old tool results (an extension: `spec/22-variants.md`, "Chat"):
//! a tool result older than K exchanges may go into the window shortened —
//! head and tail, then a one-line placeholder — before its unit is dropped.
//! The tool call is never touched, so the transcript stays valid.

use crate::error::ChatError;
use cupel_core::{ContextItem, ContextKind, HeadTail, Placeholder, TokenCounter};

use crate::count::MessageCounter;
use crate::message::{Content, Message, Part, Role};

/// The [`Trim::age_tool_results`](crate::Trim::age_tool_results) option:
/// which tool results count as old and the two shorter forms they are
/// offered in.
///
/// ```
/// use cupel_chat::AgeToolResults;
/// let aging = AgeToolResults::new(2)
///     .truncate_to(300)?
///     .placeholder("[{meta:tool} output of {tokens} tokens omitted]")?;
/// assert_eq!(aging.after_exchanges(), 2);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AgeToolResults {
    after_exchanges: usize,
    truncate_to: i64,
    /// `None`: the default template.
    placeholder: Option<Placeholder>,
    /// A session ages at a cut only when that frees at least this many tokens.
    clear_at_least: i64,
}

/// The default placeholder template.
const DEFAULT_PLACEHOLDER: &str = "[tool result of {tokens} tokens omitted]";

impl AgeToolResults {
    /// Ages results with at least `after_exchanges` user messages after
    /// them (0: every result), truncated to 200 tokens, then the placeholder
    /// `[tool result of {tokens} tokens omitted]`.
    pub fn new(after_exchanges: usize) -> Self {
        Self {
            after_exchanges,
            truncate_to: 200,
            placeholder: None,
            clear_at_least: 0,
        }
    }

    /// In a [`CacheSession`](crate::CacheSession): shorten results at a cut
    /// only when the cut's shortening frees at least `tokens` in all
    /// (default 0: whenever it frees any), in the spirit of Anthropic's
    /// context-management `clear_at_least`: a shortening that frees little
    /// still costs the rewrite of everything after it, so below the
    /// threshold the results are left whole. Negative values count as 0.
    /// A stateless [`trim`](crate::trim) ignores it.
    pub fn clear_at_least(mut self, tokens: i64) -> Self {
        self.clear_at_least = tokens.max(0);
        self
    }

    /// The threshold of [`clear_at_least`](Self::clear_at_least).
    pub fn min_clear(&self) -> i64 {
        self.clear_at_least
    }

    /// The size of the head+tail form, in message tokens (the message's
    /// overhead included), as the trim's counter counts them.
    ///
    /// # Errors
    /// [`ChatError::Core`] holding [`CupelError::InvalidArgument`](cupel_core::CupelError::InvalidArgument) for
    /// `tokens <= 0`.
    pub fn truncate_to(mut self, tokens: i64) -> Result<Self, ChatError> {
        HeadTail::new(tokens)?;
        self.truncate_to = tokens;
        Ok(self)
    }

    /// The placeholder template (see [`Placeholder`]): `{tokens}` is the
    /// whole message's count (for a message answering several calls: what
    /// that result's text adds to it), `{meta:tool}` the called tool's name,
    /// `{meta:call_id}` the call id. A message holding several results gets
    /// one placeholder per result, and its head and tail form gives each
    /// result an equal share of the size.
    ///
    /// # Errors
    /// [`ChatError::Core`] holding [`Placeholder::parse`]'s error.
    pub fn placeholder(mut self, template: &str) -> Result<Self, ChatError> {
        self.placeholder = Some(Placeholder::parse(template)?);
        Ok(self)
    }

    /// The age, in exchanges, from which a result is shortened.
    pub fn after_exchanges(&self) -> usize {
        self.after_exchanges
    }

    /// The shorter forms of the aged tool results of `messages`, by
    /// position: for each, its head+tail and placeholder forms with their
    /// tokens, each smaller than the form before (a form that is not is
    /// left out). `tool_names` maps a call id's position to the tool name.
    pub(crate) fn forms(
        &self,
        messages: &[Message],
        tokens: &[i64],
        counter: &dyn MessageCounter,
        tool_name: impl Fn(&str) -> Option<String>,
    ) -> Vec<Vec<(Message, i64)>> {
        self.aged(messages)
            .into_iter()
            .zip(messages)
            .enumerate()
            .map(|(i, (aged, m))| {
                if !aged {
                    return Vec::new();
                }
                let whole = tokens.get(i).copied().unwrap_or(0);
                self.forms_of(m, whole, counter, &tool_name)
            })
            .collect()
    }

    /// Whether the message at each position is old enough to be shortened
    /// (at least [`after_exchanges`](Self::after_exchanges) user messages
    /// after it) and holds a tool result.
    pub(crate) fn aged(&self, messages: &[Message]) -> Vec<bool> {
        let mut users_after = 0usize;
        let mut out = vec![false; messages.len()];
        for (i, m) in messages.iter().enumerate().rev() {
            if m.role == Role::User && !m.is_tool_result() {
                users_after += 1;
                continue;
            }
            out[i] = users_after >= self.after_exchanges && !tool_results(m).is_empty();
        }
        out
    }

    /// The shorter forms of one aged message `m` of `whole` tokens (see
    /// [`forms`](Self::forms)); empty when it holds no tool result or no
    /// form is smaller.
    pub(crate) fn forms_of(
        &self,
        m: &Message,
        whole: i64,
        counter: &dyn MessageCounter,
        tool_name: &impl Fn(&str) -> Option<String>,
    ) -> Vec<(Message, i64)> {
        // The size was checked by `truncate_to` and the default template
        // parses: neither fallback below is ever taken.
        let truncate = HeadTail::new(self.truncate_to).ok();
        let placeholder = match &self.placeholder {
            Some(p) => Some(p.clone()),
            None => Placeholder::parse(DEFAULT_PLACEHOLDER).ok(),
        };
        {
            let results = tool_results(m);
            if results.is_empty() {
                return Vec::new();
            }
            let n = results.len();
            let empty = vec![""; n];
            let base = counter.count_message(&with_result_texts(m, &empty));
            let text_of = |k: usize| ResultText {
                counter,
                template: m,
                index: k,
                count: n,
                base,
            };
            let mut forms = Vec::new();
            let mut last = whole;
            // Head and tail: the texts share the size minus what the message
            // costs without them, equally.
            let share = truncate
                .map(|h| h.max_tokens().saturating_sub(base) / n as i64)
                .filter(|&t| t > 0)
                .and_then(|t| HeadTail::new(t).ok());
            if let Some(h) = share {
                let mut shortened = false;
                let texts: Vec<String> = results
                    .iter()
                    .enumerate()
                    .map(|(k, (_, text))| match h.truncate(text, &text_of(k)) {
                        Ok(Some(v)) => {
                            shortened = true;
                            v.content().to_owned()
                        }
                        _ => text.clone(),
                    })
                    .collect();
                if shortened {
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    let short = with_result_texts(m, &refs);
                    let t = counter.count_message(&short).max(0);
                    if t < last {
                        last = t;
                        forms.push((short, t));
                    }
                }
            }
            if let Some(p) = &placeholder {
                let texts: Vec<String> = results
                    .iter()
                    .enumerate()
                    .filter_map(|(k, (call_id, text))| {
                        // One result: the whole message's count; several:
                        // what each result's text adds to the message.
                        let own = if n == 1 {
                            whole
                        } else {
                            text_of(k).count_tokens(text)
                        };
                        let mut item =
                            ContextItem::builder(text.clone(), own).kind(ContextKind::TOOL_OUTPUT);
                        item = item.metadata("call_id", call_id.clone());
                        if let Some(name) = tool_name(call_id) {
                            item = item.metadata("tool", name);
                        }
                        item.build().ok().map(|item| p.render(&item))
                    })
                    .collect();
                if texts.len() == n {
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    let short = with_result_texts(m, &refs);
                    let t = counter.count_message(&short).max(0);
                    if t < last {
                        forms.push((short, t));
                    }
                }
            }
            forms
        }
    }
}

/// Counts a text as what it adds to the message `template` when it is the
/// content of its `index`-th tool result and the others are empty (minus
/// the message with every result empty), so that the head+tail generator
/// counts the way the trim does.
struct ResultText<'a> {
    counter: &'a dyn MessageCounter,
    template: &'a Message,
    index: usize,
    count: usize,
    base: i64,
}

impl TokenCounter for ResultText<'_> {
    fn count_tokens(&self, text: &str) -> i64 {
        let mut texts = vec![""; self.count];
        if let Some(slot) = texts.get_mut(self.index) {
            *slot = text;
        }
        self.counter
            .count_message(&with_result_texts(self.template, &texts))
            .saturating_sub(self.base)
    }
}

/// The call ids and texts of the tool results `m` holds, in order: an
/// OpenAI `tool` message has one; an Anthropic user message has one per
/// `tool_result` block (its other blocks are left as they are).
fn tool_results(m: &Message) -> Vec<(String, String)> {
    if m.role == Role::Tool {
        return m
            .tool_call_id
            .clone()
            .map(|id| vec![(id, m.text())])
            .unwrap_or_default();
    }
    m.content
        .parts()
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some((r.call_id.clone(), r.content.texts().join("\n"))),
            _ => None,
        })
        .collect()
}

/// `m` with its tool results' contents replaced by `texts`, in order.
fn with_result_texts(m: &Message, texts: &[&str]) -> Message {
    let mut out = m.clone();
    if out.role == Role::Tool {
        if let Some(text) = texts.first() {
            out.content = Content::Text((*text).to_owned());
        }
    } else if let Content::Parts(parts) = &mut out.content {
        let results = parts.iter_mut().filter_map(|p| match p {
            Part::ToolResult(r) => Some(r),
            _ => None,
        });
        for (r, text) in results.zip(texts) {
            r.content = Content::Text((*text).to_owned());
        }
    }
    out
}
