//! Calendar dates and wall-clock times without a time-zone library: the world only needs
//! parsing, formatting, ordering and day arithmetic on naive local times.

use std::fmt;

/// A calendar date, stored as days since 1970-01-01 so comparison and arithmetic are trivial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(i32);

/// A time of day with second resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(u32);

/// A naive local date and time; history and the phone clock use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime {
    /// The calendar day.
    pub date: Date,
    /// The time on that day.
    pub time: Time,
}

fn parse_num(s: &str, len: usize) -> Option<u32> {
    if s.len() != len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The days of the week, lower-case, Monday first (as [`Date::weekday`] counts): how texts
/// and instructions name them.
pub const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// The months, lower-case, January first: how texts and instructions name them (their first
/// three letters are the abbreviations, "oct").
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A lower-case name with its first letter capitalised, for the names above.
fn capitalised(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

impl Date {
    /// Builds a date from its parts, or `None` if the day does not exist.
    pub fn from_ymd(year: i32, month: u32, day: u32) -> Option<Self> {
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        // Howard Hinnant's days_from_civil.
        let y = if month <= 2 { year - 1 } else { year };
        let era = if y >= 0 { y } else { y - 399 } / 400;
        let yoe = y - era * 400;
        let m = month as i32;
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i32 - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        Some(Date(era * 146097 + doe - 719468))
    }

    /// Parses `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Self> {
        let mut it = s.split('-');
        let (y, m, d) = (it.next()?, it.next()?, it.next()?);
        if it.next().is_some() {
            return None;
        }
        Self::from_ymd(parse_num(y, 4)? as i32, parse_num(m, 2)?, parse_num(d, 2)?)
    }

    /// The (year, month, day) parts.
    pub fn ymd(self) -> (i32, u32, u32) {
        let z = self.0 + 719468;
        let era = if z >= 0 { z } else { z - 146096 } / 146097;
        let doe = z - era * 146097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = yoe + era * 400 + i32::from(m <= 2);
        (y, m, d)
    }

    /// The date `n` days later (earlier if negative).
    pub fn add_days(self, n: i32) -> Self {
        Date(self.0 + n)
    }

    /// Days from `self` to `other` (positive if `other` is later).
    pub fn days_until(self, other: Date) -> i32 {
        other.0 - self.0
    }

    /// Day of week, 0 = Monday … 6 = Sunday.
    pub fn weekday(self) -> u32 {
        (self.0 + 3).rem_euclid(7) as u32
    }

    /// The day of the week in English ("Thursday"), as history texts and the clock show it.
    pub fn weekday_name(self) -> String {
        capitalised(WEEKDAYS[self.weekday() as usize % 7])
    }

    /// The month in English ("October"), as the lock screen shows it.
    pub fn month_name(self) -> String {
        let (_, m, _) = self.ymd();
        capitalised(MONTHS[(m as usize + 11) % 12])
    }

    /// `YYYY-MM`, the key used for per-month summaries.
    pub fn month_key(self) -> String {
        let (y, m, _) = self.ymd();
        format!("{y:04}-{m:02}")
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = self.ymd();
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

impl Time {
    /// Builds a time from hours, minutes and seconds, or `None` if out of range.
    pub fn from_hms(h: u32, m: u32, s: u32) -> Option<Self> {
        (h < 24 && m < 60 && s < 60).then_some(Time(h * 3600 + m * 60 + s))
    }

    /// A time from seconds since midnight (wrapping at 24 h).
    pub fn from_seconds(secs: u32) -> Self {
        Time(secs % 86_400)
    }

    /// Parses `HH:MM` or `HH:MM:SS`.
    pub fn parse(s: &str) -> Option<Self> {
        let parts: Vec<&str> = s.split(':').collect();
        let sec = match parts.len() {
            2 => 0,
            3 => parse_num(parts[2], 2)?,
            _ => return None,
        };
        Self::from_hms(parse_num(parts[0], 2)?, parse_num(parts[1], 2)?, sec)
    }

    /// Seconds since midnight.
    pub fn seconds(self) -> u32 {
        self.0
    }

    /// `HH:MM`, the form apps display and store.
    pub fn hhmm(self) -> String {
        format!("{:02}:{:02}", self.0 / 3600, self.0 / 60 % 60)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}:{:02}:{:02}",
            self.0 / 3600,
            self.0 / 60 % 60,
            self.0 % 60
        )
    }
}

impl DateTime {
    /// Parses `YYYY-MM-DDTHH:MM[:SS]` (a space also separates), ignoring a trailing UTC offset
    /// such as `+08:00` or `Z`; use [`DateTime::parse_with_offset`] to keep the offset.
    pub fn parse(s: &str) -> Option<Self> {
        Self::parse_with_offset(s).map(|(dt, _)| dt)
    }

    /// Parses like [`DateTime::parse`] and also returns the UTC offset in minutes, if given.
    pub fn parse_with_offset(s: &str) -> Option<(Self, Option<i32>)> {
        let (d, rest) = s.split_at_checked(10)?;
        let rest = rest.strip_prefix(['T', ' '])?;
        let (t, offset) = split_offset(rest)?;
        Some((
            DateTime {
                date: Date::parse(d)?,
                time: Time::parse(t)?,
            },
            offset,
        ))
    }
}

fn split_offset(s: &str) -> Option<(&str, Option<i32>)> {
    if let Some(t) = s.strip_suffix('Z') {
        return Some((t, Some(0)));
    }
    match s.find(['+', '-']) {
        None => Some((s, None)),
        Some(i) => {
            let (t, off) = s.split_at(i);
            let sign = if off.starts_with('-') { -1 } else { 1 };
            let hm = Time::parse(&off[1..])?;
            Some((t, Some(sign * (hm.seconds() / 60) as i32)))
        }
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}T{}", self.date, self.time)
    }
}

impl serde::Serialize for DateTime {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for DateTime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DateTime::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("not a datetime: {s}")))
    }
}

impl serde::Serialize for Date {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_order() {
        for s in [
            "1970-01-01",
            "2024-02-29",
            "2025-03-01",
            "2025-12-31",
            "2000-02-29",
        ] {
            assert_eq!(Date::parse(s).map(|d| d.to_string()).as_deref(), Some(s));
        }
        assert!(Date::parse("2025-02-29").is_none());
        assert!(Date::parse("2025-3-01").is_none());
        let a = Date::parse("2025-02-28").unwrap();
        assert_eq!(a.add_days(1).to_string(), "2025-03-01");
        assert_eq!(a.days_until(Date::parse("2025-03-31").unwrap()), 31);
        // 2025-10-02 is a Thursday.
        assert_eq!(Date::parse("2025-10-02").unwrap().weekday(), 3);
    }

    #[test]
    fn times_and_datetimes_parse() {
        assert_eq!(Time::parse("19:00").unwrap().hhmm(), "19:00");
        assert!(Time::parse("24:00").is_none());
        assert!(Time::parse("7:00").is_none());
        let (dt, off) = DateTime::parse_with_offset("2026-01-01T13:05:10+08:00").unwrap();
        assert_eq!(dt.to_string(), "2026-01-01T13:05:10");
        assert_eq!(off, Some(480));
        assert_eq!(
            DateTime::parse("2025-10-02 17:30").unwrap().to_string(),
            "2025-10-02T17:30:00"
        );
        assert!(DateTime::parse("2025-10-02").is_none());
    }
}
