//! Conversions from and to the message types of other Rust LLM crates
//! (feature `async-openai`): its chat request messages and its Responses
//! input items.
//!
//! A conversion goes through the OpenAI wire format that both sides speak,
//! so every field survives: what `async-openai` serialises is read by this
//! crate's OpenAI reader (unknown fields kept), and what this crate writes is
//! read back by `async-openai`'s own deserializer.

use async_openai::types::chat::ChatCompletionRequestMessage;
use async_openai::types::responses::InputItem;

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

/// `async-openai` Responses input items as [`Message`]s, read as the
/// Responses transcript reader reads an `input` array
/// ([`Format::Responses`]): a `message` item is a message of its role, and a
/// `function_call`, `function_call_output`, `reasoning` or compaction item is
/// one message each, kept whole, so a call and its output can be grouped and
/// trimmed as one unit.
///
/// ```
/// use async_openai::types::responses::InputItem;
/// use cupel_chat::{Role, from_async_openai_responses};
///
/// let input: Vec<InputItem> = serde_json::from_str(r#"[
///   {"role": "user", "content": "What is the weather in Paris?"},
///   {"type": "function_call", "call_id": "call_1", "name": "get_weather",
///    "arguments": "{\"city\":\"Paris\"}"},
///   {"type": "function_call_output", "call_id": "call_1", "output": "18C, cloudy"}
/// ]"#)?;
/// let messages = from_async_openai_responses(&input)?;
/// assert_eq!(messages[0].role, Role::User);
/// assert_eq!(messages[1].calls().next().map(|c| c.id.as_str()), Some("call_1"));
/// assert_eq!(messages[2].answered_ids().collect::<Vec<_>>(), ["call_1"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`ChatError::Shape`] naming the item (`input[i]`) if one cannot be read
/// (only possible for a value `async-openai` itself would not produce).
pub fn from_async_openai_responses(items: &[InputItem]) -> Result<Vec<Message>, ChatError> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let path = format!("input[{i}]");
            let value = serde_json::to_value(item).map_err(|e| ChatError::Shape {
                path: path.clone(),
                message: format!("async-openai could not write the item: {e}"),
            })?;
            message_from_value(value, Format::Responses, &path)
        })
        .collect()
}

/// [`Message`]s (a trimmed Responses window, say) as `async-openai`
/// Responses input items, ready for a `CreateResponse`'s `input`.
///
/// ```
/// use async_openai::types::responses::{InputItem, Item};
/// use cupel_chat::{Message, to_async_openai_responses};
///
/// let items = to_async_openai_responses(&[
///     Message::user("What is the weather in Paris?"),
///     Message::assistant("Let me check."),
/// ])?;
/// assert_eq!(items.len(), 2);
/// assert!(matches!(items[0], InputItem::EasyMessage(_) | InputItem::Item(Item::Message(_))));
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
///
/// # Errors
/// [`ChatError::Shape`] naming the message (`input[i]`) when `async-openai`
/// has no type for it, such as an item type it does not model.
pub fn to_async_openai_responses(messages: &[Message]) -> Result<Vec<InputItem>, ChatError> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            serde_json::from_value(message_to_value(m, Format::Responses)).map_err(|e| {
                ChatError::Shape {
                    path: format!("input[{i}]"),
                    message: format!("async-openai cannot represent this item: {e}"),
                }
            })
        })
        .collect()
}
