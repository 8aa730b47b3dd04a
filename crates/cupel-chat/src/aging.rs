//! Ageing old tool results (an extension: `spec/22-variants.md`, "Chat"):
//! a tool result older than K exchanges may go into the window shortened —
//! head and tail, then a one-line placeholder — before its unit is dropped.
//! The tool call is never touched, so the transcript stays valid.

use cupel_core::{ContextItem, ContextKind, CupelError, HeadTail, Placeholder, TokenCounter};

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
        }
    }

    /// The size of the head+tail form, in message tokens (the message's
    /// overhead included), as the trim's counter counts them.
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] for `tokens <= 0`.
    pub fn truncate_to(mut self, tokens: i64) -> Result<Self, CupelError> {
        HeadTail::new(tokens)?;
        self.truncate_to = tokens;
        Ok(self)
    }

    /// The placeholder template (see [`Placeholder`]): `{tokens}` is the
    /// whole message's count, `{meta:tool}` the called tool's name,
    /// `{meta:call_id}` the call id.
    ///
    /// # Errors
    /// As [`Placeholder::parse`].
    pub fn placeholder(mut self, template: &str) -> Result<Self, CupelError> {
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
        // The size was checked by `truncate_to` and the default template
        // parses: neither fallback below is ever taken.
        let truncate = HeadTail::new(self.truncate_to).ok();
        let placeholder = match &self.placeholder {
            Some(p) => Some(p.clone()),
            None => Placeholder::parse(DEFAULT_PLACEHOLDER).ok(),
        };
        let mut users_after = 0usize;
        let mut out: Vec<Vec<(Message, i64)>> = vec![Vec::new(); messages.len()];
        for (i, m) in messages.iter().enumerate().rev() {
            if m.role == Role::User && !m.is_tool_result() {
                users_after += 1;
                continue;
            }
            if users_after < self.after_exchanges {
                continue;
            }
            let Some((call_id, text)) = single_result(m) else {
                continue;
            };
            let whole = tokens.get(i).copied().unwrap_or(0);
            let adapter = MessageText {
                counter,
                template: m,
                base: counter.count_message(&with_result_text(m, "")),
            };
            let mut forms = Vec::new();
            let mut last = whole;
            // The text gets the size minus what the message costs without it.
            let sized = truncate
                .map(|h| h.max_tokens().saturating_sub(adapter.base))
                .filter(|&t| t > 0)
                .and_then(|t| HeadTail::new(t).ok());
            if let Some(Ok(Some(v))) = sized.map(|h| h.truncate(&text, &adapter)) {
                let short = with_result_text(m, v.content());
                let t = counter.count_message(&short).max(0);
                if t < last {
                    last = t;
                    forms.push((short, t));
                }
            }
            let mut item = ContextItem::builder(text, whole).kind(ContextKind::TOOL_OUTPUT);
            item = item.metadata("call_id", call_id.clone());
            if let Some(name) = tool_name(&call_id) {
                item = item.metadata("tool", name);
            }
            if let (Ok(item), Some(p)) = (item.build(), &placeholder) {
                let short = with_result_text(m, &p.render(&item));
                let t = counter.count_message(&short).max(0);
                if t < last {
                    forms.push((short, t));
                }
            }
            out[i] = forms;
        }
        out
    }
}

/// Counts a text as what it adds to the message `template` (the message
/// with this text as its result, minus the message with an empty result),
/// so that the head+tail generator counts the way the trim does.
struct MessageText<'a> {
    counter: &'a dyn MessageCounter,
    template: &'a Message,
    base: i64,
}

impl TokenCounter for MessageText<'_> {
    fn count_tokens(&self, text: &str) -> i64 {
        self.counter
            .count_message(&with_result_text(self.template, text))
            .saturating_sub(self.base)
    }
}

/// The call id and text of a message that is exactly one tool result (an
/// OpenAI `tool` message, or an Anthropic user message whose only block is
/// one `tool_result`); messages with several results are never aged.
fn single_result(m: &Message) -> Option<(String, String)> {
    if m.role == Role::Tool {
        return m.tool_call_id.clone().map(|id| (id, m.text()));
    }
    match m.content.parts() {
        [Part::ToolResult(r)] => Some((r.call_id.clone(), r.content.texts().join("\n"))),
        _ => None,
    }
}

/// `m` with its one tool result's content replaced by `text`.
fn with_result_text(m: &Message, text: &str) -> Message {
    let mut out = m.clone();
    if out.role == Role::Tool {
        out.content = Content::Text(text.to_owned());
    } else if let Content::Parts(parts) = &mut out.content
        && let [Part::ToolResult(r)] = parts.as_mut_slice()
    {
        r.content = Content::Text(text.to_owned());
    }
    out
}
