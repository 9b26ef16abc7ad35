//! A store directory shared by a team: who may write it, how it is made shareable
//! (`prefflow init-store --group NAME`), and what a permission error tells the user.
//!
//! A store is **shared** when its root directory is group-writable and has the setgid bit
//! (what [`init_shared`] makes). In a shared store every directory prefflow creates gets mode
//! 2775 and every file 0664, whatever the writer's umask, and the setgid bit makes each new
//! entry belong to the store's group: every member of the group can read, write, replace and
//! delete everything another member wrote. A store that is not shared keeps the writers'
//! umask, as any directory does.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Mode of a directory in a shared store: rwxrwsr-x.
pub const SHARED_DIR_MODE: u32 = 0o2775;
/// Mode of a file in a shared store: rw-rw-r--.
pub const SHARED_FILE_MODE: u32 = 0o664;

/// Whether `root` is a shared store directory (group-writable, setgid).
pub fn is_shared(root: &Path) -> bool {
    std::fs::metadata(root)
        .map(|m| m.is_dir() && m.mode() & 0o2020 == 0o2020)
        .unwrap_or(false)
}

/// Whether an I/O error means "not allowed to write here": a permission (EACCES, EPERM) or a
/// read-only filesystem (EROFS).
pub fn io_is_not_permitted(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::PermissionDenied
        || matches!(e.raw_os_error(), Some(1 | 13 | 30))
}

/// The message for an access to `path` (in the store at `root`) that `e` refused — `write`
/// says whether it was a write ([`Error::NotWritable`]) or a read ([`Error::StoreSetup`]): the
/// path, who owns the nearest existing directory, who this process is, and the fix.
pub fn not_permitted(root: &Path, path: &Path, e: &std::io::Error, write: bool) -> Error {
    let root_shown = root.display();
    if !write {
        let me = whoami();
        return Error::StoreSetup(format!(
            "cannot read {}: {e}; this process runs as {me}; ask the store's owner to make it readable for you (`prefflow --store {root_shown} init-store --group TEAM` shares it with a group; docs/store.md, \"Permissions\")",
            path.display()
        ));
    }
    if e.raw_os_error() == Some(30) {
        return Error::NotWritable(format!(
            "cannot write {}: the filesystem holding the store {root_shown} is read-only; `plan`, `show` and `verify` still work, and so does a `run` with nothing to compute; to run work, remount it writable or pass --store with a writable directory",
            path.display()
        ));
    }
    let dir = path
        .ancestors()
        .find(|p| p.exists())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.to_path_buf());
    let owner = std::fs::metadata(&dir)
        .map(|m| {
            format!(
                "{} belongs to {} and group {}, mode {}",
                dir.display(),
                user_name(m.uid()),
                group_name(m.gid()),
                mode_string(m.mode(), m.is_dir())
            )
        })
        .unwrap_or_else(|_| format!("{} cannot be inspected", dir.display()));
    let me = whoami();
    let fix = match std::fs::metadata(root) {
        Ok(m) if is_shared(root) => format!(
            "the store is shared with group {}: ask for this user to be added to that group (then log in again), or ask the owner of {} to run `prefflow --store {root_shown} init-store --group {}` once more to repair the modes",
            group_name(m.gid()),
            dir.display(),
            group_name(m.gid())
        ),
        _ => format!(
            "to share one store among a team, its owner runs `prefflow --store {root_shown} init-store --group TEAM` once (docs/store.md, \"Permissions\"); or use a store of your own with --store"
        ),
    };
    Error::NotWritable(format!(
        "cannot write {}: permission denied: {owner}, and this process runs as {me}; {fix}. `plan`, `show` and `verify` work without writing, and so does a `run` with nothing to compute",
        path.display()
    ))
}

/// What [`init_shared`] did.
#[derive(Debug, Default)]
pub struct InitReport {
    /// The store's root.
    pub root: PathBuf,
    /// The group that owns it now (name, gid).
    pub group: (String, u32),
    /// Directories and files whose group or mode were changed.
    pub changed: usize,
    /// Entries checked.
    pub entries: usize,
}

/// Makes the store at `root` shareable by `group` (a name or a gid; `None`: the directory's
/// current group): creates it if missing, gives it and everything in it to the group, makes
/// directories 2775 (setgid: new entries inherit the group) and files group-writable. Safe to
/// run again (repairs what drifted); needs to be run by the owner of the entries (or root).
pub fn init_shared(root: &Path, group: Option<&str>) -> Result<InitReport> {
    let io = |path: &Path, source: std::io::Error| Error::Store {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(root).map_err(|e| io(root, e))?;
    let gid = match group {
        Some(name) => group_id(name)?,
        None => std::fs::metadata(root).map_err(|e| io(root, e))?.gid(),
    };
    let mut report = InitReport {
        root: root.to_path_buf(),
        group: (group_name(gid), gid),
        ..InitReport::default()
    };
    share(root, gid, &mut report).map_err(|(path, e)| match io_is_not_permitted(&e) {
        true => Error::NotWritable(format!(
            "init-store: cannot change the group or mode of {}: {e}; run it as the owner of the store's files (or as root)",
            path.display()
        )),
        false => io(&path, e),
    })?;
    Ok(report)
}

/// Gives `path` (and, for a directory, everything under it) to `gid` with shared modes.
fn share(
    path: &Path,
    gid: u32,
    report: &mut InitReport,
) -> std::result::Result<(), (PathBuf, std::io::Error)> {
    let err = |e| (path.to_path_buf(), e);
    let meta = std::fs::symlink_metadata(path).map_err(err)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    report.entries += 1;
    let mode = meta.mode() & 0o7777;
    let wanted = match meta.is_dir() {
        true => mode | SHARED_DIR_MODE,
        false => mode | SHARED_FILE_MODE,
    };
    if meta.gid() != gid || mode != wanted {
        report.changed += 1;
    }
    if meta.gid() != gid {
        std::os::unix::fs::chown(path, None, Some(gid)).map_err(err)?;
    }
    // chown may clear the setgid bit: set the mode after it, always.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted)).map_err(err)?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).map_err(err)? {
            let entry = entry.map_err(err)?;
            share(&entry.path(), gid, report)?;
        }
    }
    Ok(())
}

/// `rwxr-sr-x`-style mode text (with a leading `d` for directories).
fn mode_string(mode: u32, dir: bool) -> String {
    let mut out = String::from(if dir { "d" } else { "-" });
    for (shift, special, lower, upper) in [
        (6, 0o4000, 's', 'S'),
        (3, 0o2000, 's', 'S'),
        (0, 0o1000, 't', 'T'),
    ] {
        let bits = (mode >> shift) & 7;
        out.push(if bits & 4 != 0 { 'r' } else { '-' });
        out.push(if bits & 2 != 0 { 'w' } else { '-' });
        out.push(match (bits & 1 != 0, mode & special != 0) {
            (true, true) => lower,
            (false, true) => upper,
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    out
}

/// `name (uid N)` from /etc/passwd, or the number alone.
fn user_name(uid: u32) -> String {
    match lookup("/etc/passwd", |f| {
        f.get(2).and_then(|v| v.parse::<u32>().ok()) == Some(uid)
    }) {
        Some(name) => format!("{name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// `name (gid N)` from /etc/group, or the number alone.
fn group_name(gid: u32) -> String {
    match lookup("/etc/group", |f| {
        f.get(2).and_then(|v| v.parse::<u32>().ok()) == Some(gid)
    }) {
        Some(name) => format!("{name} (gid {gid})"),
        None => format!("gid {gid}"),
    }
}

/// The gid of group `name` (or a number): /etc/group, then `getent group` (LDAP, SSSD…).
fn group_id(name: &str) -> Result<u32> {
    if let Ok(gid) = name.parse::<u32>() {
        return Ok(gid);
    }
    let local = std::fs::read_to_string("/etc/group").ok().and_then(|text| {
        text.lines().find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&name))
                .then(|| f.get(2)?.parse().ok())
                .flatten()
        })
    });
    let found = local.or_else(|| {
        let out = std::process::Command::new("getent")
            .args(["group", name])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.split(':').nth(2)?.trim().parse().ok()
    });
    found.ok_or_else(|| {
        Error::Usage(format!(
            "init-store --group {name}: no such group on this machine (`getent group {name}` finds none); create it first (e.g. `groupadd {name}`) or give its number"
        ))
    })
}

/// The first field of the first line of `file` (a passwd/group file) that `hit` accepts.
fn lookup(file: &str, hit: impl Fn(&[&str]) -> bool) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        hit(&f).then(|| f[0].to_string())
    })
}

/// This process's user and groups, from /proc/self/status.
fn whoami() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let uid = field("Uid:").get(1).and_then(|v| v.parse().ok());
    let mut groups: Vec<u32> = field("Gid:")
        .get(1)
        .and_then(|v| v.parse().ok())
        .into_iter()
        .collect();
    for g in field("Groups:").iter().filter_map(|v| v.parse().ok()) {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let groups: Vec<String> = groups.into_iter().map(group_name).collect();
    match uid {
        Some(uid) => format!("{} in {}", user_name(uid), groups.join(", ")),
        None => "an unknown user".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_like_ls() {
        assert_eq!(mode_string(0o2775, true), "drwxrwsr-x");
        assert_eq!(mode_string(0o644, false), "-rw-r--r--");
        assert_eq!(mode_string(0o2664, false), "-rw-rwSr--");
    }

    #[test]
    fn init_makes_a_directory_shared_and_is_repeatable() {
        let dir = tempfile_dir("init");
        std::fs::create_dir_all(dir.join("items/ab")).expect("mkdir");
        std::fs::write(dir.join("items/ab/x.json"), b"{}").expect("write");
        let gid = std::fs::metadata(&dir).expect("meta").gid();
        let report = init_shared(&dir, Some(&gid.to_string())).expect("init");
        assert_eq!(report.entries, 4);
        assert!(is_shared(&dir));
        let file = std::fs::metadata(dir.join("items/ab/x.json")).expect("meta");
        assert_eq!(file.mode() & 0o777, 0o664);
        let sub = std::fs::metadata(dir.join("items/ab")).expect("meta");
        assert_eq!(sub.mode() & 0o7777, SHARED_DIR_MODE);
        let again = init_shared(&dir, None).expect("again");
        assert_eq!(again.changed, 0);
        let err = init_shared(&dir, Some("no-such-group-h27"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no such group"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("prefflow-team-{name}-{}", std::process::id()))
    }
}
