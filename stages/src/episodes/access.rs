//! How an episode stage's model calls run ([`ModelAccess`]) and how its input errors name it
//! ([`named`]): what every episode module that calls a model or reports a stage's input error
//! needs, in a module of its own so they import it from here rather than from `episodes`.

/// How an episode stage's model calls run: where they are recorded and replayed, whether the
/// network may be used, where prompt files are found, and the stage name errors begin with.
/// The kinds build it from their context, so agents and simulators never see the engine's.
#[derive(Clone, Copy)]
pub struct ModelAccess<'a> {
    /// The stage, for messages (`stage `episodes_llm`: …`).
    pub stage: &'a str,
    /// The stage's variant (`""` when not swept): with the stage, the flow its model calls
    /// belong to in the endpoint's fair queue (`llm::budget`).
    pub variant: &'a str,
    /// The store model requests are recorded in.
    pub cache: &'a dyn prefflow_engine::store::Store,
    /// Serve every request from `cache`; a miss is an error.
    pub offline: bool,
    /// What relative prompt directories are resolved against.
    pub workdir: &'a std::path::Path,
    /// Where the stage's model calls are counted (roles `agent` and `user`), when metered.
    pub usage: Option<&'a prefflow_engine::usage::UsageMeter>,
}

impl ModelAccess<'_> {
    /// The flow this stage instance's model calls form in their endpoint's fair queue.
    pub fn flow(&self) -> String {
        format!("{}[{}]", self.stage, self.variant)
    }

    /// `e`, an input error naming the stage (other errors as they are).
    pub fn named(&self, e: impl Into<prefflow_engine::StageError>) -> prefflow_engine::StageError {
        named(self.stage, e.into())
    }
}

/// `e`, an input error naming `stage` (other errors as they are).
pub fn named(stage: &str, e: prefflow_engine::StageError) -> prefflow_engine::StageError {
    use prefflow_engine::StageError;
    match e {
        StageError::Input(m) => StageError::Input(format!("stage `{stage}`: {m}")),
        other => other,
    }
}
