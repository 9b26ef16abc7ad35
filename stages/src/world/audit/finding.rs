//! What the audit's rules find: a [`Contradiction`] between the history and the profile or the
//! app data, and the [`Rule`] that found it — what every rule module of the audit reports, in a
//! module of its own so they import it from here rather than from `audit`.

/// Which rule found a contradiction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A choice on or after a shift's change date that names a record of the earlier value.
    Shift,
    /// A choice (other than the entry's own evidence) that names a record the user avoids.
    Avoid,
    /// An event that names a dated record one buys or books (a show, a flight) long before it was
    /// listed.
    BeforeExists,
    /// The same app records a one-off occasion, or a one-off act (rating one place, starting a
    /// list), more than once.
    OneOffRepeated,
    /// An event says she flew or saw a dated record on another day than its own (before it, or
    /// more than [`crate::world::rules::COMPLETED_DAYS`] after), or bought it on or after its date.
    CompletedBeforeDate,
    /// An event says she bought or booked a dated record the app data holds no order of.
    PurchaseAbsent,
    /// More than one event says she bought or booked the same dated record.
    RepeatedPurchase,
    /// More than one event says she flew the same flight or saw the same show: one act told
    /// from several entries' evidence ("Flew out of SFO on AS 1346" three times on its day).
    RepeatedCompletion,
    /// An event names two towns away from home, in its words or through a record it names (a
    /// flight's destination, a hotel's city): "Landed in PDX … to visit Aisha in Seattle".
    PlaceConflict,
    /// An event says why twice ([`crate::world::rules::purposes`]): "Saved a cabin in Tahoe for a
    /// maybe-someday trip for Dev's conference talk".
    PurposeTwice,
    /// A work act (at or on the way to the office, a meeting, work expenses) on a weekend or a
    /// holiday ([`super::days::calendar_findings`]): "Rode the N Judah to work … on Sunday".
    WorkOnDayOff,
    /// A text says the event happened on another weekday than its date: "… on Sunday" on a
    /// Tuesday.
    WeekdayMismatch,
}

impl Rule {
    /// Every rule, in table order.
    pub const ALL: [Rule; 12] = [
        Rule::Shift,
        Rule::Avoid,
        Rule::BeforeExists,
        Rule::OneOffRepeated,
        Rule::CompletedBeforeDate,
        Rule::PurchaseAbsent,
        Rule::RepeatedPurchase,
        Rule::RepeatedCompletion,
        Rule::PlaceConflict,
        Rule::PurposeTwice,
        Rule::WorkOnDayOff,
        Rule::WeekdayMismatch,
    ];

    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Shift => "shift",
            Rule::Avoid => "avoid",
            Rule::BeforeExists => "before_exists",
            Rule::OneOffRepeated => "one_off_repeated",
            Rule::CompletedBeforeDate => "completed_before_date",
            Rule::PurchaseAbsent => "purchase_absent",
            Rule::RepeatedPurchase => "repeated_purchase",
            Rule::RepeatedCompletion => "repeated_completion",
            Rule::PlaceConflict => "place_conflict",
            Rule::PurposeTwice => "purpose_twice",
            Rule::WorkOnDayOff => "work_on_day_off",
            Rule::WeekdayMismatch => "weekday_mismatch",
        }
    }
}

/// One contradiction found by rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Contradiction {
    /// The rule.
    pub rule: Rule,
    /// The event (or `app:<app.table>/<id>` for an app record).
    pub event_id: String,
    /// What is wrong, readable on its own.
    pub detail: String,
}
