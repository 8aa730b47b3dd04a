//! (h) Chat transcripts: arbitrary text as an OpenAI Chat Completions,
//! OpenAI Responses, Anthropic or Gemini document (a bare array or a whole
//! request body; the format detected), read, written back and
//! trimmed to a budget taken from the input. Asserts no panic; that writing
//! what was read gives the input text itself, byte for byte, and reading the
//! model's value back gives the same value; that every window is one the
//! provider accepts: within the budget, every tool call answered and every
//! answer's call present, after the pinned system / developer prompt the
//! first message is a user message (or a Responses compaction item), and a
//! transcript with a conversation
//! gives a window with one; and, input against output, that every kept
//! message the trim did not rewrite is written as its input text, byte for
//! byte, and a rewritten one is a mixed turn at the window's front.
#![no_main]

use std::collections::BTreeSet;

use cupel_chat::{Role, Transcript, Trim, trim_transcript};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&budget, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Ok(doc) = Transcript::parse(text) else {
        return;
    };
    // Faithful: nothing changed, the same bytes.
    assert_eq!(doc.to_json(), text, "writing what was read changed its text");
    // Round trip: what is written reads back as the same document.
    let written = doc.to_value();
    let back = Transcript::from_value(written.clone(), Some(doc.format()))
        .expect("a written transcript reads back");
    assert_eq!(back.to_value(), written, "round trip changed the document");

    let max_tokens = i64::from(budget) * 16;
    let opts = Trim::new(doc.format(), max_tokens);
    let Ok((window, out)) = trim_transcript(&doc, &opts) else {
        return;
    };
    assert!(
        out.tokens.window <= max_tokens,
        "window of {} tokens over the budget {max_tokens}",
        out.tokens.window
    );
    let kept = window.messages();
    // A conversation in, a conversation out: an input with messages besides
    // the prompts never yields a window of prompts only (providers refuse it).
    if doc
        .messages()
        .iter()
        .any(|m| !matches!(m.role, Role::System | Role::Developer))
    {
        assert!(
            kept.iter()
                .any(|m| !matches!(m.role, Role::System | Role::Developer)),
            "a window without conversation"
        );
    }
    let calls: BTreeSet<&str> = kept
        .iter()
        .flat_map(|m| m.calls().map(|c| c.id.as_str()))
        .collect();
    let answered: BTreeSet<&str> = kept.iter().flat_map(|m| m.answered_ids()).collect();
    assert_eq!(
        calls, answered,
        "a call without its result or a result without its call"
    );
    if let Some(first) = kept
        .iter()
        .find(|m| !matches!(m.role, Role::System | Role::Developer))
    {
        assert!(
            first.role == Role::User || first.role == Role::Other("compaction".into()),
            "the window starts after the system prompt with {:?}",
            first.role
        );
    }
    // Positions ascend and name input messages.
    assert!(out.positions.windows(2).all(|w| w[0] < w[1]));
    assert!(out.positions.iter().all(|&p| p < doc.messages().len()));
    // Input against output: the window's text holds each kept message as
    // its input text, except the one rewritten at the front.
    let text_out = doc.window_json(&out);
    assert_eq!(text_out, window.to_json(), "two writers of one window disagree");
    let back = Transcript::parse_as(&text_out, doc.format()).expect("the window reads back");
    assert_eq!(back.messages(), window.messages(), "the window reads back as written");
    for (k, &p) in out.positions.iter().enumerate() {
        match out.shortened.get(&p) {
            None => assert_eq!(
                back.message_json(k),
                doc.message_json(p),
                "kept message #{p} was not written as read"
            ),
            Some(_) => assert!(
                doc.messages()[p].is_mixed_turn(),
                "#{p} rewritten but not a mixed turn"
            ),
        }
    }
});
