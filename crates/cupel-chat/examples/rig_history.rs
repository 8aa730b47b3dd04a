//! A rig agent's history trimmed to a token budget and handed back to rig:
//! tool calls stay with their results, the system prompt stays, and the
//! newest turns that fit are kept.
//!
//! `cargo run -p cupel-rs-chat --features rig --example rig_history`
use cupel_chat::{Trim, from_rig, to_rig, trim};
use rig_core::completion::Message;
use rig_core::message::{
    AssistantContent, AssistantMessage, Text, ToolFunction, ToolName, ToolResultContent,
};
use serde_json::json;

/// What a rig agent's chat history looks like after a few tool-using turns.
fn history() -> Result<Vec<Message>, Box<dyn std::error::Error>> {
    let search = ToolName::new("search_orders")?;
    let mut history = vec![Message::system(
        "You are a support agent for a parcel service.",
    )];
    for order in 40..48 {
        history.push(Message::user(format!("Where is order {order}?")));
        let call = rig_core::message::ToolCall::from_wire(
            format!("call_{order}"),
            ToolFunction::new(search.clone(), json!({ "order": order })),
        );
        history.push(Message::Assistant(AssistantMessage::new(vec![
            AssistantContent::ToolCall(call.clone()),
        ])));
        let log = format!("order {order}: scanned at depot; ").repeat(20);
        history.push(Message::tool_results(vec![
            call.result(vec![ToolResultContent::Text(Text::new(log))]),
        ]));
        history.push(Message::assistant(format!(
            "Order {order} is at the depot."
        )));
    }
    history.push(Message::user(
        "Thanks. Can you combine 46 and 47 into one delivery?",
    ));
    Ok(history)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let history = history()?;
    // rig keeps tool calls and results as content parts, as Anthropic does:
    // trim with the Anthropic rules.
    let messages = from_rig(&history)?;
    let out = trim(&messages, &Trim::anthropic(1_000))?;
    eprint!("{}", out.explain());
    let window: Vec<Message> = to_rig(&out.cloned_messages())?;
    println!(
        "kept {} of {} rig messages: {} of 1,000 tokens",
        window.len(),
        history.len(),
        out.tokens.window
    );
    // `window` goes straight back to rig, e.g. as an agent's chat history.
    Ok(())
}
