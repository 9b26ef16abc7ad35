//! The channel `ask_user` goes through. The phone only forwards questions; who answers (a
//! scripted simulator, an LLM, a human) is plugged in by the caller.

/// Answers questions the agent asks the user (`Send + Sync`, so a phone can live in an episode
/// or a judgement that awaits its model on a multi-threaded runtime).
pub trait AskUser: Send + Sync {
    /// Returns the user's reply to `question`.
    fn ask(&mut self, question: &str) -> String;
}

impl<F: FnMut(&str) -> String + Send + Sync> AskUser for F {
    fn ask(&mut self, question: &str) -> String {
        self(question)
    }
}

/// A user who knows nothing; the default when no simulator is plugged in.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoUser;

impl AskUser for NoUser {
    fn ask(&mut self, _question: &str) -> String {
        "I don't know.".to_string()
    }
}
