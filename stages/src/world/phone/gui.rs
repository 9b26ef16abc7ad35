//! GUI actions: navigation over the screen stack, editing form fields with type/select, and
//! submitting forms through the same execution path as tool calls.

use serde_json::Value;

use crate::world::app::Catalog;
use crate::world::types::{FieldDef, FieldKind};

use super::action::{Action, Direction, Observation};
use super::exec::check_arg;
use super::handset::Phone;
use super::overlay::Overlay;
use super::screens::{view, Screen, Target, PAGE};

impl Phone<'_> {
    /// Handles one GUI action; the observation is the resulting screen or an error.
    pub(super) fn gui(&mut self, action: &Action) -> Observation {
        let result = match action {
            Action::OpenApp { app } => self.open_app(app),
            Action::Tap { element } => self.tap(*element),
            Action::Type { element, text } => self.edit(*element, text, false),
            Action::Select { element, option } => self.edit(*element, option, true),
            Action::Scroll { direction } => self.scroll(*direction),
            Action::Back => self.back(),
            Action::Home => {
                self.stack.truncate(1);
                Ok(())
            }
            _ => Err("not a GUI action".to_string()),
        };
        match result {
            Ok(()) => Observation::ok(self.screen_text()),
            Err(e) => Observation::error(e),
        }
    }

    /// The current screen as text.
    pub(super) fn screen_text(&self) -> String {
        view(&self.world.catalog, &self.state, self.top()).render()
    }

    fn top(&self) -> &Screen {
        self.stack.last().unwrap_or(&Screen::Home)
    }

    fn open_app(&mut self, name: &str) -> Result<(), String> {
        let cat = &self.world.catalog;
        let ai = cat
            .apps
            .iter()
            .position(|a| {
                a.id.eq_ignore_ascii_case(name.trim()) || a.name.eq_ignore_ascii_case(name.trim())
            })
            .ok_or_else(|| format!("no app called \"{name}\""))?;
        self.stack = vec![Screen::Home, Screen::App { app: ai }];
        Ok(())
    }

    /// The app whose screens are showing (for lists and details reached from it).
    fn context_app(&self) -> usize {
        match self.top() {
            Screen::App { app }
            | Screen::List { app, .. }
            | Screen::Detail { app, .. }
            | Screen::Form { app, .. } => *app,
            Screen::Home | Screen::Done { .. } => 0,
        }
    }

    fn tap(&mut self, element: u32) -> Result<(), String> {
        let v = view(&self.world.catalog, &self.state, self.top());
        let target = v
            .target(element)
            .cloned()
            .ok_or_else(|| format!("no element [{element}] on this screen"))?;
        let app = self.context_app();
        match target {
            Target::App(a) => self.stack.push(Screen::App { app: a }),
            Target::Table(t) => self.stack.push(Screen::List {
                app,
                table: t,
                offset: 0,
            }),
            Target::Record(t, id) => self.stack.push(Screen::Detail { app, table: t, id }),
            Target::Form(a, o, prefill) => self.stack.push(self.new_form(a, o, prefill)),
            Target::Field(_) => {
                return Err(format!(
                    "[{element}] is a form field: use type or select on it to change its value"
                ))
            }
            Target::Submit => return self.submit(),
            Target::Dismiss => {
                self.stack.pop();
            }
        }
        Ok(())
    }

    fn new_form(&self, app: usize, op: usize, prefill: Option<(usize, String)>) -> Screen {
        let o = &self.world.catalog.apps[app].operations[op];
        let mut values: Vec<Value> = o
            .fields
            .iter()
            .map(|f| f.default.clone().unwrap_or(Value::Null))
            .collect();
        if let Some((fi, id)) = prefill {
            values[fi] = Value::String(id);
        }
        Screen::Form { app, op, values }
    }

    fn edit(&mut self, element: u32, input: &str, select: bool) -> Result<(), String> {
        let cat = &self.world.catalog;
        let Some(Screen::Form { app, op, .. }) = self.stack.last() else {
            return Err("type and select only work on form fields".into());
        };
        let v = view(cat, &self.state, self.top());
        let Some(Target::Field(fi)) = v.target(element).cloned() else {
            return Err(format!("[{element}] is not a form field"));
        };
        let f = &cat.apps[*app].operations[*op].fields[fi];
        if select
            && matches!(
                f.kind,
                FieldKind::Text
                    | FieldKind::Int(_)
                    | FieldKind::Float(_)
                    | FieldKind::Date
                    | FieldKind::Time
                    | FieldKind::DateTime
            )
        {
            return Err(format!(
                "`{}` takes typed input, not a choice: use type",
                f.name
            ));
        }
        let value = parse_input(cat, &self.state, f, input)?;
        if let Some(Screen::Form { values, .. }) = self.stack.last_mut() {
            values[fi] = value;
        }
        Ok(())
    }

    fn submit(&mut self) -> Result<(), String> {
        let Some(Screen::Form { app, op, values }) = self.stack.last().cloned() else {
            return Err("nothing to submit".into());
        };
        let o = &self.world.catalog.apps[app].operations[op];
        if let Some(f) = o
            .fields
            .iter()
            .zip(&values)
            .find(|(_, v)| v.is_null())
            .map(|(f, _)| f)
        {
            return Err(format!("fill in `{}` first", f.name));
        }
        self.execute(app, op, values)?;
        let message = self.last_message();
        if let Some(top) = self.stack.last_mut() {
            *top = Screen::Done { message };
        }
        Ok(())
    }

    fn scroll(&mut self, d: Direction) -> Result<(), String> {
        let total = match self.top() {
            Screen::List { table, .. } => self.state.count(&self.world.catalog, *table),
            _ => return Err("nothing to scroll on this screen".into()),
        };
        if let Some(Screen::List { offset, .. }) = self.stack.last_mut() {
            let next = match d {
                Direction::Down if *offset + PAGE < total => *offset + PAGE,
                Direction::Up if *offset > 0 => offset.saturating_sub(PAGE),
                _ => return Err("already at the end of the list".into()),
            };
            *offset = next;
        }
        Ok(())
    }

    fn back(&mut self) -> Result<(), String> {
        if self.stack.len() <= 1 {
            return Err("already on the home screen".into());
        }
        self.stack.pop();
        Ok(())
    }
}

/// Turns what the agent typed or selected into a checked value for the field.
fn parse_input(cat: &Catalog, state: &Overlay, f: &FieldDef, input: &str) -> Result<Value, String> {
    let s = input.trim();
    let bad = || format!("\"{input}\" is not valid for `{}`", f.name);
    let v = match &f.kind {
        FieldKind::Text => Value::String(input.to_string()),
        FieldKind::Int(_) => s.parse::<i64>().map(Value::from).map_err(|_| bad())?,
        FieldKind::Float(_) => s.parse::<f64>().map(Value::from).map_err(|_| bad())?,
        FieldKind::Bool => match s.to_ascii_lowercase().as_str() {
            "yes" | "true" | "on" | "1" => Value::Bool(true),
            "no" | "false" | "off" | "0" => Value::Bool(false),
            _ => return Err(bad()),
        },
        FieldKind::Date | FieldKind::Time | FieldKind::DateTime => Value::String(s.to_string()),
        FieldKind::Enum(options) => {
            let norm = |x: &str| x.to_ascii_lowercase().replace([' ', '-'], "_");
            options
                .iter()
                .find(|o| norm(o) == norm(s))
                .map(|o| Value::String(o.clone()))
                .ok_or_else(|| format!("\"{input}\" is not one of {}", options.join(", ")))?
        }
        FieldKind::Ref(t) => {
            let table = cat.table(*t);
            let found = state
                .records(cat, *t)
                .find(|r| r.id == s || table.label(r).eq_ignore_ascii_case(s));
            found
                .map(|r| Value::String(r.id.clone()))
                .ok_or_else(|| format!("no {} called \"{input}\"", table.name))?
        }
    };
    check_arg(cat, state, f, &v)
}
