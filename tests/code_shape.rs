//! The shape of the workspace's code and docs: no production function longer than 80 lines
//! unless `tests/fixtures/long_functions.txt` lists it (a ratchet: a listed function may only
//! shrink), and every path `docs/ARCHITECTURE.md` names exists.
//!
//! Production sources are `src/`, `engine/src/`, `stages/src/` and the build scripts
//! (`engine/build.rs`, `engine/fingerprint.rs`, `stages/build.rs`). Test code is left out: files
//! named `tests.rs` or `*_tests.rs`, modules declared under `#[cfg(test)]` (inline, or their
//! files, e.g. `testkit.rs`), and any item under `#[cfg(test)]`. A function's length is its
//! lines from the `fn` line to its closing brace, counted on the text with comments, strings
//! and character literals blanked out, so braces inside them do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lines a production function may have without being listed.
const MAX_LINES: usize = 80;

/// The allow-list: `path name lines`, one per line.
const ALLOWED: &str = "tests/fixtures/long_functions.txt";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `text` with comments, string literals (raw ones too) and character literals replaced by
/// spaces, newlines kept, so lines still count and braces in them are not code.
fn blank_non_code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = (!ident_before).then(|| raw_string_start(&b[i..])).flatten() {
            let open = i + hashes.1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes.0))
                .collect();
            let end = b[open..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| open + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}', '{'), not a lifetime ('a).
            let len = char_literal_len(&b[i..]);
            blank(&mut out, i, i + len);
            i += len.max(1);
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// At `r"`, `r#"`, `br"`…: (number of `#`, bytes up to and including the opening quote).
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let start = match b {
        [b'b', b'r', ..] => 2,
        [b'r', ..] => 1,
        _ => return None,
    };
    let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
    (b.get(start + hashes) == Some(&b'"')).then_some((hashes, start + hashes + 1))
}

/// The length of the character literal at the start of `b`, or 0 (a lifetime or label).
fn char_literal_len(b: &[u8]) -> usize {
    match b {
        [b'\'', b'\\', b'u', b'{', ..] => b.iter().position(|&c| c == b'}').map_or(0, |n| n + 2),
        [b'\'', b'\\', _, b'\'', ..] => 4,
        [b'\'', b'\\', b'x', _, _, b'\'', ..] => 6,
        [b'\'', c, b'\'', ..] if *c != b'\\' => 3,
        [b'\'', ..] => {
            // A multi-byte UTF-8 character.
            let s = std::str::from_utf8(&b[1..b.len().min(6)]).unwrap_or_default();
            match s.chars().next() {
                Some(ch) if ch.len_utf8() > 1 && b.get(1 + ch.len_utf8()) == Some(&b'\'') => {
                    ch.len_utf8() + 2
                }
                _ => 0,
            }
        }
        _ => 0,
    }
}

/// The function name declared on `line` (`pub(crate) async fn name…`), if any.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        let before = rest;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest).trim_start();
        }
        if let Some(r) = rest.strip_prefix("pub(in ") {
            rest = r.split_once(')').map_or(r, |(_, r)| r).trim_start();
        }
        if rest.starts_with("extern \"") {
            rest = rest.split_once("\" ").map_or(rest, |(_, r)| r).trim_start();
        }
        if rest == before {
            break;
        }
    }
    let name = rest.strip_prefix("fn ")?;
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    (end > 0).then(|| &name[..end])
}

/// The line (index) where the item starting at `from` ends: its matching closing brace, or
/// the `;` that ends it before any brace opens.
fn item_end(lines: &[&str], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut opened = false;
    for (n, line) in lines.iter().enumerate().skip(from) {
        for c in line.chars() {
            match c {
                ';' if !opened => return Some(n),
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' if opened => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(n);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// The `#[cfg(test)]` items of `lines` (code with literals and comments blanked): the first
/// and last line of each, and the module's name when the item is `mod name;` in its own file.
fn test_items<'a>(lines: &[&'a str]) -> Vec<(usize, usize, Option<&'a str>)> {
    let mut items = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        let Some(after) = lines[n].trim().strip_prefix("#[cfg(test)]") else {
            n += 1;
            continue;
        };
        // Skip the attributes that follow, then the whole item.
        let mut item = if after.trim().is_empty() { n + 1 } else { n };
        while item > n && item < lines.len() && lines[item].trim().starts_with("#[") {
            item += 1;
        }
        let decl = match item == n {
            true => after,
            false => lines.get(item).copied().unwrap_or(""),
        };
        let end = item_end(lines, item).unwrap_or(lines.len().saturating_sub(1));
        items.push((n, end, declared_module(decl)));
        n = end + 1;
    }
    items
}

/// The functions of one source file longer than [`MAX_LINES`] (name, lines), leaving out items
/// under `#[cfg(test)]`; and the files of the modules it declares under `#[cfg(test)]`.
fn long_functions(path: &Path, text: &str) -> (Vec<(String, usize)>, Vec<PathBuf>) {
    let code = blank_non_code(text);
    let lines: Vec<&str> = code.lines().collect();
    let tests = test_items(&lines);
    let test_files = tests
        .iter()
        .filter_map(|t| t.2)
        .flat_map(|module| module_files(path, module))
        .collect();
    let mut long = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        if let Some(&(_, end, _)) = tests.iter().find(|t| t.0 == n) {
            n = end + 1;
            continue;
        }
        if let Some(name) = fn_name(lines[n]) {
            if let Some(end) = item_end(&lines, n) {
                let len = end - n + 1;
                if len > MAX_LINES {
                    long.push((name.to_string(), len));
                }
            }
        }
        n += 1;
    }
    (long, test_files)
}

/// `mod name;` (a module in its own file): its name.
fn declared_module(line: &str) -> Option<&str> {
    let line = line.trim();
    let line = line
        .strip_prefix("pub(crate) ")
        .or_else(|| line.strip_prefix("pub "))
        .unwrap_or(line);
    line.strip_prefix("mod ")?.strip_suffix(';')
}

/// Where module `name`, declared in `parent`, lives: `name.rs` or `name/` beside a `mod.rs`,
/// `lib.rs` or `main.rs`, else in the folder named after `parent`.
fn module_files(parent: &Path, name: &str) -> Vec<PathBuf> {
    let dir = match parent.file_name().and_then(|f| f.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => parent.parent().map(Path::to_path_buf),
        _ => parent
            .parent()
            .map(|d| d.join(parent.file_stem().unwrap_or_default())),
    }
    .unwrap_or_default();
    vec![dir.join(format!("{name}.rs")), dir.join(name)]
}

/// Every production function over [`MAX_LINES`] in the workspace: `(path name)` → lines (the
/// longest, when a file has several functions of one name).
fn workspace_long_functions() -> BTreeMap<String, usize> {
    let mut files = Vec::new();
    for dir in ["src", "engine/src", "stages/src"] {
        rust_files(&root().join(dir), &mut files);
    }
    for file in [
        "engine/build.rs",
        "engine/fingerprint.rs",
        "stages/build.rs",
    ] {
        files.push(root().join(file));
    }
    let mut found = Vec::new();
    let mut test_only: BTreeSet<PathBuf> = BTreeSet::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let (long, tests) = long_functions(path, &text);
        test_only.extend(tests);
        found.push((path.clone(), long));
    }
    let mut out = BTreeMap::new();
    for (path, long) in found {
        let name = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        let is_test = name == "tests.rs"
            || name.ends_with("_tests.rs")
            || test_only.iter().any(|t| path.starts_with(t));
        if is_test {
            continue;
        }
        let rel = path
            .strip_prefix(root())
            .unwrap_or(&path)
            .display()
            .to_string();
        for (f, lines) in long {
            let entry = out.entry(format!("{rel} {f}")).or_insert(0);
            *entry = (*entry).max(lines);
        }
    }
    out
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The target is no production function over 80 lines; until then `long_functions.txt` lists
/// each longer one with its length, and a listed function may only shrink: a function may not
/// grow past its listed length, and one not listed may not pass 80 lines. After splitting
/// functions, regenerate the list with
/// `PREFFLOW_WRITE_LONG_FUNCTIONS=1 cargo test --test integration code_shape`.
#[test]
fn no_production_function_grows_past_80_lines_or_its_listed_length() {
    let now = workspace_long_functions();
    let allowed_path = root().join(ALLOWED);
    if std::env::var_os("PREFFLOW_WRITE_LONG_FUNCTIONS").is_some() {
        let text: String = now.iter().map(|(f, n)| format!("{f} {n}\n")).collect();
        std::fs::write(&allowed_path, text).expect("write long_functions.txt");
    }
    let allowed: BTreeMap<String, usize> = std::fs::read_to_string(&allowed_path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(f, n)| (f.to_string(), n.parse().unwrap_or(0)))
        .collect();
    let over: Vec<String> = now
        .iter()
        .filter_map(|(f, &n)| {
            let limit = allowed.get(f).copied().unwrap_or(MAX_LINES);
            (n > limit).then(|| format!("{f}: {n} lines (allowed {limit})"))
        })
        .collect();
    assert!(
        over.is_empty(),
        "functions too long — split them into their phases (short functions whose names say \
         what they do):\n{}",
        over.join("\n")
    );
}

/// The scanner counts what it should: a function's lines to its closing brace, braces in
/// strings, characters and comments ignored, `#[cfg(test)]` items and their files left out.
#[test]
fn the_function_length_scanner_skips_literals_comments_and_test_code() {
    let body = "    let _ = \"}\";\n".repeat(MAX_LINES);
    let text = format!(
        "/// {{\npub(crate) async fn long() {{\n    let _ = '}}';\n    // }}\n{body}}}\n\
         fn short() {{ let _ = r#\"{{\"#; }}\n\
         #[cfg(test)]\nmod tests {{\n    fn hidden() {{\n{body}    }}\n}}\n\
         #[cfg(test)]\nmod fixtures_tests;\n\
         fn after<'a>(x: &'a str) -> &'a str {{\n{body}    x\n}}\n"
    );
    let (long, test_files) = long_functions(Path::new("a/lib.rs"), &text);
    assert_eq!(
        long,
        vec![
            ("long".to_string(), MAX_LINES + 4),
            ("after".to_string(), MAX_LINES + 3)
        ]
    );
    assert!(test_files.contains(&PathBuf::from("a/fixtures_tests.rs")));
}

/// Every path `docs/ARCHITECTURE.md` names in backticks or links exists: full paths
/// (`stages/src/…`, with `{a,b}` groups expanded), and bare file names in a row that named a
/// folder before them (`engine/src/store/` (`fs.rs`, …)), looked up in that folder.
#[test]
fn every_path_architecture_names_exists() {
    let doc = root().join("docs/ARCHITECTURE.md");
    let text = std::fs::read_to_string(&doc).expect("docs/ARCHITECTURE.md");
    let mut missing = Vec::new();
    let mut checked = 0;
    for (n, line) in text.lines().enumerate() {
        let mut folder: Option<String> = None;
        for token in line.split('`').skip(1).step_by(2) {
            for path in expand_braces(token) {
                let Some(full) = named_path(&path, folder.as_deref()) else {
                    continue;
                };
                checked += 1;
                if !root().join(&full).exists() {
                    missing.push(format!("docs/ARCHITECTURE.md:{}: `{full}`", n + 1));
                }
                if full.ends_with('/') {
                    folder = Some(full);
                }
            }
        }
        for link in line.split("](").skip(1) {
            let target = link.split([')', '#']).next().unwrap_or("");
            if target.is_empty() || target.contains("://") {
                continue;
            }
            checked += 1;
            if !root().join("docs").join(target).exists() {
                missing.push(format!("docs/ARCHITECTURE.md:{}: link {target}", n + 1));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} paths found: the parser lost them"
    );
    assert!(
        missing.is_empty(),
        "paths named in docs/ARCHITECTURE.md that do not exist:\n{}",
        missing.join("\n")
    );
}

/// `a/{b,c}.rs` → `a/b.rs`, `a/c.rs` (one group).
fn expand_braces(token: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (token.find('{'), token.find('}')) else {
        return vec![token.to_string()];
    };
    if close < open || token.contains(' ') {
        return vec![token.to_string()];
    }
    token[open + 1..close]
        .split(',')
        .map(|part| format!("{}{part}{}", &token[..open], &token[close + 1..]))
        .collect()
}

/// The repository path a backticked token names: a path under one of the repository's
/// folders, or a bare `name.rs` inside the row's last named folder; `None` for code, commands
/// and anything else.
fn named_path(token: &str, folder: Option<&str>) -> Option<String> {
    const ROOTS: [&str; 7] = [
        "engine/",
        "stages/",
        "src/",
        "datasets/",
        "docs/",
        "pipelines/",
        "tests/",
    ];
    let plain = |c: char| c.is_ascii_alphanumeric() || "/_.-".contains(c);
    if token.is_empty() || !token.chars().all(plain) {
        return None;
    }
    if ROOTS.iter().any(|r| token.starts_with(r)) {
        return Some(token.to_string());
    }
    let folder = folder?;
    let file = token.ends_with(".rs") && !token.contains('/');
    file.then(|| format!("{folder}{token}"))
}

/// The crate root, as a layer: `lib.rs` or `main.rs`.
const CRATE_ROOT: &str = "the crate root";

/// The top-level modules of a crate's `src/`: its folders and its `.rs` files but the root.
fn top_modules(src: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(src) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            match e.path().is_dir() {
                true => Some(name),
                false => name
                    .strip_suffix(".rs")
                    .filter(|m| !matches!(*m, "lib" | "main"))
                    .map(str::to_string),
            }
        })
        .collect()
}

/// The module path of the file at `rel` (relative to `src/`): `a/b/mod.rs` → `[a, b]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        if !["mod.rs", "lib.rs", "main.rs"].contains(&last.as_str()) {
            parts.push(last.trim_end_matches(".rs").to_string());
        }
    }
    parts
}

/// The members of a `use` group, whole (`{a::b, c, d::{e}}` → `a::b`, `c`, `d::{e}`); `rest`
/// starts after the opening brace.
fn group_members(rest: &str) -> Vec<&str> {
    let (mut depth, mut start, mut members) = (0usize, 0usize, Vec::new());
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                members.push(rest[start..i].trim());
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                members.push(rest[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    members.retain(|m| !m.is_empty());
    members
}

/// The first name of each path in a `use` group (`{a::b, c, d::{e}}` → `a`, `c`, `d`); `rest`
/// starts after the opening brace.
fn group_heads(rest: &str) -> Vec<&str> {
    group_members(rest)
        .into_iter()
        .map(|h| h.split("::").next().unwrap_or("").trim())
        .filter(|h| !h.is_empty())
        .collect()
}

/// Each `crate::…` or `super::…` path in `code` (the file at `rel`): how many names of the
/// file's module path it keeps (`crate::` none, each `super::` one fewer), the text after
/// those prefixes, and its line. `$crate::` (inside macros) is not an import of the file.
fn path_sites<'a>(rel: &Path, code: &'a str) -> Vec<(usize, &'a str, usize)> {
    let here = module_path(rel);
    let mut sites = Vec::new();
    for (at, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
            continue;
        }
        let mut rest = &code[at..];
        let mut base = here.len();
        if rest.starts_with("crate::") {
            (rest, base) = (&rest["crate::".len()..], 0);
        }
        while let Some(r) = rest.strip_prefix("super::") {
            (rest, base) = (r, base.saturating_sub(1));
        }
        sites.push((base, rest, code[..at].matches('\n').count() + 1));
    }
    sites
}

/// The layers one production file imports, each with the line: the top-level module a
/// `crate::…` path names (or [`CRATE_ROOT`] for anything else, e.g. a `#[macro_export]`
/// macro), and what a `super::…` path that climbs out of the file's own top-level module
/// names. `code` has literals, comments and test items blanked; `$crate::` (inside macros)
/// is not an import of the file that holds the macro.
fn file_imports(rel: &Path, code: &str, modules: &BTreeSet<String>) -> Vec<(String, usize)> {
    let here = module_path(rel);
    let layer = |name: &str| match modules.contains(name) {
        true => name.to_string(),
        false => CRATE_ROOT.to_string(),
    };
    let mut out = Vec::new();
    for (base, rest, line) in path_sites(rel, code) {
        if base > 0 {
            out.push((here[0].clone(), line));
        } else if let Some(group) = rest.strip_prefix('{') {
            out.extend(group_heads(group).into_iter().map(|h| (layer(h), line)));
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.push((layer(&rest[..end]), line));
        }
    }
    out
}

/// The production files of the crate at `src`, each with its code (literals, comments and
/// `#[cfg(test)]` items blanked): test files (`tests.rs`, `*_tests.rs`, the files of modules
/// declared under `#[cfg(test)]`) are left out.
fn production_files(src: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut scanned = Vec::new();
    let mut test_only: BTreeSet<PathBuf> = BTreeSet::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let code = blank_non_code(&text);
        let mut lines: Vec<&str> = code.lines().collect();
        for (first, last, module) in test_items(&lines) {
            test_only.extend(module.into_iter().flat_map(|m| module_files(&path, m)));
            lines[first..=last].fill("");
        }
        scanned.push((path, lines.join("\n")));
    }
    scanned.retain(|(path, _)| {
        let name = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        !(name == "tests.rs"
            || name.ends_with("_tests.rs")
            || test_only.iter().any(|t| path.starts_with(t)))
    });
    scanned
}

/// Every import between two layers of the crate at `src` (its top-level modules and its
/// root), from production code: `(from, to)` → the `file:line`s that make it.
fn crate_layers(src: &Path) -> BTreeMap<(String, String), Vec<String>> {
    let modules = top_modules(src);
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (path, code) in production_files(src) {
        let rel = path.strip_prefix(src).unwrap_or(&path);
        let from = module_path(rel)
            .first()
            .cloned()
            .unwrap_or_else(|| CRATE_ROOT.to_string());
        for (to, line) in file_imports(rel, &code, &modules) {
            if to != from {
                let at = format!("{}:{line}", rel.display());
                edges.entry((from.clone(), to)).or_default().push(at);
            }
        }
    }
    edges
}

/// A loop among the layers, if there is one: its layers in order, the first repeated last.
fn layer_loop(edges: &BTreeMap<(String, String), Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<(String, String), Vec<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if !done.insert(node.to_string()) {
            return None;
        }
        path.push(node.to_string());
        for (_, to) in edges.keys().filter(|(from, _)| from == node) {
            if let Some(cycle) = visit(to, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|(from, _)| visit(from, edges, &mut Vec::new(), &mut done))
}

/// Each crate stands in layers: its top-level modules (the folders and files under `src/`)
/// import one another without a loop, so each has a floor below everything that imports it,
/// and none imports the crate root (`lib.rs` only declares the modules and registers the
/// kinds). A `#[macro_export]` macro counts as the root's: the table macros are used by their
/// module's path, `crate::tables::row!`. On a loop, move the shared item down to the module
/// that owns its concept (docs/ARCHITECTURE.md, "Layers").
#[test]
fn each_crates_modules_stand_in_layers_without_a_loop_or_an_import_of_the_root() {
    for src in ["src", "engine/src", "stages/src"] {
        let edges = crate_layers(&root().join(src));
        assert!(
            edges.len() > 3,
            "{src}: only {} imports between modules found: the scanner lost them",
            edges.len()
        );
        let into_root: Vec<String> = edges
            .iter()
            .filter(|((_, to), _)| to == CRATE_ROOT)
            .flat_map(|(_, at)| at.iter().map(|a| format!("{src}/{a}")))
            .collect();
        assert!(
            into_root.is_empty(),
            "these import the crate root; import the item from the module that defines it:\n{}",
            into_root.join("\n")
        );
        if let Some(cycle) = layer_loop(&edges) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let at = &edges[&(w[0].clone(), w[1].clone())];
                    format!("{} -> {} ({src}/{})", w[0], w[1], at[0])
                })
                .collect();
            panic!(
                "{src}: its modules import each other in a loop:\n{}",
                steps.join("\n")
            );
        }
    }
}

/// The import scanner reads `crate::` paths, `use` groups and `super::` paths that climb out
/// of the file's module, and skips `$crate::` and code blanked as test code or comments.
#[test]
fn the_layer_scanner_reads_crate_groups_and_super_paths() {
    let modules: BTreeSet<String> = ["tables", "world", "kinds"].map(String::from).into();
    let code = blank_non_code(
        "use crate::world::Clock;\n\
         use crate::{kinds::Run, tables::{a, b}};\n\
         // crate::kinds::Hidden\n\
         fn f() { $crate::tables::row!(); crate::row!(); super::super::super::world::x(); }\n\
         use super::near::Y;\n",
    );
    let found = file_imports(Path::new("episodes/agents/llm.rs"), &code, &modules);
    let found: Vec<(&str, usize)> = found.iter().map(|(m, l)| (m.as_str(), *l)).collect();
    assert_eq!(
        found,
        [
            ("world", 1),
            ("kinds", 2),
            ("tables", 2),
            (CRATE_ROOT, 4),
            ("world", 4),
            ("episodes", 5),
        ]
    );
}

/// The imports of an item of a module above the importer in its own folder that may stand
/// until they are mended: `path parent::item`, one per line (a ratchet: none may be added).
const PARENT_IMPORTS: &str = "tests/fixtures/parent_imports.txt";

/// The modules a module's file declares (`mod name;`, `pub(crate) mod name {`…), `code` blanked.
fn declared_modules(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in code.lines() {
        let mut rest = line.trim();
        if let Some(r) = rest.strip_prefix("pub") {
            rest = match r.trim_start().strip_prefix('(') {
                Some(vis) => vis.split_once(')').map_or("", |(_, r)| r),
                None => r,
            }
            .trim_start();
        }
        let Some(decl) = rest.strip_prefix("mod ") else {
            continue;
        };
        let end = decl
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(decl.len());
        let after = decl[end..].trim_start();
        if end > 0 && (after.starts_with(';') || after.starts_with('{')) {
            names.insert(decl[..end].to_string());
        }
    }
    names
}

/// The paths a `use` tree (or a path in an expression) at the start of `text` names, each as its
/// names: `a::{b, c::*}` → `[a, b]`, `[a, c, *]`; `a::f(x)` → `[a, f]`.
fn tree_paths(text: &str) -> Vec<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            return group_members(group)
                .into_iter()
                .flat_map(tree_paths)
                .map(|tail| [names.clone(), tail].concat())
                .collect();
        }
        let end = match rest.starts_with('*') {
            true => 1,
            false => rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len()),
        };
        if end == 0 {
            break;
        }
        names.push(rest[..end].to_string());
        match rest[end..].strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => break,
        }
    }
    vec![names]
}

/// What the file at `rel` takes from a module above it in its own folder, each with the line:
/// `parent::item` where the path leaves the file's own module path at a module that contains
/// the file and names there something that module does not declare as a module of its own (an
/// item of its file, a re-export, or `*`). `declared` holds every module's declared modules, by
/// module path. A path that leaves at the crate root is the layers test's business.
fn parent_imports(
    rel: &Path,
    code: &str,
    declared: &BTreeMap<Vec<String>, BTreeSet<String>>,
) -> Vec<(String, usize)> {
    let here = module_path(rel);
    let mut out = Vec::new();
    for (base, rest, line) in path_sites(rel, code) {
        for tail in tree_paths(rest) {
            let path = [here[..base.min(here.len())].to_vec(), tail].concat();
            let k = path.iter().zip(&here).take_while(|(a, b)| a == b).count();
            if k == 0 || k >= here.len() || k >= path.len() || path[k] == "self" {
                continue;
            }
            let parent = &here[..k];
            if !declared.get(parent).is_some_and(|m| m.contains(&path[k])) {
                out.push((format!("{}::{}", parent.join("::"), path[k]), line));
            }
        }
    }
    out
}

/// Every import of an item of a module above the importer in its folder, over the workspace's
/// crates: `path parent::item` → the `path:line`s.
fn workspace_parent_imports() -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for src in ["src", "engine/src", "stages/src"] {
        let files = production_files(&root().join(src));
        let rel = |path: &Path| {
            path.strip_prefix(root().join(src))
                .unwrap_or(path)
                .to_owned()
        };
        let declared: BTreeMap<Vec<String>, BTreeSet<String>> = files
            .iter()
            .map(|(path, code)| (module_path(&rel(path)), declared_modules(code)))
            .collect();
        for (path, code) in &files {
            let rel = rel(path);
            for (item, line) in parent_imports(&rel, code, &declared) {
                let file = format!("{src}/{}", rel.display());
                let at = format!("{file}:{line}");
                out.entry(format!("{file} {item}")).or_default().push(at);
            }
        }
    }
    out
}

/// Within a crate's folders, modules stand in layers too: a module's file (`mod.rs`, or
/// `name.rs` beside `name/`) declares its children and may hand their items on, and the
/// children import what they share from the sibling module that defines it, never an item of
/// the module above them (`super::Item`, `super::*`, `crate::a::b::Item` inside `a/b/`): the
/// parent imports its children, so such an import runs back up. Move the shared item into a
/// child module that both import (`types.rs`, `context.rs`), and keep the public path with a
/// re-export in the parent. `tests/fixtures/parent_imports.txt` lists the imports that still do
/// (a ratchet: an unlisted one fails); after mending some, regenerate it with
/// `PREFFLOW_WRITE_PARENT_IMPORTS=1 cargo test --test integration code_shape`.
#[test]
fn no_module_imports_an_item_of_the_module_above_it_in_its_folder() {
    let now = workspace_parent_imports();
    let listed_path = root().join(PARENT_IMPORTS);
    if std::env::var_os("PREFFLOW_WRITE_PARENT_IMPORTS").is_some() {
        let text: String = now.keys().map(|k| format!("{k}\n")).collect();
        std::fs::write(&listed_path, text).expect("write parent_imports.txt");
    }
    let listed: BTreeSet<String> = std::fs::read_to_string(&listed_path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let new: Vec<String> = now
        .iter()
        .filter(|(k, _)| !listed.contains(*k))
        .map(|(k, at)| format!("{} ({})", k, at.join(", ")))
        .collect();
    assert!(
        new.is_empty(),
        "these import an item of a module above them in their folder; move the item into a \
         child module both import (or import it from the sibling that defines it):\n{}",
        new.join("\n")
    );
}

/// The parent-import scanner reads `super::` globs, groups and items, `crate::` paths into the
/// file's own folder, and passes over sibling modules, `self` and paths out of the folder.
#[test]
fn the_parent_import_scanner_tells_items_of_the_module_above_from_its_modules() {
    let declared: BTreeMap<Vec<String>, BTreeSet<String>> = [
        (
            vec!["world".into()],
            declared_modules("pub mod history;\nmod rules;"),
        ),
        (
            vec!["world".into(), "history".into()],
            declared_modules("mod draw;\npub(crate) mod plan {\n}\nmod tests_of_x"),
        ),
    ]
    .into();
    let code = blank_non_code(
        "use super::*;\n\
         use super::{plan::Plan, Ctx, self};\n\
         use crate::world::history::Label;\n\
         fn f() { super::super::rules::fits(); super::super::World::new(); }\n\
         // super::Hidden\n\
         use crate::tables::row;\n",
    );
    let found = parent_imports(Path::new("world/history/draw.rs"), &code, &declared);
    let mut found: Vec<(&str, usize)> = found.iter().map(|(m, l)| (m.as_str(), *l)).collect();
    found.sort_by_key(|&(_, line)| line);
    assert_eq!(
        found,
        [
            ("world::history::*", 1),
            ("world::history::Ctx", 2),
            ("world::history::Label", 3),
            ("world::World", 4),
        ]
    );
}
