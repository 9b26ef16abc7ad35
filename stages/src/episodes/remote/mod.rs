//! Remote devices: episodes on a KnowU-Bench / MobileWorld-style env server (an Android emulator
//! behind HTTP) instead of the simulated phone. The API prefflow speaks is in
//! docs/remote-device.md.
//!
//! - [`client`]: one server's endpoints, timeouts, failure classes and the health-wait policy.
//! - [`actions`]: prefflow actions → device action JSON; [`screen`]: the device's text screen.
//! - [`env`]: [`RemoteEnv`] (the `Environment`) and [`DeviceUser`] (ask_user answered on-device).
//! - [`episode`]: one task start to finish, retried from a fresh init when the device fails.
//! - [`lease`]: which device URL a running item holds (one episode per device at a time).
//! - [`params`]: `run_remote_episodes`' parameters; [`tasks`]: the tasks an item plays;
//!   [`item`]: the params parsed once per instance and an item played on a leased device.
//! - `fake`: an in-process fake device following the documented API, for tests (feature
//!   `testkit`).

pub mod actions;
pub mod client;
pub mod env;
pub mod episode;
pub mod error;
#[cfg(any(test, feature = "testkit"))]
pub mod fake;
pub mod item;
pub mod lease;
pub mod params;
pub mod screen;
pub mod tasks;

pub use client::{DeviceClient, DevicePatience, Evaluation, DEFAULT_DEVICE_ID};
pub use env::{DeviceUser, RemoteEnv};
pub use episode::{play_remote, Played, RemoteSpec};
pub use error::DeviceError;

#[cfg(test)]
mod tests;
