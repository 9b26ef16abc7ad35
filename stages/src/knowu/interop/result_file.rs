//! `result.txt`: the score and the judge's reason KnowU-Bench writes for one episode.
//!
//! The score is the first line matching `^score:\s*([-+]?\d*\.?\d+)\s*$` (case-insensitive); a
//! file without such a line means "no result". The reason is everything after the first line
//! starting with `reason:`, trimmed.

/// Score and reason of one episode as carried by `result.txt`.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeResult {
    /// The score, `None` when no line matches (the episode then has no result).
    pub score: Option<f64>,
    /// The judge's reason; `None` when absent or empty.
    pub reason: Option<String>,
}

impl EpisodeResult {
    /// No result: no score, no reason (no `result.txt`).
    pub fn none() -> Self {
        Self {
            score: None,
            reason: None,
        }
    }
}

/// Parses the text of a `result.txt`.
pub fn parse(text: &str) -> EpisodeResult {
    EpisodeResult {
        score: text.lines().find_map(score_line),
        reason: reason(text),
    }
}

/// Renders a `result.txt` KnowU-Bench's scripts read back to the same score and reason.
pub fn render(score: f64, reason: Option<&str>) -> String {
    // `Display` of f64 is the shortest text that parses back to the same value, never exponent form.
    format!("score: {score}\nreason: {}\n", reason.unwrap_or(""))
}

/// Renders a `result.txt` with a reason and no score line: an episode that has no result.
pub fn render_unscored(reason: &str) -> String {
    format!("reason: {reason}\n")
}

/// The score of a `score: <number>` line.
fn score_line(line: &str) -> Option<f64> {
    let rest = strip_prefix_ignore_case(line.trim_end(), "score:")?;
    let number = rest.trim_start();
    is_knowu_number(number).then(|| number.parse().ok())?
}

/// True for text matching `[-+]?\d*\.?\d+` exactly (no exponent, no trailing dot).
fn is_knowu_number(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (int, frac) = match unsigned.split_once('.') {
        Some((int, frac)) => (int, frac),
        None => ("", unsigned),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    !frac.is_empty() && digits(int) && digits(frac)
}

/// Everything after the first line that starts with `reason:`.
fn reason(text: &str) -> Option<String> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if strip_prefix_ignore_case(line, "reason:").is_some() {
            let rest = text[offset + "reason:".len()..].trim();
            return (!rest.is_empty()).then(|| rest.to_string());
        }
        offset += line.len();
    }
    None
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_score_line_wins_and_reason_spans_lines() {
        let r = parse("log: x\nscore: 0.5\nscore: 1\nreason: first\nsecond line\n");
        assert_eq!(r.score, Some(0.5));
        assert_eq!(r.reason.as_deref(), Some("first\nsecond line"));
    }

    #[test]
    fn score_grammar_follows_the_knowu_regex() {
        assert_eq!(parse("SCORE: +.75 \r\n").score, Some(0.75));
        assert_eq!(parse("score:-1").score, Some(-1.0));
        // No digits after the dot, exponent, leading space, trailing words: no result.
        for bad in [
            "score: 1.",
            "score: 1e3",
            " score: 1",
            "score: 1 point",
            "score:",
        ] {
            assert_eq!(parse(bad).score, None, "{bad}");
        }
        // A later valid line is still found.
        assert_eq!(parse("score: n/a\nscore: 0.25").score, Some(0.25));
    }

    #[test]
    fn an_unscored_reason_is_no_result_but_keeps_the_reason() {
        let back = parse(&render_unscored("emulator crashed"));
        assert_eq!(back.score, None);
        assert_eq!(back.reason.as_deref(), Some("emulator crashed"));
    }

    #[test]
    fn rendering_reads_back_to_the_same_values() {
        for (score, reason) in [(0.991, Some("ok")), (1.0, None), (0.1 + 0.2, Some("a\nb"))] {
            let back = parse(&render(score, reason));
            assert_eq!(back.score, Some(score));
            assert_eq!(back.reason.as_deref(), reason);
        }
    }
}
