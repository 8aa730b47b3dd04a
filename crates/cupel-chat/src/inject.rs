//! Synthesized messages: text Cupel writes into a window itself (a running
//! summary of what was evicted, recalled older turns), built in a form each
//! provider accepts and placed right after the pinned prefix.
//!
//! The form per format (`spec/19-chat-transcripts.md`, "Synthesized
//! messages"):
//!
//! * **OpenAI Chat Completions**: a `system` message (a `developer` message
//!   when the pinned prompts are developer messages only). OpenAI takes
//!   system and developer messages anywhere in `messages`, so the message
//!   changes no role rule of the conversation after it: the window still
//!   starts its conversation with the same message.
//! * **Anthropic Messages**: a `user` message holding one text block.
//!   Anthropic has no system role inside `messages` (a `system` message is
//!   written to the top-level `system` field, which would rewrite the
//!   cached system prompt), and its conversation must start with a user
//!   turn, which the synthesized message now does. Anthropic combines
//!   consecutive user turns into one turn (Messages API reference,
//!   <https://docs.claude.com/en/api/messages>, read 2026-11-27), so a
//!   user message before it (a pinned task) or after it (the window's first
//!   user message) is accepted; what Anthropic refuses in a combined turn
//!   is `tool_result` blocks after other content, so the message is never
//!   placed right before a message that starts with tool results
//!   ([`ChatError::BeforeToolResults`]).
//!
//! In both formats the message is never placed between an assistant
//! message that calls tools and the results answering it
//! ([`ChatError::InsideToolGroup`]): after the pinned prefix no call is
//! open, since pinned messages take no part in tool traffic.
//!
//! ```
//! use cupel_chat::{Format, Message, inject};
//! let mut window = vec![
//!     Message::system("You are a support agent."),
//!     Message::user("Is my refund done?"),
//! ];
//! let summary = inject::synthesize(Format::Anthropic, &window[..1], "Earlier: order 42 was late.");
//! let at = inject::place_after_pinned(&mut window, 1, summary, Format::Anthropic)?;
//! assert_eq!(at, 1);
//! assert_eq!(window[1].role, cupel_chat::Role::User);
//! # Ok::<(), cupel_chat::ChatError>(())
//! ```

use crate::error::ChatError;
use crate::message::{Content, Extra, Message, Part, Role};
use crate::wire::Format;

/// The old name of [`ChatError`] for placements: its variants
/// (`PinnedBeyondWindow`, `InsideToolGroup`, `BeforeToolResults`,
/// `WrongRole`) are [`ChatError`]'s, so `InjectError::BeforeToolResults { .. }`
/// still names one.
#[deprecated(since = "0.2.0", note = "use `ChatError`, the crate's one error type")]
pub type InjectError = ChatError;

/// The role a synthesized message takes in `format`, given the window's
/// pinned messages: Anthropic `user`; OpenAI (Chat Completions and
/// Responses) `developer` when the pinned prompts are developer messages
/// only, else `system` (a Responses request body writes its system messages
/// as its `instructions` string, so the message joins it after the system
/// text); Gemini `system`, which a request body writes as one more text
/// part of its `systemInstruction` (Gemini's `contents` take only user and
/// model turns, which must alternate).
pub fn synthesized_role(format: Format, pinned: &[Message]) -> Role {
    match format {
        Format::Anthropic => Role::User,
        Format::Gemini => Role::System,
        Format::OpenAi | Format::Responses => {
            let prompts: Vec<&Role> = pinned
                .iter()
                .map(|m| &m.role)
                .filter(|r| r.is_prompt())
                .collect();
            if !prompts.is_empty() && prompts.iter().all(|r| **r == Role::Developer) {
                Role::Developer
            } else {
                Role::System
            }
        }
    }
}

/// A synthesized message holding `text`, in the form `format` accepts
/// after the pinned messages `pinned` (see the module docs): OpenAI string
/// content, Anthropic one text block.
///
/// ```
/// use cupel_chat::{Format, Message, Role, inject};
/// let pins = [Message::new(Role::Developer, "Be brief.")];
/// let m = inject::synthesize(Format::OpenAi, &pins, "Summary: ...");
/// assert_eq!(m.role, Role::Developer);
/// assert_eq!(m.text(), "Summary: ...");
/// ```
pub fn synthesize(format: Format, pinned: &[Message], text: &str) -> Message {
    let role = synthesized_role(format, pinned);
    let content = match format {
        Format::OpenAi | Format::Responses => Content::Text(text.to_string()),
        Format::Anthropic | Format::Gemini => Content::Parts(vec![Part::Text {
            text: text.to_string(),
            extra: Extra::new(),
        }]),
    };
    Message {
        role,
        content,
        name: None,
        tool_calls: None,
        tool_call_id: None,
        extra: Extra::new(),
    }
}

/// Checks that `message` may be inserted into `window` at index `at`
/// (before the message now at `at`) in `format`.
///
/// # Errors
/// [`ChatError::WrongRole`], [`ChatError::InsideToolGroup`],
/// [`ChatError::BeforeToolResults`], [`ChatError::PinnedBeyondWindow`]
/// for `at` past the end.
pub fn check_placement(
    window: &[Message],
    at: usize,
    message: &Message,
    format: Format,
) -> Result<(), ChatError> {
    if at > window.len() {
        return Err(ChatError::PinnedBeyondWindow {
            pinned: at,
            len: window.len(),
        });
    }
    let ok_role = match format {
        Format::Anthropic => message.role == Role::User && !message.is_tool_result(),
        Format::OpenAi | Format::Responses => message.role.is_prompt(),
        Format::Gemini => message.role == Role::System,
    };
    if !ok_role {
        return Err(ChatError::WrongRole {
            format: format.as_str(),
            expected: match format {
                Format::Anthropic => "user",
                Format::OpenAi | Format::Responses => "system or developer",
                Format::Gemini => "system",
            },
            found: message.role.to_string(),
        });
    }
    if let Some(prev) = at.checked_sub(1).and_then(|i| window.get(i)) {
        let calls: Vec<&str> = prev.calls().map(|c| c.id.as_str()).collect();
        if !calls.is_empty() || prev.legacy_call().is_some() {
            return Err(ChatError::InsideToolGroup {
                at: at - 1,
                calls: calls.join(", "),
            });
        }
    }
    if let Some(next) = window.get(at) {
        let starts_with_results = next.is_tool_result()
            || matches!(next.content.parts().first(), Some(Part::ToolResult(_)));
        if starts_with_results {
            return Err(ChatError::BeforeToolResults { at });
        }
    }
    Ok(())
}

/// Inserts `message` right after the first `pinned` messages of `window`
/// (the pinned prompts and, when pinned, the task) and returns its index
/// (`pinned`), after [`check_placement`]. A caller placing two
/// synthesized messages (a summary, then recalled turns) places the second
/// at the returned index + 1 with [`place_at`].
///
/// # Errors
/// As [`check_placement`]; the window is unchanged on error.
pub fn place_after_pinned(
    window: &mut Vec<Message>,
    pinned: usize,
    message: Message,
    format: Format,
) -> Result<usize, ChatError> {
    place_at(window, pinned, message, format)
}

/// Inserts `message` at index `at` of `window` after [`check_placement`].
///
/// # Errors
/// As [`check_placement`]; the window is unchanged on error.
pub fn place_at(
    window: &mut Vec<Message>,
    at: usize,
    message: Message,
    format: Format,
) -> Result<usize, ChatError> {
    check_placement(window, at, &message, format)?;
    window.insert(at, message);
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Transcript;

    fn anthropic_doc() -> Transcript {
        Transcript::parse(
            r#"{"model":"m","system":"Be brief.","messages":[
              {"role":"user","content":"Hi"},
              {"role":"assistant","content":"Hello"}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn anthropic_summary_is_a_user_text_block_that_stays_in_messages() {
        let doc = anthropic_doc();
        let mut window = doc.messages().to_vec();
        // #0 is the top-level system prompt (pinned).
        let m = synthesize(Format::Anthropic, &window[..1], "Earlier: X.");
        assert_eq!(
            place_after_pinned(&mut window, 1, m, Format::Anthropic),
            Ok(1)
        );
        let out = doc.with_messages(window).to_value();
        // The system prompt stays top-level and untouched; the summary is
        // the first message (a user turn: Anthropic's start rule holds),
        // followed by the user's own "Hi" (combined by Anthropic).
        assert_eq!(out["system"], "Be brief.");
        assert_eq!(out["messages"][0]["role"], "user");
        assert_eq!(out["messages"][0]["content"][0]["type"], "text");
        assert_eq!(out["messages"][0]["content"][0]["text"], "Earlier: X.");
        assert_eq!(out["messages"][1]["content"], "Hi");
    }

    #[test]
    fn openai_summary_is_a_system_or_developer_message() {
        let sys = [Message::system("s")];
        assert_eq!(synthesized_role(Format::OpenAi, &sys), Role::System);
        let dev = [Message::new(Role::Developer, "d")];
        assert_eq!(synthesized_role(Format::OpenAi, &dev), Role::Developer);
        assert_eq!(synthesized_role(Format::OpenAi, &[]), Role::System);
        let m = synthesize(Format::OpenAi, &sys, "t");
        assert_eq!(m.content, Content::Text("t".into()));
    }

    #[test]
    fn never_between_a_call_and_its_results() {
        let mut window = vec![
            Message::system("s"),
            Message::user("go"),
            Message::assistant_calls([("c1", "f", "{}")]),
            Message::tool("c1", "r"),
        ];
        let m = synthesize(Format::OpenAi, &window[..1], "x");
        assert_eq!(
            place_at(&mut window, 3, m.clone(), Format::OpenAi),
            Err(ChatError::InsideToolGroup {
                at: 2,
                calls: "c1".into()
            })
        );
        // Nor right before the results (the call is then elsewhere).
        let mut w2 = vec![Message::system("s"), Message::tool("c1", "r")];
        assert_eq!(
            place_at(&mut w2, 1, m.clone(), Format::OpenAi),
            Err(ChatError::BeforeToolResults { at: 1 })
        );
        assert_eq!(window.len(), 4, "unchanged on error");
        assert_eq!(place_at(&mut window, 1, m, Format::OpenAi), Ok(1));
    }

    #[test]
    fn wrong_role_and_bad_index_are_refused() {
        let mut window = vec![Message::user("hi")];
        let sys = Message::system("x");
        assert!(matches!(
            place_at(&mut window, 0, sys, Format::Anthropic),
            Err(ChatError::WrongRole { .. })
        ));
        let u = Message::user("x");
        assert_eq!(
            place_at(&mut window, 5, u, Format::Anthropic),
            Err(ChatError::PinnedBeyondWindow { pinned: 5, len: 1 })
        );
    }
}
