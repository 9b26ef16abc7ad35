//! Splitting an agent's message into separately answerable information pieces (iPrefBench
//! G.4): sentences (a splitter that knows abbreviations: "Dr. Garcia", "St. Mary's", "e.g.",
//! "8 a.m." inside a sentence), then, inside an asking sentence, coordinated questions
//! ("who's coming, and how many?", "What time and how many people?"). Statements that ask
//! nothing ("Shared rides aren't available.") are kept as the context of the pieces after them.
//! A choice among alternatives ("patio or inside?", "Is 8:30 OK, or would 9 work?") stays one
//! piece: `or` never splits.

/// One piece of a message: the words that ask, and the statements of the message before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawPiece {
    /// The asking words.
    pub text: String,
    /// The fragments of its sentence before it that ask nothing ("Dr. Okafor has Oct. 9 and
    /// Oct. 15" before "which do you prefer?").
    pub lead: String,
    /// The message's statements before the piece.
    pub context: String,
    /// Which sentence of the message it is in.
    pub sentence: usize,
    /// It was cut from the question before it in its sentence by a bare comma or dash (not
    /// ", and"): an appositive ("Who else is joining, which guests?") when it asks the same.
    pub soft: bool,
}

/// Titles that are never the end of a sentence.
const TITLES: [&str; 14] = [
    "dr", "mr", "mrs", "ms", "mx", "prof", "st", "mt", "jr", "sr", "ave", "blvd", "rd", "no",
];
/// Abbreviations that end a sentence only before a capitalised word.
const SOFT: [&str; 12] = [
    "a.m", "p.m", "am", "pm", "e.g", "i.e", "etc", "vs", "approx", "min", "mins", "hrs",
];
/// Abbreviated days and months: a sentence goes on after them unless a capitalised word
/// that is not itself a day, month or number follows ("Mon. is open", "Fri. Oct. 10").
const CALENDAR: [&str; 20] = [
    "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun", "jan", "feb", "mar",
    "apr", "jun", "jul", "aug", "sep", "sept", "oct",
];
const CALENDAR_MORE: [&str; 2] = ["nov", "dec"];

fn calendar_word(w: &str) -> bool {
    let w = w.to_lowercase();
    CALENDAR.contains(&w.as_str()) || CALENDAR_MORE.contains(&w.as_str())
}

/// The sentences of a message.
pub fn sentences(message: &str) -> Vec<String> {
    let chars: Vec<char> = message.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        current.push(c);
        let next = chars.get(i + 1).copied();
        let at_space = next.is_none_or(|n| n.is_whitespace() || n == '"' || n == '”');
        // "Should I add 'Happy birthday, Lena!' as the note?": a quotation's own "!" ends nothing.
        let in_quote = || quoted(&current, current.len() - c.len_utf8());
        let boundary = match c {
            '\n' => true,
            '?' | '!' => at_space && !in_quote(),
            '.' | '…' => {
                at_space && !abbreviation_ends_here(&current, &chars[i + 1..]) && !in_quote()
            }
            _ => false,
        };
        if boundary {
            push_trimmed(&mut out, std::mem::take(&mut current));
        }
    }
    push_trimmed(&mut out, current);
    out
}

fn push_trimmed(out: &mut Vec<String>, s: String) {
    let t = s.trim().trim_start_matches(['"', '”']).trim();
    if t.chars().any(char::is_alphanumeric) {
        out.push(t.to_string());
    }
}

/// Whether the `.` ending `current` belongs to an abbreviation that does not end the sentence.
fn abbreviation_ends_here(current: &str, rest: &[char]) -> bool {
    let before = current.trim_end_matches('.');
    let word: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '.')
        .collect::<String>()
        .chars()
        .rev()
        .collect::<String>()
        .to_lowercase();
    let next_word: String = rest
        .iter()
        .skip_while(|c| c.is_whitespace())
        .take_while(|c| c.is_alphanumeric())
        .collect();
    let next_capital = next_word.chars().next().is_some_and(char::is_uppercase);
    // A title ends nothing while the message goes on ("Irving St. & 9th Ave.", "Dr. (Ana) Ruiz").
    if TITLES.contains(&word.as_str()) {
        return rest.iter().any(|c| !c.is_whitespace());
    }
    // A question that has not reached its "?" goes on: "Is 8:00 a.m. OK?".
    let open_question = opens_question(current) && !current.contains('?');
    if calendar_word(&word) {
        let next_is_date = calendar_word(&next_word)
            || next_word.chars().next().is_some_and(|c| c.is_ascii_digit());
        return !next_capital || next_is_date || open_question;
    }
    if SOFT.contains(&word.as_str()) || (word.len() == 1 && word.chars().all(char::is_alphabetic)) {
        return !next_capital
            || word.len() == 1 && !opens_a_sentence(&next_word)
            || open_question
            || CLOCK.contains(&word.as_str()) && continues_a_time(&next_word, rest);
    }
    false
}

/// "Sold out in M. Which other color…?", "Size S. Is that right?": a capitalised word that opens
/// questions or statements, never a name, ends the sentence after a single letter (an initial
/// goes on before a name: "J. Smith").
fn opens_a_sentence(next_word: &str) -> bool {
    const STARTS: [&str; 14] = [
        "i", "the", "it", "your", "you", "we", "there", "that", "this", "they", "if", "so", "but",
        "please",
    ];
    let w = next_word.to_lowercase();
    OPENERS.contains(&w.as_str()) || STARTS.contains(&w.as_str())
}

/// Abbreviations of a clock time's half of the day.
const CLOCK: [&str; 4] = ["a.m", "p.m", "am", "pm"];

/// "9 a.m. Saturday OK?", "5 p.m. OK?": after a clock time, a day, a month, or a short rest of
/// the same question that opens no question of its own (at most three words up to its "?")
/// goes on; "7 p.m. Is that OK?" is two sentences.
fn continues_a_time(next_word: &str, rest: &[char]) -> bool {
    let next = next_word.to_lowercase();
    let day = crate::world::clock::WEEKDAYS.contains(&next.as_str())
        || crate::world::clock::MONTHS.contains(&next.as_str())
        || calendar_word(&next)
        || matches!(next.as_str(), "tomorrow" | "tonight" | "today");
    let rest: String = rest.iter().collect();
    let short = rest
        .split_once('?')
        .is_some_and(|(q, _)| !q.contains(['.', '!']) && q.split_whitespace().count() <= 3);
    day || short && !opens_question(&rest)
}

/// Words that open a question (or a request) of their own.
const OPENERS: [&str; 37] = [
    "who", "who's", "whom", "whose", "what", "what's", "when", "when's", "where", "where's",
    "which", "why", "how", "how's", "is", "are", "am", "do", "does", "did", "should", "shall",
    "would", "could", "can", "will", "may", "any", "anything", "anyone", "was", "were", "have",
    "has", "want", "need", "prefer",
];

/// Phrases that make a sentence a request although it ends without "?".
const REQUESTS: [&str; 27] = [
    "send me",
    "drop me",
    "let me know",
    "tell me",
    "please confirm",
    "please share",
    "please provide",
    "please specify",
    "please choose",
    "please pick",
    "please send",
    "please let me",
    "can you confirm",
    "could you confirm",
    "i need to know",
    "i'd need",
    "i need the",
    "i need your",
    "i'll need",
    "need to know",
    "could you tell",
    "can you tell",
    "would like to know",
    "i'd like to know",
    "wondering",
    "just say",
    "give me",
];

/// Verbs that open a request when they open a sentence ("Pick a date…", "Type the note…").
const IMPERATIVES: [&str; 10] = [
    "pick", "choose", "type", "send", "tell", "give", "name", "enter", "select", "confirm",
];

/// Whether a sentence asks something.
pub fn asks(sentence: &str) -> bool {
    // What a sentence quotes ("The invite says 'tell me if this works'.") asks nothing of her.
    let unquoted: String = sentence
        .char_indices()
        .filter(|(i, _)| !quoted(sentence, *i))
        .map(|(_, c)| c)
        .collect();
    let s = unquoted
        .trim()
        .trim_end_matches(['"', '”', '\'', '’'])
        .trim_end();
    if s.ends_with('?') {
        return true;
    }
    let lower = format!("{} ", s.to_lowercase().replace('’', "'"));
    let first = lower
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    // "Just need your finishing time.": a need without its "I" opens a request.
    let needs = lower.starts_with("need ") || lower.starts_with("just need ");
    IMPERATIVES.contains(&first) || needs || requests(&lower)
}

/// Whether a lower-cased sentence holds a request phrase, read past the adverbs that may sit
/// inside one ("I'll *also* need a start time", "I *just* need the key finding").
fn requests(lower: &str) -> bool {
    holds_request(lower, |text, r| text.contains(r))
}

/// "Wednesday works; I'll also need a start time": a fragment that opens with a request phrase.
fn opens_request(fragment: &str) -> bool {
    let lower = fragment.to_lowercase().replace('’', "'");
    holds_request(&lower, |text, r| text.starts_with(r))
}

/// Whether `found` finds a request phrase in a lower-cased text, as written or without its
/// adverbs.
fn holds_request(lower: &str, found: impl Fn(&str, &str) -> bool) -> bool {
    let plain = without_adverbs(lower);
    REQUESTS.iter().any(|r| found(lower, r) || found(&plain, r))
}

/// A lower-cased text without the adverbs that may sit inside a request phrase.
fn without_adverbs(lower: &str) -> String {
    const ADVERBS: [&str; 6] = ["also", "still", "just", "then", "only", "first"];
    lower
        .split(' ')
        .filter(|w| !ADVERBS.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// "…, and I'll send Tom the invite.": a fragment in which the agent says what it will do next
/// asks nothing (unless it asks in its own words: "I'll also need a start time").
fn announces(fragment: &str) -> bool {
    const OPENINGS: [&str; 9] = [
        "i'll ",
        "i will ",
        "i can ",
        "we'll ",
        "then i",
        "i'm going to ",
        "i am going to ",
        "i'd then ",
        "once i ",
    ];
    let lower = fragment.trim().to_lowercase().replace('’', "'");
    OPENINGS.iter().any(|o| lower.starts_with(o))
        && !lower.trim_end().ends_with('?')
        && !requests(&format!("{lower} "))
}

/// A request's trailing announcement ("… and I'll book it", "… so I can check out") asks
/// nothing: it is dropped from the piece.
fn drop_announcement(piece: &str) -> String {
    let lower = piece.to_lowercase().replace('’', "'");
    let cut = [
        " and i'll ",
        " and i will ",
        " and then i",
        " so i can ",
        " so that i can ",
        ", and i'll ",
        " and we'll ",
    ]
    .iter()
    .filter_map(|m| lower.find(m))
    .min();
    match cut {
        Some(i) if i > 0 => piece[..i].trim_end_matches([',', ' ']).to_string(),
        _ => piece.to_string(),
    }
}

/// Whether byte `at` of `s` lies inside a quotation ("…", “…”, or '…' opened after a space).
pub(super) fn quoted(s: &str, at: usize) -> bool {
    let mut inside = false;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        if i >= at {
            break;
        }
        match c {
            // `25"`: inches, not a quotation.
            '"' if prev.is_ascii_digit() => {}
            '"' | '“' | '”' => inside = !inside,
            '\'' | '‘' | '’' if !inside && prev.is_whitespace() => inside = true,
            // "'Lena!' as": a closing quote may follow punctuation, not a space.
            '\'' | '‘' | '’' if inside && prev.is_whitespace() => {}
            '\'' | '’' if inside => {
                let next = s[i + c.len_utf8()..].chars().next().unwrap_or(' ');
                if !next.is_alphanumeric() {
                    inside = false;
                }
            }
            _ => {}
        }
        prev = c;
    }
    inside
}

fn opens_question(fragment: &str) -> bool {
    let lower = fragment.trim().to_lowercase().replace('’', "'");
    let mut words = lower.split(|c: char| !(c.is_alphanumeric() || c == '\''));
    let mut first = words.next().unwrap_or("");
    // "and how many?", "also, which day?", "plus what time?"
    while matches!(first, "and" | "also" | "plus" | "then" | "so" | "but" | "") {
        match words.next() {
            Some(w) => first = w,
            None => return false,
        }
    }
    OPENERS.contains(&first)
        || REQUESTS
            .iter()
            .any(|r| lower.trim_start().starts_with(r.trim()))
}

/// Splits an asking sentence into its pieces. ", and …" (", also", ", plus", "; and") always
/// cuts: both sides are pieces ("Size M, and how many?" confirms the size and asks the
/// count). A bare comma, " and ", or a dash cuts only before a fragment that opens a question
/// of its own; a fragment before such a cut that asks nothing ("Great, how many?", "If 19:30
/// is gone, which time?") is the lead of the next piece.
fn clauses(sentence: &str) -> Vec<(String, String, bool)> {
    let fragments = merge_bare_which(fragments(sentence, &cuts(sentence)));
    let mut out: Vec<(String, String, bool)> = Vec::new();
    let mut lead = String::new();
    let n = fragments.len();
    for (k, (f, hard_before, hard_after)) in fragments.into_iter().enumerate() {
        let last = k + 1 == n;
        if !out.is_empty() && announces(&f) {
            continue;
        }
        if opens_question(&f) || hard_before || hard_after || (last && out.is_empty()) {
            let soft = !hard_before && !out.is_empty() && lead.is_empty();
            out.push((f, std::mem::take(&mut lead), soft));
        } else if last {
            // A trailing fragment that asks nothing belongs to the question before it.
            if let Some(prev) = out.last_mut() {
                prev.0 = format!("{} {}", prev.0, f);
            }
        } else {
            lead = format!("{lead} {f}").trim().to_string();
        }
    }
    out
}

/// Where a sentence may be cut: (start of a fragment, whether a hard cut — ", and" — opens it).
fn cuts(sentence: &str) -> Vec<(usize, bool)> {
    let mut cuts: Vec<(usize, bool)> = vec![(0, false)];
    let mut skip_until = 0;
    for (i, _) in sentence.char_indices() {
        if i < skip_until || quoted(sentence, i) {
            continue;
        }
        let rest = &sentence[i..];
        let hard = [", and ", "; and ", ", also ", ", plus ", ", & "]
            .iter()
            .find(|h| rest.starts_with(**h));
        if let Some(h) = hard {
            if i > 0 && sentence.len() > i + h.len() {
                cuts.push((i + 2, true));
                skip_until = i + h.len();
            }
            continue;
        }
        // "How many lattes — and oat milk?": a dash before "and" cuts like ", and".
        let dashed = [" — and ", " – and ", " - and "]
            .iter()
            .find(|h| rest.starts_with(**h));
        if let Some(h) = dashed {
            if i > 0 && sentence.len() > i + h.len() {
                cuts.push((i + 1, true));
                skip_until = i + h.len();
            }
            continue;
        }
        let sep_len = [", ", "; ", " and ", " — ", " – ", " - "]
            .iter()
            .find(|p| rest.starts_with(**p))
            .map_or(0, |p| if p.starts_with(' ') { 1 } else { 2 });
        if sep_len == 0 || i == 0 || sentence.len() <= i + sep_len {
            continue;
        }
        let rest = &sentence[i + sep_len..];
        if opens_question(rest) || opens_request(rest) {
            cuts.push((i + sep_len, false));
        }
    }
    cuts
}

/// The fragments between cuts: (text, hard cut before, hard cut after).
fn fragments(sentence: &str, cuts: &[(usize, bool)]) -> Vec<(String, bool, bool)> {
    let mut fragments = Vec::new();
    for (k, &(start, hard)) in cuts.iter().enumerate() {
        let end = cuts.get(k + 1).map_or(sentence.len(), |c| c.0);
        let text = clean(&sentence[start..end]);
        let hard_after = cuts.get(k + 1).is_some_and(|c| c.1);
        if !text.is_empty() {
            fragments.push((text, hard, hard_after));
        }
    }
    fragments
}

/// A bare "which?" after ", and" continues the decision before it ("Is another time okay, and
/// which?"): one piece.
fn merge_bare_which(fragments: Vec<(String, bool, bool)>) -> Vec<(String, bool, bool)> {
    const BARE: [&str; 6] = [
        "which",
        "what",
        "which one",
        "which ones",
        "when",
        "what then",
    ];
    let mut merged: Vec<(String, bool, bool)> = Vec::new();
    for f in fragments {
        let word = f.0.trim_end_matches(['?', '.', '!']).to_lowercase();
        match merged.last_mut() {
            Some(prev) if BARE.contains(&word.as_str()) && f.1 && word != "when" => {
                prev.0 = format!("{}, and {}", prev.0, f.0);
                prev.2 = f.2;
            }
            _ => merged.push(f),
        }
    }
    merged
}

fn clean(f: &str) -> String {
    let mut t = f
        .trim()
        .trim_start_matches([',', ';', '—', '–', '-'])
        .trim();
    for lead in ["and ", "also, ", "also ", "plus ", "& "] {
        if t.len() > lead.len() && t[..lead.len()].eq_ignore_ascii_case(lead) {
            t = t[lead.len()..].trim_start();
        }
    }
    t.trim_end_matches([',', ';']).trim().to_string()
}

/// The pieces of a message: each asking sentence's coordinated questions, with the statements
/// before them (and the lead of their own sentence) as context. A message that asks nothing
/// ("Booked for 7 pm.") has no piece.
pub fn pieces(message: &str) -> Vec<RawPiece> {
    let sents = sentences(message);
    let mut out = Vec::new();
    let mut context = String::new();
    for (n, s) in sents.iter().enumerate() {
        if !asks(s) {
            context = format!("{context} {s}").trim().to_string();
            continue;
        }
        for (text, lead, soft) in clauses(s) {
            out.push(RawPiece {
                text: drop_announcement(&text),
                lead,
                context: context.clone(),
                sentence: n,
                soft,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(m: &str) -> Vec<String> {
        pieces(m).into_iter().map(|p| p.text).collect()
    }

    #[test]
    fn abbreviations_do_not_end_sentences() {
        assert_eq!(
            sentences("Should I book Dr. Garcia for Friday? Or St. Mary's on Monday?"),
            [
                "Should I book Dr. Garcia for Friday?",
                "Or St. Mary's on Monday?"
            ]
        );
        assert_eq!(
            sentences("Is 8 a.m. too early? I can do e.g. 9 instead."),
            ["Is 8 a.m. too early?", "I can do e.g. 9 instead."]
        );
        assert_eq!(
            sentences("The class starts at 7 p.m. Is that OK?"),
            ["The class starts at 7 p.m.", "Is that OK?"]
        );
        assert_eq!(
            sentences("Mr. Lee said 3.5 hours. OK?"),
            ["Mr. Lee said 3.5 hours.", "OK?"]
        );
        // A title before a symbol or a bracket goes on: a street corner, an aside.
        assert_eq!(
            sentences(
                "Meet at Valencia St. & 16th, or at the park gate? Near Market St. (the café)?"
            ),
            [
                "Meet at Valencia St. & 16th, or at the park gate?",
                "Near Market St. (the café)?"
            ]
        );
        assert_eq!(
            sentences("I'll wait on Fell St. OK?"),
            ["I'll wait on Fell St. OK?"]
        );
        // After a clock time, a day or a short rest of the question goes on.
        assert_eq!(sentences("9 a.m. Saturday OK?"), ["9 a.m. Saturday OK?"]);
        assert_eq!(
            sentences("Pick-up at 5 p.m. Sound good? Or later?"),
            ["Pick-up at 5 p.m. Sound good?", "Or later?"]
        );
        assert_eq!(
            sentences("It starts at 7 p.m. Is that OK?"),
            ["It starts at 7 p.m.", "Is that OK?"]
        );
    }

    #[test]
    fn a_single_letter_before_a_question_ends_its_sentence() {
        assert_eq!(
            sentences("Your usual color is sold out in M. Which other color should I get?"),
            [
                "Your usual color is sold out in M.",
                "Which other color should I get?"
            ]
        );
        assert_eq!(
            sentences("Should I send it to J. Smith today?"),
            ["Should I send it to J. Smith today?"]
        );
    }

    #[test]
    fn announcements_after_a_request_are_no_piece() {
        assert_eq!(
            texts("Tell me what time works on Monday, and I'll send Tom the invite."),
            ["Tell me what time works on Monday"]
        );
        assert_eq!(
            texts("Let me know how many are flying, and we'll pick seats together."),
            ["Let me know how many are flying"]
        );
        // Said in its own words, a need is a request.
        assert_eq!(
            texts("Wednesday works; I'll also need a start time for the one-on-one."),
            ["I'll also need a start time for the one-on-one."]
        );
        assert!(asks("I just need the key finding from the interview."));
        assert!(!asks("I'll add your usual strawberries to the order."));
    }

    #[test]
    fn coordinated_questions_split_and_choices_do_not() {
        assert_eq!(
            texts("Who's coming, and how many?"),
            ["Who's coming", "how many?"]
        );
        assert_eq!(texts("Size M, and how many?"), ["Size M", "how many?"]);
        assert_eq!(
            texts("How many lattes should I get — and oat milk, same as last time?"),
            [
                "How many lattes should I get",
                "oat milk, same as last time?"
            ]
        );
        assert_eq!(
            texts("Is another time okay, and which?"),
            ["Is another time okay, and which?"]
        );
        assert_eq!(texts("Is 8:00 a.m. OK?"), ["Is 8:00 a.m. OK?"]);
        assert_eq!(
            texts("Is the trip the weekend of Oct. 10?"),
            ["Is the trip the weekend of Oct. 10?"]
        );
        assert_eq!(
            texts("Mon. is open after lunch — should I book it?"),
            ["should I book it?"]
        );
        assert_eq!(
            texts("What time and how many people?"),
            ["What time", "how many people?"]
        );
        assert_eq!(texts("Which size, S or M?"), ["Which size, S or M?"]);
        assert_eq!(
            texts("Would you like the patio or inside?"),
            ["Would you like the patio or inside?"]
        );
        assert_eq!(
            texts("If 19:30 is gone, which other time works?"),
            ["which other time works?"]
        );
        assert_eq!(texts("Great, how many people?"), ["how many people?"]);
    }

    #[test]
    fn statements_are_context_and_requests_without_a_question_mark_count() {
        let p = pieces("Shared rides aren't available. Would Comfort be OK?");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].text, "Would Comfort be OK?");
        assert_eq!(p[0].context, "Shared rides aren't available.");
        let p = pieces("They have 9:15 a.m. or 2:30 p.m. — which one?");
        assert_eq!(
            (p[0].text.as_str(), p[0].lead.as_str()),
            ("which one?", "They have 9:15 a.m. or 2:30 p.m.")
        );
        assert_eq!(
            texts("Please let me know the party size."),
            ["Please let me know the party size."]
        );
        assert!(
            texts("I'll book it now.").is_empty(),
            "a statement asks nothing"
        );
        assert_eq!(
            texts("How many tickets? Also, which section do you prefer?"),
            ["How many tickets?", "which section do you prefer?"]
        );
    }
}
