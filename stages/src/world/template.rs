//! Text templates with `{path.to.value}` placeholders, shared by app result messages, effect
//! values and persona evidence. Parsing is separate from resolution so each user can bind
//! placeholder paths to its own variables once, then render many times cheaply.

use std::fmt::Write;

/// How a placeholder's text is transformed before insertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Inserted as is.
    None,
    /// First letter upper-cased (`thai` → `Thai`).
    Cap,
    /// All upper-case.
    Upper,
    /// All lower-case.
    Lower,
    /// First letter lower-cased (`Booked …` → `booked …`, a sentence wrapped in another).
    Uncap,
}

/// One piece of a template: literal text, or a placeholder whose variable is `V`.
#[derive(Debug, Clone, PartialEq)]
pub enum Seg<V> {
    /// Literal text.
    Text(String),
    /// A placeholder.
    Var(V, Filter),
}

/// A parsed template. `V` is `Vec<String>` (the dotted path) right after parsing and a
/// resolved variable after [`Template::resolve`].
#[derive(Debug, Clone, PartialEq)]
pub struct Template<V> {
    /// The pieces, in order.
    pub segs: Vec<Seg<V>>,
}

/// Parses a template. `{{` and `}}` stand for literal braces; `{a.b|cap}` is a placeholder
/// with path `[a, b]` and filter `cap`.
pub fn parse(src: &str) -> Result<Template<Vec<String>>, String> {
    let mut segs = Vec::new();
    let mut text = String::new();
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '{' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => inner.push(ch),
                        None => return Err(format!("unclosed `{{` in \"{src}\"")),
                    }
                }
                if !text.is_empty() {
                    segs.push(Seg::Text(std::mem::take(&mut text)));
                }
                segs.push(parse_placeholder(&inner)?);
            }
            '}' => {
                return Err(format!(
                    "stray `}}` in \"{src}\" (write `}}}}` for a literal brace)"
                ))
            }
            _ => text.push(c),
        }
    }
    if !text.is_empty() {
        segs.push(Seg::Text(text));
    }
    Ok(Template { segs })
}

fn parse_placeholder(inner: &str) -> Result<Seg<Vec<String>>, String> {
    let (path, filter) = match inner.split_once('|') {
        None => (inner, Filter::None),
        Some((p, f)) => (p, parse_filter(f.trim())?),
    };
    let parts: Vec<String> = path
        .trim()
        .split('.')
        .map(|s| s.trim().to_string())
        .collect();
    let valid = |p: &String| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !parts.iter().all(valid) {
        return Err(format!(
            "bad placeholder `{{{inner}}}`: use `{{name}}` or `{{name.field}}`"
        ));
    }
    Ok(Seg::Var(parts, filter))
}

fn parse_filter(f: &str) -> Result<Filter, String> {
    match f {
        "cap" => Ok(Filter::Cap),
        "upper" => Ok(Filter::Upper),
        "lower" => Ok(Filter::Lower),
        "uncap" => Ok(Filter::Uncap),
        other => Err(format!(
            "unknown filter `{other}`; use cap, uncap, upper or lower"
        )),
    }
}

impl<V> Template<V> {
    /// Maps every placeholder path to a resolved variable; stops at the first failure.
    pub fn resolve<W, E>(self, mut f: impl FnMut(V) -> Result<W, E>) -> Result<Template<W>, E> {
        let mut segs = Vec::with_capacity(self.segs.len());
        for s in self.segs {
            segs.push(match s {
                Seg::Text(t) => Seg::Text(t),
                Seg::Var(v, filter) => Seg::Var(f(v)?, filter),
            });
        }
        Ok(Template { segs })
    }

    /// Renders into `out`; `value` writes the text of one variable into the given buffer.
    pub fn render_into(&self, out: &mut String, mut value: impl FnMut(&V, &mut String)) {
        let mut buf = String::new();
        for s in &self.segs {
            match s {
                Seg::Text(t) => out.push_str(t),
                Seg::Var(v, filter) => {
                    buf.clear();
                    value(v, &mut buf);
                    apply_filter(out, &buf, *filter);
                }
            }
        }
    }

    /// Renders into a fresh string.
    pub fn render(&self, value: impl FnMut(&V, &mut String)) -> String {
        let mut out = String::new();
        self.render_into(&mut out, value);
        out
    }

    /// The placeholder variables, in order.
    pub fn vars(&self) -> impl Iterator<Item = &V> {
        self.segs.iter().filter_map(|s| match s {
            Seg::Var(v, _) => Some(v),
            Seg::Text(_) => None,
        })
    }
}

fn apply_filter(out: &mut String, s: &str, filter: Filter) {
    match filter {
        Filter::None => out.push_str(s),
        Filter::Upper => out.push_str(&s.to_uppercase()),
        Filter::Lower => out.push_str(&s.to_lowercase()),
        Filter::Cap => {
            let mut cs = s.chars();
            if let Some(first) = cs.next() {
                let _ = write!(out, "{}{}", first.to_uppercase(), cs.as_str());
            }
        }
        Filter::Uncap => {
            let mut cs = s.chars();
            if let Some(first) = cs.next() {
                let _ = write!(out, "{}{}", first.to_lowercase(), cs.as_str());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(src: &str) -> String {
        parse(src)
            .unwrap()
            .render(|path, out| out.push_str(&path.join("/")))
    }

    #[test]
    fn placeholders_filters_and_escapes() {
        assert_eq!(
            render("at {r.name} ({r.cuisine|cap})"),
            "at r/name (R/cuisine)"
        );
        assert_eq!(render("{{literal}} {x|upper}"), "{literal} X");
        assert_eq!(render("for Tom: {Booked|uncap}"), "for Tom: booked");
        assert_eq!(render("plain"), "plain");
    }

    #[test]
    fn malformed_templates_are_rejected() {
        assert!(parse("oops {r.name").unwrap_err().contains("unclosed"));
        assert!(parse("oops }").unwrap_err().contains("stray"));
        assert!(parse("{r..name}").unwrap_err().contains("bad placeholder"));
        assert!(parse("{r|shout}").unwrap_err().contains("unknown filter"));
    }
}
