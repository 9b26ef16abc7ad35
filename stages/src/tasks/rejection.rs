//! Why a task is rejected: the checks of validation (`validate`) and of its lints (`lints`), in
//! one place both import.

use serde::Serialize;

/// Which validation check rejected a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// The overrides do not apply to the world.
    Overrides,
    /// The reference solution errors or fails a criterion.
    Reference,
    /// The reference never asks for an ask-only value it uses.
    ReferenceAsks,
    /// The defaults-only solution is malformed or passes a personalization criterion.
    Defaults,
    /// A criterion holds on the untouched initial state.
    InitialState,
    /// An inferable slot's evidence is empty or missing from history.
    Evidence,
    /// An ask-only value appears in history.
    Leak,
    /// The reference uses an option the task made unavailable.
    Unavailable,
    /// An ask-only count the instruction's wording contradicts or already states.
    Quantity,
    /// The instruction's premise is already true in app data, or contradicted by the clock.
    Premise,
    /// An ask-only value can be read off app data about the task.
    Derivable,
    /// A criterion on a habit that the user's own records fail.
    Artefacts,
    /// A slot's source differs across a template's variants with no visible reason.
    SourceMismatch,
    /// An ask-only count the instruction's pronouns suggest ("us" → 2; only "me" → 1).
    GuessableCount,
    /// An ask-only choice equal to her latest record of the table, or named in her history.
    VisibleChoice,
    /// The instruction is word for word another task's.
    DuplicateInstruction,
    /// An operation after the first is scored only by where it went, not by what it says.
    UnscoredStep,
    /// A weekday whose natural reading on the world's today is not the day the criteria score.
    WeekdayDate,
}

impl Check {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Overrides => "overrides",
            Check::Reference => "reference",
            Check::ReferenceAsks => "reference_asks",
            Check::Defaults => "defaults",
            Check::InitialState => "initial_state",
            Check::Evidence => "evidence",
            Check::Leak => "leak",
            Check::Unavailable => "unavailable",
            Check::Quantity => "quantity",
            Check::Premise => "premise",
            Check::Derivable => "derivable",
            Check::Artefacts => "artefacts",
            Check::SourceMismatch => "source_mismatch",
            Check::GuessableCount => "guessable_count",
            Check::VisibleChoice => "visible_choice",
            Check::DuplicateInstruction => "duplicate_instruction",
            Check::UnscoredStep => "unscored_step",
            Check::WeekdayDate => "weekday_date",
        }
    }
}

/// One reason a task is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The failed check.
    pub check: Check,
    /// The criterion or slot concerned, if any.
    pub subject: Option<String>,
    /// What happened.
    pub reason: String,
}

/// A rejection row.
pub(crate) fn reject(check: Check, subject: Option<&str>, reason: String) -> Rejection {
    Rejection {
        check,
        subject: subject.map(str::to_string),
        reason,
    }
}
