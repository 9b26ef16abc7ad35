//! The one prompt-token counter: how many tokens a request will cost before it is sent.
//!
//! Two things need the count before a provider says it: the client's token budget, which
//! reserves a request's tokens before sending it (see `budget`), and `plan`'s estimate of what a
//! run will cost. Both use the functions of this module, so they agree.
//!
//! **Method: characters / 4** ([`METHOD`]). Each text counts `ceil(chars / 4)` tokens, each
//! message adds [`PER_MESSAGE`] tokens of framing (role, separators), tool calls count their
//! name and arguments, and the offered tools count their JSON schema. No tokenizer is used: the
//! models prefflow talks to use different vocabularies (OpenAI's o200k, Llama's, Qwen's,
//! Anthropic's), a tokenizer crate would carry megabytes of vocabulary for one family only, and
//! counting a 100k-token prompt must cost microseconds, not tens of milliseconds, since it is
//! done for every request. For English prose and JSON, four characters per token is within
//! about ±15% of those tokenizers. The client does not rely on it being exact: it learns the
//! ratio of the provider's reported `usage.prompt_tokens` to this estimate per endpoint and
//! scales later reservations by it (see `budget`), so a systematic error is corrected after the
//! first answers.

use super::types::{ChatMessage, ChatRequest};

/// How [`text_tokens`] and [`prompt_tokens`] count, for messages that report an estimate.
pub const METHOD: &str = "chars/4";

/// Framing tokens counted per message (role name and separators), as chat formats add them.
pub const PER_MESSAGE: u64 = 4;

/// Framing tokens counted once per request (the assistant's reply primer).
pub const PER_REQUEST: u64 = 3;

/// Estimated tokens of `text`: `ceil(chars / 4)`.
pub fn text_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Estimated tokens of one message: its text, its tool calls (name and arguments) and
/// [`PER_MESSAGE`] of framing.
pub fn message_tokens(message: &ChatMessage) -> u64 {
    let text = message.content.as_deref().map_or(0, text_tokens);
    let calls: u64 = message
        .tool_calls
        .iter()
        .map(|c| text_tokens(&c.function.name) + text_tokens(&c.function.arguments))
        .sum();
    PER_MESSAGE + text + calls
}

/// Estimated prompt tokens of a chat request as a provider would count them: every message,
/// the offered tools' JSON schemas, and [`PER_REQUEST`]. The budget reserves this (scaled by
/// what the endpoint's answers taught it) before sending; `plan` sums it over a run.
pub fn prompt_tokens(request: &ChatRequest) -> u64 {
    let messages: u64 = request.messages.iter().map(message_tokens).sum();
    let tools: u64 = request
        .tools
        .iter()
        .map(|t| text_tokens(&t.function.to_string()))
        .sum();
    PER_REQUEST + messages + tools
}

/// Estimated tokens of the inputs of one embeddings request.
pub fn embedding_tokens(texts: &[String]) -> u64 {
    texts.iter().map(|t| text_tokens(t)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn texts_count_a_token_per_four_characters_rounded_up() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        // Characters, not bytes: four accented letters are one token, not two.
        assert_eq!(text_tokens("éééé"), 1);
    }

    #[test]
    fn a_request_counts_messages_framing_and_tools() {
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new("system", "a".repeat(400)),
                ChatMessage::new("user", "b".repeat(40)),
            ],
            tools: vec![ToolSpec {
                kind: "function".into(),
                function: serde_json::json!({ "name": "x".repeat(30) }),
            }],
            json_mode: false,
        };
        let tool = text_tokens(&request.tools[0].function.to_string());
        assert_eq!(
            prompt_tokens(&request),
            PER_REQUEST + (PER_MESSAGE + 100) + (PER_MESSAGE + 10) + tool
        );
        assert!(tool >= 10, "the tool's schema counts: {tool}");
    }
}
