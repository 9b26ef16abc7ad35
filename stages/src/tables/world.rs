//! The world's tables (`build_world`, `import_persona`, `build_knowu_world`).

use prefflow_engine::schema::{ColumnDef as C, Dtype::*, InputDef, TableDef};

/// `profile_entries.id`, `slots.profile_entry`'s target.
pub const ID: &str = "id";
/// A profile entry's dimension.
pub const DIMENSION: &str = "dimension";
/// A profile entry's `inferable` | `ask_only` | `unspecified`.
pub const SOURCE: &str = "source";
/// `history_events.event_id`.
pub const EVENT_ID: &str = "event_id";
/// `history_events.time` (ISO datetime).
pub const TIME: &str = "time";
/// `history_events.text`.
pub const TEXT: &str = "text";
/// `history_events.label` (`signal` | `noise`).
pub const LABEL: &str = "label";
/// `history_events.supports` (profile entry ids).
pub const SUPPORTS: &str = "supports";
/// An app's id.
pub const APP: &str = "app";
/// `sources.kind`.
pub const KIND: &str = "kind";
/// `sources.name`.
pub const NAME: &str = "name";

/// The persona's hidden profile.
pub static PROFILE_ENTRIES: TableDef = TableDef {
    name: "profile_entries",
    doc: "one row per entry of the persona's hidden profile",
    columns: &[
        C::new(ID, Str, "entry id"),
        C::new(DIMENSION, Str, "what the entry is about"),
        C::new("key", Str, "the entry's key within its dimension"),
        C::new("value", Str, "the value, for display"),
        C::new("value_json", Str, "the value as JSON"),
        C::new("mention", Str, "how the persona would say it"),
        C::new(
            SOURCE,
            Str,
            "`inferable` \\| `ask_only` \\| `unspecified` (imports)",
        ),
        C::nullable(
            "shift_from",
            Str,
            "the earlier value, for a preference shift",
        ),
        C::nullable(
            "shift_from_mention",
            Str,
            "how the persona said the earlier value",
        ),
        C::nullable("shift_changed", Str, "when it changed (ISO date)"),
        C::new("evidence", ListStr, "supporting history event ids"),
        C::new("persona", Str, "the persona imported").only("`import_persona`"),
    ],
    open: false,
};

/// The persona's visible history.
pub static HISTORY_EVENTS: TableDef = TableDef {
    name: "history_events",
    doc: "one row per history event the persona's phone logged",
    columns: &[
        C::new(EVENT_ID, Str, "event id"),
        C::new(TIME, Str, "ISO datetime (sorts lexicographically)"),
        C::nullable(
            "utc_offset_minutes",
            I32,
            "the event's UTC offset (imports; null when unknown)",
        ),
        C::new(APP, Str, "the app it happened in"),
        C::new("location", Str, "where"),
        C::new(TEXT, Str, "the event in natural language"),
        C::new(LABEL, Str, "`signal` \\| `noise`"),
        C::new("category", Str, "the event's category"),
        C::new(SUPPORTS, ListStr, "profile entry ids it evidences"),
        C::new(
            "counters",
            ListStr,
            "profile entry ids it is designed counter-evidence for",
        ),
        C::new("persona", Str, "the persona imported").only("`import_persona`"),
    ],
    open: false,
};

/// The app catalog.
pub static APPS: TableDef = TableDef {
    name: "apps",
    doc: "one row per mock app",
    columns: &[
        C::new(APP, Str, "app id"),
        C::new(NAME, Str, "display name"),
        C::new("category", Str, "the app's category"),
        C::new("description", Str, "one line"),
        C::new("tables", U32, "entity tables"),
        C::new("operations", U32, "operations"),
        C::new("records", U32, "seed records"),
    ],
    open: false,
};

/// The apps' seed records.
pub static APP_RECORDS: TableDef = TableDef {
    name: "app_records",
    doc: "one row per seed record of an app table",
    columns: &[
        C::new(APP, Str, "app id"),
        C::new("table", Str, "the app's table"),
        C::new("record_id", Str, "record id"),
        C::new("fields_json", Str, "the record's fields (JSON object)"),
    ],
    open: false,
};

/// What the world was built from.
pub static SOURCES: TableDef = TableDef {
    name: "sources",
    doc: "one row per file the world was built from; `world_from_tables` rebuilds the world from these and `history_events` (`build_knowu_world` adds the row kind `knowu_profile`)",
    columns: &[
        C::new(KIND, Str, "`app` \\| `persona` (\\| `knowu_profile`)"),
        C::new(NAME, Str, "the app or persona"),
        C::new(TEXT, Str, "the YAML it was built from"),
    ],
    open: false,
};

/// Counts describing a world.
pub static SUMMARY: TableDef = TableDef {
    name: "summary",
    doc: "counts per section (`prefflow show world.summary` prints it grouped)",
    columns: &[
        C::new("section", Str, "what is counted"),
        C::new("key", Str, "which one"),
        C::new("count", U64, "how many"),
    ],
    open: false,
};

/// `build_world`'s audit of its history (named like the review rounds' `audit`).
pub static AUDIT: TableDef = TableDef {
    name: "audit",
    doc: "one row per measurement of `build_world`'s history audit (the sections are listed below)",
    columns: &[
        C::new("section", Str, "which check (see below)"),
        C::new("key", Str, "the metric, entry id, rule or gram"),
        C::new("value", F64, "the measurement"),
        C::new(
            "detail",
            Str,
            "a readable note (the offending event for a contradiction)",
        ),
    ],
    open: false,
};

/// How every world-reading kind reads `sources` (the loader needs kind, name and text), so the
/// declaration lives once beside the table.
pub const READ_SOURCES: InputDef = InputDef::required(&SOURCES, &[KIND, NAME, TEXT]);

/// How every history-reading kind reads `history_events` (what `History::from_tables` needs).
pub const READ_HISTORY: InputDef = InputDef::required(
    &HISTORY_EVENTS,
    &[EVENT_ID, TIME, APP, TEXT, LABEL, SUPPORTS],
);
