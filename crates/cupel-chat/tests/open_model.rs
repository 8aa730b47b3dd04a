//! Trimming for an open model counted with its own tokenizer: a Hugging Face
//! `tokenizer.json` (a word-level one, written here; nothing is downloaded)
//! through `TextCounter`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_chat::{Message, MessageCounter, TextCounter, Trim, trim};
use cupel_tokens::HuggingFaceCounter;

/// One token per whitespace-separated word ("[UNK]" for words not in the
/// vocabulary, still one token each).
const WORD_LEVEL: &str = r#"{
  "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
  "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
  "post_processor": null, "decoder": null,
  "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "user": 1, "assistant": 2, "system": 3},
            "unk_token": "[UNK]"}
}"#;

fn counter() -> TextCounter<HuggingFaceCounter> {
    let hf = HuggingFaceCounter::from_bytes(WORD_LEVEL.as_bytes()).unwrap();
    // Say the template wraps each message in 3 tokens and appends 2.
    TextCounter::new(hf, "word-level test tokenizer")
        .per_message(3)
        .per_request(2)
}

#[test]
fn counts_messages_with_the_models_tokenizer() {
    let c = counter();
    // 3 framing + "user" (1) + "my parcel is late" (4) = 8.
    assert_eq!(c.count_message(&Message::user("my parcel is late")), 8);
    // 3 + "system" (1) + "be brief" (2) = 6.
    assert_eq!(c.count_message(&Message::system("be brief")), 6);
    assert_eq!(c.count_request(None), 2);
}

#[test]
fn trims_a_conversation_for_an_open_model() {
    let messages = vec![
        Message::system("be brief"),                  // 6
        Message::user("my parcel is late"),           // 8
        Message::assistant("which order number"),     // 3 + 1 + 3 = 7
        Message::user("order forty two please"),      // 3 + 1 + 4 = 8
        Message::assistant("it ships on friday"),     // 3 + 1 + 4 = 8
        Message::user("thanks can i change address"), // 3 + 1 + 5 = 9
    ];
    // Budget 33: request 2 + system 6 = 8, leaving 25. Newest first (each
    // message its own unit): #5 (9) -> 16 left; #4 (8) -> 8; #3 (8) -> 0;
    // #2 (7) does not fit, and nothing older enters. #3 is a user message,
    // so the window starts right. Window: #0, #3, #4, #5 = 2 + 6 + 8 + 8 + 9 = 33.
    let out = trim(&messages, &Trim::openai(33).counter(counter())).unwrap();
    assert_eq!(out.positions, [0, 3, 4, 5]);
    assert_eq!(out.tokens.window, 33);
    assert_eq!(out.counter, "word-level test tokenizer");
}
