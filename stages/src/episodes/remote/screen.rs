//! The text screen of a remote device: the accessibility elements `GET /a11y` returns, rendered
//! the way the simulated phone renders GUI screens (`[n] text`), so the same text agents can act
//! on a device. The element bounds stay here so a `tap` on `[n]` becomes a click at its centre.

use serde::{Deserialize, Serialize};

/// One on-screen element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Element {
    /// The number the agent refers to (`tap {"element": n}`).
    pub index: u32,
    /// Visible text or content description.
    #[serde(default)]
    pub text: String,
    /// Widget class (`android.widget.Button`, …), when the device reports it.
    #[serde(default)]
    pub class: Option<String>,
    /// `[left, top, right, bottom]` in screen pixels.
    pub bounds: [i64; 4],
}

impl Element {
    /// The point a click on this element lands on.
    pub fn center(&self) -> (i64, i64) {
        let [l, t, r, b] = self.bounds;
        ((l + r) / 2, (t + b) / 2)
    }
}

/// The screen as agent-facing text, one element per line.
pub fn render(elements: &[Element]) -> String {
    if elements.is_empty() {
        return "(the device reports no accessible elements on this screen)".into();
    }
    elements
        .iter()
        .map(|e| match &e.class {
            Some(c) => format!("[{}] {} ({})", e.index, e.text, short_class(c)),
            None => format!("[{}] {}", e.index, e.text),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn short_class(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_numbered_lines_and_finds_centres() {
        let e = Element {
            index: 4,
            text: "Send".into(),
            class: Some("android.widget.Button".into()),
            bounds: [100, 200, 300, 260],
        };
        assert_eq!(e.center(), (200, 230));
        assert_eq!(render(std::slice::from_ref(&e)), "[4] Send (Button)");
        assert!(render(&[]).contains("no accessible elements"));
    }
}
