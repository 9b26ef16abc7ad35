//! Why a remote device call failed. The split matters: a device that is unreachable or reports
//! itself unhealthy may recover (the episode is retried from a fresh task init), while a device
//! that rejects a request (unknown task, malformed action) will reject it again.

use thiserror::Error;

/// A failed call to a device's env server.
#[derive(Debug, Error)]
pub enum DeviceError {
    /// No HTTP answer at all: connection refused, reset, DNS, or the request timed out.
    #[error(
        "device {url}: {what} got no answer ({cause}); is the env server running and reachable?"
    )]
    Unreachable {
        /// The device's base URL.
        url: String,
        /// The request, e.g. `POST /task/init`.
        what: String,
        /// The transport error.
        cause: String,
    },
    /// The device answered 5xx (503 = unhealthy emulator) or `/health` said `ok: false`.
    #[error("device {url}: {what} answered {status}: {detail}")]
    Unhealthy {
        /// The device's base URL.
        url: String,
        /// The request.
        what: String,
        /// HTTP status.
        status: u16,
        /// The server's `detail` / `error` text.
        detail: String,
    },
    /// The device answered 4xx: the request itself is wrong and retrying cannot help.
    #[error("device {url}: {what} was rejected with {status}: {detail}")]
    Rejected {
        /// The device's base URL.
        url: String,
        /// The request.
        what: String,
        /// HTTP status.
        status: u16,
        /// The server's `detail` / `error` text.
        detail: String,
    },
    /// A 2xx answer whose body is not what docs/remote-device.md specifies.
    #[error("device {url}: {what} answered an unexpected body ({why}); see docs/remote-device.md for the expected shape")]
    Malformed {
        /// The device's base URL.
        url: String,
        /// The request.
        what: String,
        /// What was wrong.
        why: String,
    },
    /// The device URL itself cannot be used.
    #[error("device URL `{url}`: {why}")]
    BadUrl {
        /// The configured URL.
        url: String,
        /// What is wrong with it.
        why: String,
    },
}

impl DeviceError {
    /// Whether the device may recover: re-check `/health`, re-init the task and try again.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            DeviceError::Unreachable { .. } | DeviceError::Unhealthy { .. }
        )
    }
}
