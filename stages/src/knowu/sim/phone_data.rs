//! The KnowU persona's own data on the simulated phone: her contacts, her mail accounts and
//! inbox, her SMS conversations, her files and her saved places come from her profile, never
//! from another persona's seed records. KnowU sets these up from the profile's
//! `environment_init_state` (`app_contacts`, `app_mail`, `app_messages`, `app_files`) and
//! identity; a profile without them gets what its identity, locations and social graph say.
//!
//! The app files (`datasets/knowu/apps/{contacts,mail,messages,files,maps}.yaml`) declare the
//! tables with `records: []`; [`fill_apps`] appends the persona's records to them when the
//! world is built, so the catalog checks them like any seed record and every later stage reads
//! them from the world tables.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::knowu::profile::{text, KnowuProfile};

/// The persona's records per `app.table`, in the order the profile lists them.
pub fn records(p: &KnowuProfile) -> BTreeMap<&'static str, Vec<Value>> {
    let people = contacts(p);
    let accounts = accounts(p);
    let primary = accounts.first().cloned().unwrap_or_default();
    let (threads, messages) = conversations(p, &people);
    let mut out = BTreeMap::new();
    out.insert("contacts.owner", vec![owner(p, &primary)]);
    out.insert("contacts.people", numbered("p", people));
    out.insert(
        "mail.accounts",
        numbered(
            "acc",
            accounts.iter().map(|a| json!({ "address": a })).collect(),
        ),
    );
    out.insert("mail.emails", numbered("m", inbox(p, &primary)));
    out.insert("messages.threads", threads);
    out.insert("messages.messages", messages);
    out.insert("files.files", numbered("f", files(p)));
    out.insert("maps.places", numbered("place", places(p)));
    out
}

/// `apps` (file name, YAML text) with the persona's [`records`] appended to the tables they
/// belong to; an app file holding none of those tables is returned unchanged, a changed one
/// as JSON text (which the app loader reads as YAML). Errors name the file.
pub fn fill_apps(
    apps: Vec<(String, String)>,
    p: &KnowuProfile,
) -> Result<Vec<(String, String)>, String> {
    let tables = records(p);
    apps.into_iter()
        .map(|(file, body)| {
            let mut app: Value = prefflow_engine::config::from_yaml(&body)
                .map_err(|e| format!("{file}: not an app file: {e}"))?;
            let name = app["app"].as_str().unwrap_or_default().to_string();
            let mut changed = false;
            for (table, rows) in &tables {
                let Some(t) = table.strip_prefix(&format!("{name}.")) else {
                    continue;
                };
                let Some(entity) = app["entities"].get_mut(t).and_then(Value::as_object_mut) else {
                    continue;
                };
                let list = entity
                    .entry("records")
                    .or_insert_with(|| Value::Array(Vec::new()));
                match list {
                    Value::Array(a) => a.extend(rows.iter().cloned()),
                    Value::Null => *list = Value::Array(rows.clone()),
                    _ => return Err(format!("{file}: `entities.{t}.records` is not a list")),
                }
                changed = true;
            }
            if !changed {
                return Ok((file, body));
            }
            let json = serde_json::to_string_pretty(&app).map_err(|e| format!("{file}: {e}"))?;
            Ok((file, json))
        })
        .collect()
}

/// Gives each record an `id` `<prefix>-<n>` (1-based), first in the record.
fn numbered(prefix: &str, rows: Vec<Value>) -> Vec<Value> {
    rows.into_iter()
        .enumerate()
        .map(|(i, row)| {
            let mut m = Map::new();
            m.insert("id".into(), json!(format!("{prefix}-{}", i + 1)));
            if let Value::Object(fields) = row {
                m.extend(fields);
            }
            Value::Object(m)
        })
        .collect()
}

/// The text at `key` of a mapping, trimmed; empty when absent.
fn field(v: &Value, key: &str) -> String {
    v.get(key).map(text).unwrap_or_default()
}

/// The list at a path of `environment_init_state` (`app_contacts.list`), or nothing.
fn env_list<'a>(p: &'a KnowuProfile, app: &str, list: &str) -> &'a [Value] {
    p.environment
        .get(app)
        .and_then(|a| a.get(list))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Whether two contact names are the same person as a phone shows them (`Sister Li` and
/// `Sister Li (Dance)`): one contains the other, ignoring case.
fn same_person(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_lowercase(), b.to_lowercase());
    !a.is_empty() && !b.is_empty() && (a.contains(&b) || b.contains(&a))
}

/// The phone's contacts: KnowU's `app_contacts.list` (social-graph roles fill in roles it
/// lacks), then the social graph's people the phone can reach (a number or an address in the
/// profile) who are not on the list. People without either are not contacts: a task that
/// writes to one adds her, as KnowU's tasks do (`ContactsSetup`).
fn contacts(p: &KnowuProfile) -> Vec<Value> {
    let graph: Vec<&Value> = p
        .get("social_graph")
        .and_then(Value::as_object)
        .map(|g| {
            g.values()
                .filter_map(Value::as_array)
                .flatten()
                .filter(|e| !field(e, "name").is_empty())
                .collect()
        })
        .unwrap_or_default();
    let listed: Vec<&Value> = env_list(p, "app_contacts", "list")
        .iter()
        .filter(|e| !field(e, "name").is_empty())
        .collect();
    let reachable = graph.iter().copied().filter(|g| {
        let name = field(g, "name");
        let reachable = !field(g, "phone").is_empty() || !field(g, "email").is_empty();
        reachable && !listed.iter().any(|l| same_person(&field(l, "name"), &name))
    });
    let person = |e: &Value| {
        let name = field(e, "name");
        let role = Some(field(e, "role"))
            .filter(|r| !r.is_empty())
            .or_else(|| {
                graph
                    .iter()
                    .find(|g| same_person(&field(g, "name"), &name))
                    .map(|g| field(g, "role"))
            })
            .unwrap_or_default();
        json!({ "name": name, "role": role, "phone": field(e, "phone"), "email": field(e, "email") })
    };
    listed
        .iter()
        .copied()
        .chain(reachable)
        .map(person)
        .collect()
}

/// Every text under `v` whose key contains `word`, depth first.
fn texts_under(v: &Value, word: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = v {
        for (k, v) in m {
            match v {
                Value::String(s) if k.to_lowercase().contains(word) && !s.trim().is_empty() => {
                    out.push(s.trim().to_string());
                }
                _ => texts_under(v, word, out),
            }
        }
    }
}

/// What the identity (and `digital_context`) say under keys containing `word`.
fn identity_texts(p: &KnowuProfile, word: &str) -> Vec<String> {
    let mut out = Vec::new();
    for section in ["identity", "digital_context"] {
        if let Some(v) = p.profile.get(section) {
            texts_under(v, word, &mut out);
        }
    }
    out
}

/// Her mail addresses: the Mail app's account first (what KnowU's Mail is signed in as), then
/// every address her identity lists; a persona without one gets `<id>@mail.example`, so the
/// phone can send mail at all.
fn accounts(p: &KnowuProfile) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mail = p
        .environment
        .get("app_mail")
        .map(|m| field(m, "account"))
        .filter(|a| !a.is_empty());
    for a in mail
        .into_iter()
        .chain(identity_texts(p, "email"))
        .filter(|a| a.contains('@'))
    {
        if !out.iter().any(|o| o.eq_ignore_ascii_case(&a)) {
            out.push(a);
        }
    }
    if out.is_empty() {
        out.push(format!("{}@mail.example", p.id));
    }
    out
}

/// My Card: her name, number and first address.
fn owner(p: &KnowuProfile, email: &str) -> Value {
    let phone = identity_texts(p, "phone")
        .into_iter()
        .next()
        .unwrap_or_default();
    json!({ "id": "me", "name": p.display_name, "phone": phone, "email": email })
}

/// KnowU's `app_mail.inbox`: sender, subject, snippet, read state.
fn inbox(p: &KnowuProfile, to: &str) -> Vec<Value> {
    env_list(p, "app_mail", "inbox")
        .iter()
        .filter(|m| !field(m, "subject").is_empty())
        .map(|m| {
            let read = m
                .get("status")
                .and_then(|s| s.get("read"))
                .and_then(Value::as_bool)
                .unwrap_or(true);
            json!({
                "folder": "inbox",
                "from": field(m, "sender"),
                "to": to,
                "subject": field(m, "subject"),
                "body": field(m, "snippet"),
                "read": read,
            })
        })
        .collect()
}

/// KnowU's `app_messages.threads` (one message each) as conversations per sender; a thread's
/// number is the sender when it is a number, else the sender's contact number.
fn conversations(p: &KnowuProfile, people: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let (mut threads, mut messages): (Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new());
    for m in env_list(p, "app_messages", "threads") {
        let sender = field(m, "sender");
        if sender.is_empty() {
            continue;
        }
        let at = match threads.iter().position(|t| t["title"] == sender.as_str()) {
            Some(i) => i,
            None => {
                let digits = sender.chars().filter(char::is_ascii_digit).count();
                let number = if digits >= 5 {
                    sender.clone()
                } else {
                    people
                        .iter()
                        .find(|c| same_person(&field(c, "name"), &sender))
                        .map(|c| field(c, "phone"))
                        .unwrap_or_default()
                };
                let id = format!("th-{}", threads.len() + 1);
                threads.push(json!({ "id": id, "title": sender, "number": number }));
                threads.len() - 1
            }
        };
        messages.push(json!({
            "id": format!("msg-{}", messages.len() + 1),
            "thread": threads[at]["id"],
            "sender": sender,
            "text": field(m, "text"),
            "time": field(m, "time"),
        }));
    }
    (threads, messages)
}

/// KnowU's `app_files.files`: each path as a file in its folder.
fn files(p: &KnowuProfile) -> Vec<Value> {
    env_list(p, "app_files", "files")
        .iter()
        .map(|f| field(f, "path"))
        .filter(|path| !path.is_empty())
        .map(|path| {
            let (folder, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            let top = folder.split('/').next().unwrap_or_default();
            json!({ "name": name, "folder": top, "path": path })
        })
        .collect()
}

/// Her `locations` as saved places (`home`, `work`, …), with their addresses.
fn places(p: &KnowuProfile) -> Vec<Value> {
    saved_places(p)
        .into_iter()
        .map(|pl| json!({ "label": pl.label, "address": pl.address }))
        .collect()
}

/// One of her `locations` as the Maps app saves it.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// The key under `locations` (`work`, `market`).
    pub key: String,
    /// Its label (`Square Dance Spot`), else the key.
    pub label: String,
    /// Its address (empty when the profile gives none).
    pub address: String,
}

/// Her `locations`, in profile order: what the Maps app saves, and what a trip's places are
/// chosen from ([`super::template::PlaceRule`]).
pub fn saved_places(p: &KnowuProfile) -> Vec<Place> {
    let Some(Value::Object(locs)) = p.profile.get("locations") else {
        return Vec::new();
    };
    locs.iter()
        .map(|(key, v)| Place {
            key: key.clone(),
            label: Some(field(v, "label"))
                .filter(|l| !l.is_empty())
                .unwrap_or_else(|| key.clone()),
            address: match v {
                Value::String(s) => s.trim().to_string(),
                _ => field(v, "address"),
            },
        })
        .collect()
}
