//! Conversions from and to the message types of other Rust LLM crates
//! (feature `async-openai`).
//!
//! A conversion goes through the OpenAI wire format that both sides speak,
//! so every field survives: what `async-openai` serialises is read by this
//! crate's OpenAI reader (unknown fields kept), and what this crate writes is
//! read back by `async-openai`'s own deserializer.

use async_openai::types::chat::ChatCompletionRequestMessage;

use crate::wire::{message_from_value, message_to_value};
use crate::{ChatError, Format, Message};

/// `async-openai` chat request messages as [`Message`]s.
///
/// ```
/// use async_openai::types::chat::ChatCompletionRequestMessage;
/// use cupel_chat::{Role, from_async_openai};
///
/// let request: Vec<ChatCompletionRequestMessage> = serde_json::from_str(
///     r#"[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]"#,
/// )?;
/// let messages = from_async_openai(&request)?;
/// assert_eq!(messages[1].role, Role::User);
/// assert_eq!(messages[1].text(), "Hi");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`ChatError::Shape`] naming the message (`messages[i]`) if one cannot be
/// read (only possible for a value `async-openai` itself would not produce).
pub fn from_async_openai(
    messages: &[ChatCompletionRequestMessage],
) -> Result<Vec<Message>, ChatError> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let path = format!("messages[{i}]");
            let value = serde_json::to_value(m).map_err(|e| ChatError::Shape {
                path: path.clone(),
                message: format!("async-openai could not write the message: {e}"),
            })?;
            message_from_value(value, Format::OpenAi, &path)
        })
        .collect()
}

/// [`Message`]s (a trimmed window, say) as `async-openai` chat request
/// messages, ready for its client.
///
/// ```
/// use cupel_chat::{Message, to_async_openai};
/// use async_openai::types::chat::ChatCompletionRequestMessage;
///
/// let out = to_async_openai(&[Message::system("Be brief."), Message::user("Hi")])?;
/// assert!(matches!(out[0], ChatCompletionRequestMessage::System(_)));
/// assert!(matches!(out[1], ChatCompletionRequestMessage::User(_)));
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
///
/// # Errors
/// [`ChatError::Shape`] naming the message (`messages[i]`) when
/// `async-openai` has no type for it: a role it does not model, or an
/// Anthropic-only part such as a thinking block.
pub fn to_async_openai(
    messages: &[Message],
) -> Result<Vec<ChatCompletionRequestMessage>, ChatError> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            serde_json::from_value(message_to_value(m, Format::OpenAi)).map_err(|e| {
                ChatError::Shape {
                    path: format!("messages[{i}]"),
                    message: format!("async-openai cannot represent this message: {e}"),
                }
            })
        })
        .collect()
}
