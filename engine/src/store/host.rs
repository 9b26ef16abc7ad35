//! This machine and its processes, as leases and temporary files name them: the host name,
//! whether a writer's process is alive, who wrote a temporary file and whether it is stale.

use super::contract::ObjectMeta;

/// Suffix of in-flight temporary files (`gc` removes those whose writer is gone).
pub const TMP_SUFFIX: &str = ".tmp";

/// A temporary file written on another machine whose writer cannot be asked is stale after
/// this long (seconds): no single object write takes an hour.
pub const FOREIGN_TMP_AGE: f64 = 3600.0;

/// Who wrote a temporary file, from its name (`.<name>.<host>-<pid>-<n>.tmp`, or the older
/// `.<name>.<pid>-<n>.tmp` written on this machine).
pub fn tmp_writer(key: &str) -> Option<(String, u32)> {
    let name = key.rsplit('/').next()?.strip_suffix(TMP_SUFFIX)?;
    let tag = name.rsplit_once('.')?.1;
    let mut parts = tag.rsplitn(3, '-');
    let _n = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let host = parts.next().map_or_else(host_name, str::to_string);
    Some((host, pid))
}

/// A temporary file is stale when its writer is gone: a dead process on this machine, or, for
/// another machine's, after [`FOREIGN_TMP_AGE`]. One whose name says nothing is stale too.
pub fn tmp_is_stale(meta: &ObjectMeta, now: f64) -> bool {
    match tmp_writer(&meta.key) {
        Some((host, pid)) if host == host_name() => !pid_alive(pid, None),
        Some(_) => now - meta.modified > FOREIGN_TMP_AGE,
        None => true,
    }
}

/// This machine's name as it appears in leases and temporary file names (only letters,
/// digits, `-` and `_`), so a lease or temp file can be told apart from another machine's.
pub fn host_name() -> String {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".into());
        let clean: String = raw
            .trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            "unknown".into()
        } else {
            clean
        }
    })
    .clone()
}

/// Whether process `pid` on this machine is alive and is still the process that started at
/// `start_ticks` (its start time in clock ticks since boot, `/proc/<pid>/stat` field 22), so a
/// reused pid does not keep a dead writer's lease or temp file alive. `None` skips that check.
pub fn pid_alive(pid: u32, start_ticks: Option<u64>) -> bool {
    match proc_start_ticks(pid) {
        None => false,
        Some(now) => start_ticks.is_none_or(|t| t == now),
    }
}

/// Start time of process `pid` in clock ticks since boot, `None` when it does not exist (or is
/// a zombie: it has exited and only waits to be reaped).
pub fn proc_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
        return None;
    }
    // `rest` starts at field 3 (state), so field 22 (starttime) is index 19.
    fields.get(19)?.parse().ok()
}

/// Now, as Unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
