//! The bounds that keep `serve-env` small under abuse: how many episodes may be open, how long
//! an idle one lives, and how much one request or one episode may bring in. Every limit has a
//! `serve-env` flag of the same name (README, "Serving the phone") and is reported by
//! `GET /health`, so a client can see what it is allowed before it hits a limit.

use std::time::Duration;

use serde::Serialize;

/// Limits of one phone server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServeLimits {
    /// Episodes open at once (`--max-episodes`); creating one more answers 429.
    pub max_episodes: usize,
    /// Steps one episode may take (`--max-steps`); the next step answers 429.
    pub max_steps: u32,
    /// Bytes of one request body (`--max-body-bytes`); a larger body answers 413.
    pub max_body_bytes: usize,
    /// Request bytes one episode may take in over its life (`--max-episode-bytes`): its state
    /// only grows from what it is sent, so this bounds each episode's memory; past it, 413.
    pub max_episode_bytes: usize,
    /// Bytes of one observation's text (`--max-observation-bytes`); a longer screen or tool
    /// result is cut at this size and says so at its end.
    pub max_observation_bytes: usize,
    /// An episode that receives no request for this long is closed (`--episode-ttl-secs`).
    #[serde(rename = "episode_ttl_secs", serialize_with = "secs")]
    pub episode_ttl: Duration,
    /// Episodes one client may have open at once (`--max-episodes-per-client`): one client
    /// that never closes its episodes cannot lock the others out. A client is its
    /// `X-Client-Id` header, else its address.
    pub max_episodes_per_client: usize,
    /// At a cap (the server's or the client's), an episode idle this long may be closed to
    /// make room, the longest idle first (`--evict-idle-secs`).
    #[serde(rename = "evict_idle_secs", serialize_with = "secs")]
    pub evict_idle: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_episodes: 64,
            max_steps: 1000,
            max_body_bytes: 1 << 20,
            max_episode_bytes: 16 << 20,
            max_observation_bytes: 256 << 10,
            episode_ttl: Duration::from_secs(600),
            max_episodes_per_client: 32,
            evict_idle: Duration::from_secs(30),
        }
    }
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

impl ServeLimits {
    /// Checks that every limit lets at least something through, naming the flag to fix.
    pub fn check(&self) -> Result<(), String> {
        let zero = [
            ("--max-episodes", self.max_episodes == 0),
            ("--max-steps", self.max_steps == 0),
            ("--max-body-bytes", self.max_body_bytes == 0),
            ("--max-episode-bytes", self.max_episode_bytes == 0),
            ("--max-observation-bytes", self.max_observation_bytes < 64),
            ("--episode-ttl-secs", self.episode_ttl.is_zero()),
            (
                "--max-episodes-per-client",
                self.max_episodes_per_client == 0,
            ),
        ];
        match zero.iter().find(|(_, bad)| *bad) {
            Some((flag, _)) => Err(format!(
                "{flag} is too small to serve anything; give a positive value (observations need at least 64 bytes)"
            )),
            None => Ok(()),
        }
    }
}

/// Cuts `text` to at most `limit` bytes (on a character boundary) and says how much was cut,
/// so an agent knows the screen goes on instead of reading a silently shortened one.
pub fn cap_text(text: &mut String, limit: usize) {
    if text.len() <= limit {
        return;
    }
    let total = text.len();
    let note = format!(
        "\n… [observation cut: {total} bytes, this server shows at most {limit} (--max-observation-bytes)]"
    );
    let mut keep = limit.saturating_sub(note.len());
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    text.truncate(keep);
    text.push_str(&note);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_on_a_char_boundary_and_says_so() {
        let mut t = "é".repeat(400);
        cap_text(&mut t, 300);
        assert!(t.len() <= 300, "{}", t.len());
        assert!(t.contains("cut: 800 bytes"), "{t}");
        let mut short = "ok".to_string();
        cap_text(&mut short, 300);
        assert_eq!(short, "ok");
    }

    #[test]
    fn zero_limits_are_refused_by_flag_name() {
        let bad = ServeLimits {
            max_steps: 0,
            ..ServeLimits::default()
        };
        assert!(bad.check().unwrap_err().contains("--max-steps"));
        assert!(ServeLimits::default().check().is_ok());
    }
}
