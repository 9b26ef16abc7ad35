//! `prefflow kinds`: the registered stage kinds.

/// One line per kind: name, version, summary.
pub(crate) fn run() -> anyhow::Result<u8> {
    for kind in crate::pipeline::registry().iter() {
        println!(
            "{:<16} v{:<4} {}",
            kind.name(),
            kind.version(),
            kind.summary()
        );
    }
    Ok(0)
}
