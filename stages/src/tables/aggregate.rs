//! The aggregate tables (`aggregate`, `judge_agreement`, `report`; see docs/metrics.md).

pub use super::episodes::VARIANT;
/// The metric a row reports.
pub const METRIC: &str = "metric";
/// A metric's value.
pub const VALUE: &str = "value";
/// The lower end of a 95% bootstrap interval.
pub const CI_LOW: &str = "ci_low";
/// The upper end of a 95% bootstrap interval.
pub const CI_HIGH: &str = "ci_high";
/// How many tasks a value is over.
pub const N: &str = "n";

crate::tables::row::table! {
    /// Table 1.
    pub struct Table1Row as TABLE1 ("table1", "per variant × metric") {
        /// the variant
        pub variant: String,
        /// `success`, `action`, `personalization`, `inferable`, `ask_only`, `recall`, `precision`, `ask_user_calls`, `steps`
        pub metric: String,
        /// the metric
        pub value: Option<f64>,
        /// 95% bootstrap, seeded, resampling templates: the variants of one template are one cluster
        pub ci_low: Option<f64>,
        /// see `ci_low`
        pub ci_high: Option<f64>,
        /// tasks
        pub n: u32,
        /// templates behind those tasks; scores without a `template` column count each task as its own
        pub templates: u32,
        /// which judge produced the variant's numbers (`scores.judge`: `rule+scripted (offline)` for the offline judge, `hybrid_text:MODEL+llm:MODEL` for a judge model, …; several, comma-separated, if its scores mix them); null when the scores carry none
        pub judge: Option<String>,
        /// who played the variant (`episodes.agent`: `oracle`, `llm:<provider model id>`, …): with the variant's `model=<name>`, a model column carries both its name and the id the provider was asked for; null without `episodes`
        pub agent: Option<String>,
        /// who answered the variant's questions (`episodes.user`: `scripted`, `llm:<model>` for the user simulator's own model, `llm:<model> (the model under test)` when asked for); null when the episodes do not say
        pub user: Option<String>,
        /// the value as printed (`61.5% [53.1, 70.0]`, `n/a`)
        pub display: String,
    }
}

crate::tables::row::table! {
    /// Paired differences.
    pub struct PairedRow as PAIRED ("paired", "per variant × metric, against the baseline") {
        /// the variant
        pub variant: String,
        /// the baseline variant
        pub baseline: String,
        /// the metric
        pub metric: String,
        /// variant − baseline on common tasks
        pub diff: Option<f64>,
        /// resampling templates, the same for both variants
        pub ci_low: Option<f64>,
        /// see `ci_low`
        pub ci_high: Option<f64>,
        /// common tasks
        pub n: u32,
        /// tasks where the variant is better
        pub wins: u32,
        /// tasks where they tie
        pub ties: u32,
        /// tasks where the baseline is better
        pub losses: u32,
        /// which judge produced the variant's numbers (as in `table1`)
        pub judge: Option<String>,
        /// why the row is not compared (`diff` and its interval null): the variant and the baseline were judged by different judges; null otherwise
        pub note: Option<String>,
    }
}

crate::tables::row::table! {
    /// pass^k and pass@k.
    pub struct PassKRow as PASS_K ("pass_k", "per variant × k") {
        /// the variant
        pub variant: String,
        /// epochs
        pub k: u32,
        /// pass^k
        pub pass_hat_k: f64,
        /// pass@k
        pub pass_at_k: f64,
        /// tasks with ≥ k scored epochs
        pub n: u32,
        /// which judge produced the variant's numbers (as in `table1`)
        pub judge: Option<String>,
    }
}

crate::tables::row::table! {
    /// Figure 2: perturbation subsets.
    pub struct PerturbationsRow as PERTURBATIONS ("perturbations", "per variant × perturbation × metric (Figure 2)") {
        /// the variant
        pub variant: String,
        /// the subset
        pub perturbation: String,
        /// the metric
        pub metric: String,
        /// on the subset
        pub value: Option<f64>,
        /// on every task
        pub overall: Option<f64>,
        /// value − overall
        pub delta: Option<f64>,
        /// subset tasks
        pub n: u32,
    }
}

crate::tables::row::table! {
    /// Figure 4: metrics per history exposure.
    pub struct HistoryCurveRow as HISTORY_CURVE ("history_curve", "per variant × exposure × metric (Figure 4)") {
        /// the variant
        pub variant: String,
        /// the history exposure
        pub exposure: String,
        /// 0 for `none`, null for `all`
        pub top_k: Option<u32>,
        /// the metric
        pub metric: String,
        /// the metric
        pub value: Option<f64>,
        /// 95% bootstrap
        pub ci_low: Option<f64>,
        /// see `ci_low`
        pub ci_high: Option<f64>,
        /// tasks
        pub n: u32,
    }
}

crate::tables::row::table! {
    /// Figure 3: failure-label distribution.
    pub struct FailureLabelsRow as FAILURE_LABELS ("failure_labels", "per variant × judge mode × failure label (Figure 3)") {
        /// the variant
        pub variant: String,
        /// the judge mode
        pub mode: String,
        /// the label (`unlabelled` when none)
        pub failure_label: String,
        /// failed criteria with it
        pub count: u32,
        /// of the failed criteria of variant × mode
        pub share: f64,
    }
}

crate::tables::row::table! {
    /// Judge agreement (`judge_agreement`).
    pub struct AgreementRow as AGREEMENT ("agreement", "per level × pair of raters (`judge_agreement`)") {
        /// authored set: `criterion` \| `success` \| `recall` \| `extra` \| `simulator`; episode-keyed CSVs: `criterion` \| `success` \| `slot`
        pub level: String,
        /// authored set: `<judge>~gold` (e.g. `rule+scripted~gold`), `pass1~pass2`, `<simulator variant>~valid`; episode-keyed CSVs: `rule~human`, `llm~human`, `llm~rule`, `interaction~human`
        pub pair: String,
        /// items both rated
        pub n: u32,
        /// items they agree on
        pub agree: u32,
        /// observed agreement
        pub p_o: Option<f64>,
        /// chance agreement
        pub p_e: Option<f64>,
        /// Cohen's κ (null when undefined)
        pub kappa: Option<f64>,
        /// items left out
        pub excluded: u32,
    }
}

crate::tables::row::table! {
    /// The human labels `judge_agreement` read.
    pub struct LabelsRow as LABELS ("labels", "one row per human label (`judge_agreement`)") {
        /// the episode
        pub episode_id: String,
        /// the criterion
        pub criterion_id: Option<String>,
        /// the slot
        pub slot_id: Option<String>,
        /// `pass` \| `fail` \| `asked` \| `not_asked`
        pub label: String,
        /// the labels file
        pub file: String,
        /// its line
        pub line: u32,
    }
}

crate::tables::row::table! {
    /// The authored labelled episodes `judge_agreement` read.
    pub struct LabelledEpisodesRow as LABELLED_EPISODES ("labelled", "one row per authored episode of the labelled set (`judge_agreement`; datasets/judge-labels/README.md)") {
        /// `<task_id>/<name>`
        pub episode: String,
        /// the task it was written for
        pub task_id: String,
        /// the epoch it is played as
        pub epoch: u32,
        /// `ok` \| `stale` (the task changed) \| `unfingerprinted` \| `unknown_task`; only `ok` episodes count
        pub status: String,
        /// the task's fingerprint now (copy it into a new file)
        pub fingerprint: Option<String>,
        /// the fingerprint in the file
        pub stored: Option<String>,
        /// the file's tags, comma-separated
        pub behaviour: String,
        /// its `ask` steps
        pub asks: u32,
    }
}

crate::tables::row::table! {
    /// Disagreements of the two annotation passes.
    pub struct DisagreementsRow as DISAGREEMENTS ("disagreements", "one row per judgement the two passes disagree on (`judge_agreement`)") {
        /// `<task_id>/<name>`
        pub episode: String,
        /// `criterion` \| `success` \| `recall` \| `extra`
        pub level: String,
        /// criterion id, ask-only slot id, or empty
        pub subject: String,
        /// pass 1's value (empty: not labelled)
        pub pass1: String,
        /// pass 2's value
        pub pass2: String,
        /// the adjudication (null: unresolved, left out)
        pub resolved: Option<String>,
    }
}

crate::tables::row::table! {
    /// Where a judge differs from the gold labels of the authored episodes.
    pub struct JudgeErrorsRow as JUDGE_ERRORS ("judge_errors", "one row per gold judgement a judge gets wrong (`judge_agreement`): what to read when a judge's agreement is low") {
        /// the judge (`scores.judge`)
        pub judge: String,
        /// `<task_id>/<name>`
        pub episode: String,
        /// `criterion` \| `success` \| `recall` \| `extra`
        pub level: String,
        /// criterion id, ask-only slot id, or empty
        pub subject: String,
        /// the judge's value
        pub judged: String,
        /// the gold label
        pub gold: String,
    }
}

crate::tables::row::table! {
    /// The simulator check over question–answer pairs.
    pub struct SimulatorCheckRow as SIMULATOR_CHECK ("simulator", "one row per question–answer pair of the labelled episodes (`judge_agreement`)") {
        /// the episodes' variant (which user answered)
        pub simulator: String,
        /// `<task_id>/<name>`
        pub episode: String,
        /// 1-based ask number
        pub ask: u32,
        /// the agent's message
        pub question: String,
        /// the simulator's reply
        pub reply: String,
        /// slots the gold pieces request, comma-separated
        pub asked: String,
        /// slots whose value the reply states
        pub disclosed: String,
        /// every asked slot's value is in the reply
        pub answered: bool,
        /// states a slot value, or says it does not know
        pub grounded: bool,
        /// disclosed a slot nobody asked about
        pub volunteered: bool,
        /// answered, grounded, nothing volunteered
        pub valid: bool,
    }
}

crate::tables::row::table! {
    /// The HTML report (`report`).
    pub struct ReportRow as REPORT ("report", "one row: the report written (`report`)") {
        /// where
        pub path: String,
        /// its size
        pub bytes: u64,
        /// tasks in the drill-down
        pub tasks: u32,
    }
}

crate::tables::row::table! {
    /// Table 1's companion: what the variant's model calls cost.
    pub struct UsageRow as USAGE ("usage", "per variant × role (`agent`, `user`, `judge`) with any tokens; sums over the variant's episodes") {
        /// the variant (its model is in the name: `agent=llm,model=NAME,…`)
        pub variant: String,
        /// `agent`, `user` (the simulator) or `judge`
        pub role: String,
        /// episodes summed
        pub episodes: u32,
        /// prompt tokens
        pub prompt_tokens: u64,
        /// completion tokens
        pub completion_tokens: u64,
        /// of the prompt tokens, those the provider served from its prompt cache (`cached_tokens_<role>` of the episodes; 0 when it reports none)
        pub cached_prompt_tokens: u64,
        /// money at each model's configured `prices`, cached prompt tokens at `cached_prompt_per_mtok` (0 without prices; replayed calls cost what they cost when recorded)
        pub cost: f64,
        /// which judge produced the variant's numbers, as in `table1`
        pub judge: Option<String>,
    }
}

/// A CSV file format the labelled judge set is written in (datasets/judge-labels/README.md):
/// the columns its header must hold and those it may (read as empty when absent). Files people
/// write are formats like the tables, so their columns are declared here once.
pub struct CsvHeader {
    /// The columns every file must have.
    pub required: &'static [&'static str],
    /// The columns a file may leave out.
    pub optional: &'static [&'static str],
}

/// The columns of a labelled pass's CSV files (`labels/pass*/*.csv`, `records/*.csv`).
pub mod label_csv {
    use crate::tables::aggregate::CsvHeader;

    /// `<task_id>/<name>`: the labelled episode.
    pub const EPISODE: &str = "episode";
    /// `criterion`, `success` or `piece`.
    pub const LEVEL: &str = "level";
    /// A criterion id, empty, or `ASK.PIECE`.
    pub const SUBJECT: &str = "subject";
    /// `pass` / `fail`, or a slot id / `none` for pieces.
    pub const LABEL: &str = "label";
    /// Who labelled.
    pub const ANNOTATOR: &str = "annotator";
    /// The header.
    pub const HEADER: CsvHeader = CsvHeader {
        required: &[EPISODE, LEVEL, SUBJECT, LABEL],
        optional: &[ANNOTATOR],
    };
}

/// The columns of the adjudication file (`labels/adjudication.csv`).
pub mod adjudication_csv {
    pub use crate::tables::aggregate::label_csv::{EPISODE, LEVEL, SUBJECT};
    use crate::tables::aggregate::CsvHeader;

    /// The adjudicated value.
    pub const RESOLVED: &str = "resolved";
    /// The header.
    pub const HEADER: CsvHeader = CsvHeader {
        required: &[EPISODE, LEVEL, SUBJECT, RESOLVED],
        optional: &["pass1", "pass2", "adjudicator", "note"],
    };
}

/// The columns of the natural-question fixtures the matcher's tests read
/// (`tests/fixtures/questions/*.csv`, documented in that folder's README): a file format of the
/// interaction judge's validation, declared here like the labelled-set headers.
pub mod question_csv {
    /// The released task the message is sent in.
    pub const TASK_ID: &str = "task_id";
    /// The agent's whole message to the user.
    pub const MESSAGE: &str = "message";
    /// The ask-only slot ids it requests, `;`-separated.
    pub const ASKED_SLOTS: &str = "asked_slots";
    /// How many of its requests are for no ask-only slot.
    pub const OTHER_PIECES: &str = "other_pieces";
    /// The phrasing style.
    pub const STYLE: &str = "style";
}
