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
/// The `persona` column `import_persona` alone appends to `profile_entries` and
/// `history_events`, so tables of several personas can be concatenated.
pub const PERSONA: &str = "persona";
/// `sources.kind`.
pub const KIND: &str = SourceRow::kind;
/// `sources.name`.
pub const NAME: &str = SourceRow::name;

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
        C::new(PERSONA, Str, "the persona imported").only("`import_persona`"),
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
        C::new(PERSONA, Str, "the persona imported").only("`import_persona`"),
    ],
    open: false,
};

crate::tables::row::table! {
    /// One mock app of the catalog.
    pub struct AppRow as APPS ("apps", "one row per mock app") {
        /// app id
        pub app: String,
        /// display name
        pub name: String,
        /// the app's category
        pub category: String,
        /// one line
        pub description: String,
        /// entity tables
        pub tables: u32,
        /// operations
        pub operations: u32,
        /// seed records
        pub records: u32,
    }
}

crate::tables::row::table! {
    /// One seed record of an app table.
    pub struct AppRecordRow as APP_RECORDS ("app_records", "one row per seed record of an app table") {
        /// app id
        pub app: String,
        /// the app's table
        pub table: String,
        /// record id
        pub record_id: String,
        /// the record's fields (JSON object)
        pub fields_json: String,
    }
}

crate::tables::row::table! {
    /// One file the world was built from.
    pub struct SourceRow as SOURCES ("sources", "one row per file the world was built from; `world_from_tables` rebuilds the world from these and `history_events` (`build_knowu_world` adds the row kind `knowu_profile`)") {
        /// `app` \| `persona` (\| `knowu_profile`)
        pub kind: String,
        /// the app or persona
        pub name: String,
        /// the YAML it was built from
        pub text: String,
    }
}

crate::tables::row::table! {
    /// One count describing a world.
    pub struct SummaryRow as SUMMARY ("summary", "counts per section (`prefflow show world.summary` prints it grouped)") {
        /// what is counted
        pub section: String,
        /// which one
        pub key: String,
        /// how many
        pub count: u64,
    }
}

crate::tables::row::table! {
    /// One measurement of `build_world`'s history audit (named like the review rounds' `audit`).
    pub struct WorldAuditRow as AUDIT ("audit", "one row per measurement of `build_world`'s history audit (the sections are listed below)") {
        /// which check (see below)
        pub section: String,
        /// the metric, entry id, rule or gram
        pub key: String,
        /// the measurement
        pub value: f64,
        /// a readable note (the offending event for a contradiction)
        pub detail: String,
    }
}

crate::tables::row::row! {
    /// A profile entry as `build_world` and the KnowU world write it and every reader reads it
    /// (`import_persona` adds `persona`).
    pub struct ProfileEntryRow of PROFILE_ENTRIES {
        /// See [`PROFILE_ENTRIES`].
        pub id: String,
        /// See [`PROFILE_ENTRIES`].
        pub dimension: String,
        /// See [`PROFILE_ENTRIES`].
        pub key: String,
        /// See [`PROFILE_ENTRIES`].
        pub value: String,
        /// See [`PROFILE_ENTRIES`].
        pub value_json: String,
        /// See [`PROFILE_ENTRIES`].
        pub mention: String,
        /// See [`PROFILE_ENTRIES`].
        pub source: String,
        /// See [`PROFILE_ENTRIES`].
        pub shift_from: Option<String>,
        /// See [`PROFILE_ENTRIES`].
        pub shift_from_mention: Option<String>,
        /// See [`PROFILE_ENTRIES`].
        pub shift_changed: Option<String>,
        /// See [`PROFILE_ENTRIES`].
        pub evidence: Vec<String>,
    }
}

crate::tables::row::row! {
    /// A history event as the world writes it and `world_from_tables` reads it back
    /// (`import_persona` adds `persona`).
    pub struct HistoryEventRow of HISTORY_EVENTS {
        /// See [`HISTORY_EVENTS`].
        pub event_id: String,
        /// See [`HISTORY_EVENTS`].
        pub time: String,
        /// See [`HISTORY_EVENTS`].
        pub utc_offset_minutes: Option<i32>,
        /// See [`HISTORY_EVENTS`].
        pub app: String,
        /// See [`HISTORY_EVENTS`].
        pub location: String,
        /// See [`HISTORY_EVENTS`].
        pub text: String,
        /// See [`HISTORY_EVENTS`].
        pub label: String,
        /// See [`HISTORY_EVENTS`].
        pub category: String,
        /// See [`HISTORY_EVENTS`].
        pub supports: Vec<String>,
        /// See [`HISTORY_EVENTS`].
        pub counters: Vec<String>,
    }
}

/// How every world-reading kind reads `sources` (the loader needs kind, name and text), so the
/// declaration lives once beside the table.
pub const READ_SOURCES: InputDef = InputDef::required(&SOURCES, &[KIND, NAME, TEXT]);

/// How every history-reading kind reads `history_events` (what `History::from_tables` needs).
pub const READ_HISTORY: InputDef = InputDef::required(
    &HISTORY_EVENTS,
    &[EVENT_ID, TIME, APP, TEXT, LABEL, SUPPORTS],
);
