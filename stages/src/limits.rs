//! Sizes a typo can blow up. `events: 100000000` (one zero too many) used to run for minutes
//! and gigabytes before anything said a word; each such parameter now has a documented limit
//! checked when the plan is built (exit 2, the store untouched), with a `max_…` parameter
//! beside it for the user who does mean it. README, "Limits", lists them.

use prefflow_engine::ParamError;

/// A limit on one parameter of a stage kind.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// The parameter it bounds, e.g. `events`.
    pub param: &'static str,
    /// The override parameter, e.g. `max_events`.
    pub override_param: &'static str,
    /// The default bound.
    pub default: u64,
    /// What one unit costs, for the message ("about 1 KB of memory each").
    pub unit: &'static str,
}

/// History events synthesized by `build_world` (and `serve-env --events`): ~1 KB each across
/// the world's tables; the paper's persona has 3,051.
pub const EVENTS: Limit = Limit {
    param: "events",
    override_param: "max_events",
    default: 1_000_000,
    unit: "history events (about 1 KB of memory each)",
};

/// Candidate tasks drawn by `generate_tasks`; the paper draws 188.
pub const TASK_COUNT: Limit = Limit {
    param: "count",
    override_param: "max_count",
    default: 100_000,
    unit: "candidate tasks",
};

/// Repeats per task in `run_episodes`; every epoch multiplies the episodes (and model calls).
pub const EPOCHS: Limit = Limit {
    param: "epochs",
    override_param: "max_epochs",
    default: 100,
    unit: "epochs per task (each one replays every task)",
};

/// Episodes one `run_episodes` call plays (tasks × epochs), checked when it sees its tasks.
pub const EPISODES: u64 = 1_000_000;

impl Limit {
    /// `Err` with a located, fixable message when `value` is over the bound (`raised` is the
    /// user's override, if any).
    pub fn check(&self, value: u64, raised: Option<u64>) -> Result<(), ParamError> {
        let bound = raised.unwrap_or(self.default);
        if value <= bound {
            return Ok(());
        }
        Err(ParamError {
            field: Some(self.param.to_string()),
            message: self.message(value, bound),
        })
    }

    /// The message for `value` over `bound`: what, how much, and both ways out.
    pub fn message(&self, value: u64, bound: u64) -> String {
        format!(
            "`{}` = {value} is over the limit of {bound} {}; a typo? If you mean it, add `{}: {value}` to the stage's params",
            self.param, self.unit, self.override_param
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_over_the_limit_names_the_override() {
        let e = EVENTS.check(100_000_000, None).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("events"));
        assert!(e.message.contains("max_events: 100000000"), "{}", e.message);
        assert!(EVENTS.check(100_000_000, Some(100_000_000)).is_ok());
        assert!(EVENTS.check(3051, None).is_ok());
    }
}
