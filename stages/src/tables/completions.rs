//! The columns `llm_complete` appends to each row of its input. Its `completions` table is open
//! (the input's columns come first, whatever they are), so these are declared here, once, for
//! the writer rather than in the table's definition.

crate::tables::row::table! {
    /// One model reply, as `llm_complete` appends it to its input row.
    pub struct CompletionRow as REPLY_COLUMNS ("completions", "the columns `llm_complete` appends to each input row") {
        /// the reply's text (null when the model sent none)
        pub reply: Option<String>,
        /// prompt tokens
        pub prompt_tokens: u64,
        /// completion tokens
        pub completion_tokens: u64,
        /// whether the reply came from the record/replay cache
        pub from_cache: bool,
        /// the request's cost
        pub cost: f64,
    }
}
