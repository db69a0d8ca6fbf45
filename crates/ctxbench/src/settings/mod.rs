//! Typed settings: every setting a method reads is a field of a settings block, declared once
//! with its type, default, component and doc line by [`settings_block!`] (docs/design.md §8).
//!
//! A point of an experiment's grid holds its settings as checked [`Value`]s by key (a sweep
//! crosses values of any family's settings); a family reads the blocks of its components from
//! it with [`Block::read`], and every door that makes points — experiment files, `--set`,
//! `ctxbench decode`'s flags — converts text to values through the same [`SettingSpec`]s, so
//! `decode` and `run` cannot disagree on a name, a type or a default. A misspelt key is refused
//! by name with the list of valid keys before anything runs.

mod common;
mod value;

pub use common::Common;
pub use value::{SettingSpec, Settings, Type, Value};

use anyhow::{anyhow, Result};

/// A Rust type a setting may have: how its [`Value`] is read and written.
pub trait SettingValue: Sized {
    /// The value type experiment files and flags must give.
    const TYPE: Type;
    /// The typed value, or why `v` is not one.
    fn from_value(v: &Value) -> std::result::Result<Self, String>;
    /// Its value (`None`: unset, an optional setting).
    fn to_value(&self) -> Option<Value>;
}

impl SettingValue for f64 {
    const TYPE: Type = Type::Float;
    fn from_value(v: &Value) -> std::result::Result<Self, String> {
        v.as_f64()
            .ok_or_else(|| format!("expected a number (got {v})"))
    }
    fn to_value(&self) -> Option<Value> {
        Some(Value::Float(*self))
    }
}

impl SettingValue for usize {
    const TYPE: Type = Type::Int;
    fn from_value(v: &Value) -> std::result::Result<Self, String> {
        match v {
            Value::Int(i) if *i >= 0 => Ok(*i as usize),
            _ => Err(format!("expected a non-negative integer (got {v})")),
        }
    }
    fn to_value(&self) -> Option<Value> {
        Some(Value::Int(*self as i64))
    }
}

impl SettingValue for bool {
    const TYPE: Type = Type::Bool;
    fn from_value(v: &Value) -> std::result::Result<Self, String> {
        v.as_bool()
            .ok_or_else(|| format!("expected true or false (got {v})"))
    }
    fn to_value(&self) -> Option<Value> {
        Some(Value::Bool(*self))
    }
}

impl SettingValue for String {
    const TYPE: Type = Type::Str;
    fn from_value(v: &Value) -> std::result::Result<Self, String> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("expected a string (got {v})"))
    }
    fn to_value(&self) -> Option<Value> {
        Some(Value::Str(self.clone()))
    }
}

impl<T: SettingValue> SettingValue for Option<T> {
    const TYPE: Type = T::TYPE;
    fn from_value(v: &Value) -> std::result::Result<Self, String> {
        T::from_value(v).map(Some)
    }
    fn to_value(&self) -> Option<Value> {
        self.as_ref().and_then(T::to_value)
    }
}

/// A choice written as a string (`FromStr` and `Display`, e.g. a backend or a mode) as a
/// setting's type: a value outside the choices is refused with the parser's message.
#[macro_export]
macro_rules! choice_setting {
    ($t:ty) => {
        impl $crate::settings::SettingValue for $t {
            const TYPE: $crate::settings::Type = $crate::settings::Type::Str;
            fn from_value(v: &$crate::settings::Value) -> std::result::Result<Self, String> {
                match v.as_str() {
                    Some(s) => s.parse::<$t>().map_err(|e| e.to_string()),
                    None => Err(format!("expected a string (got {v})")),
                }
            }
            fn to_value(&self) -> Option<$crate::settings::Value> {
                Some($crate::settings::Value::Str(self.to_string()))
            }
        }
    };
}

choice_setting!(ctx_cuda::Backend);

/// A group of settings one component (or every method: `common`) reads, as a typed value.
/// Made by [`settings_block!`], which writes the field list once.
pub trait Block: Default + Sized {
    /// Its settings, in points.csv column order.
    const SPECS: &'static [SettingSpec];
    /// The block as a point's settings give it: a setting not there takes its default; a
    /// value of the wrong type or outside a choice is an error naming its key.
    fn read(s: &Settings) -> Result<Self>;
    /// Writes its settings into `s` (an unset optional setting is left out).
    fn write(&self, s: &mut Settings);
    /// Writes its defaults into `s`.
    fn defaults(s: &mut Settings) {
        Self::default().write(s);
    }
    /// `key=value;...` over its settings (an unset one as `key=`): what a setup or decode key
    /// of a family includes of it.
    fn key(&self) -> String {
        let mut s = Settings::new();
        self.write(&mut s);
        Self::SPECS
            .iter()
            .map(|sp| {
                let v = s.get(sp.name).map_or(String::new(), |v| v.to_string());
                format!("{}={v}", sp.name)
            })
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// Reads one setting of a block (the macro's helper): its value converted, or its default.
pub fn read_one<T: SettingValue + Clone>(s: &Settings, key: &str, default: &T) -> Result<T> {
    match s.get(key) {
        None => Ok(default.clone()),
        Some(v) => T::from_value(v).map_err(|e| anyhow!("setting '{key}': {e}")),
    }
}

/// Declares a settings block: a struct whose fields are settings, each written once as
/// `/// doc line (with its unit)` and `name: Type = default`, then `=> required` when a method
/// with the block's component must set it, and `; old "flag"` (a deprecated spelling of its
/// command-line flag, said when used) or `; alias "flag"` (a second spelling). It derives
/// [`Block`] (specs, read, write, key) and `Default`; its key is `name` in experiment files and
/// `--set`, its flag `--name` with `-` for `_`.
///
/// ```
/// ctxbench::settings_block! {
///     /// Example: a booster's settings.
///     pub struct Example in "example-boosting" {
///         /// the list boosted
///         example_list: Option<String> = None => required,
///         /// bonus per word (graph units)
///         example_score: f64 = 3.0,
///     }
/// }
/// use ctxbench::settings::{Block, Settings, Value};
/// let mut s = Settings::new();
/// s.insert("example_list".into(), Value::Str("gt".into()));
/// let e = Example::read(&s).unwrap();
/// assert_eq!((e.example_list.as_deref(), e.example_score), (Some("gt"), 3.0));
/// assert!(Example::SPECS[0].required && !Example::SPECS[1].required);
/// assert_eq!(e.key(), "example_list=gt;example_score=3");
/// ```
#[macro_export]
macro_rules! settings_block {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident in $component:literal {
            $(
                $(#[doc = $doc:literal])+
                $field:ident : $ty:ty = $default:expr $(=> $req:ident)? $(; $how:ident $flag:literal)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $name {
            $(
                $(#[doc = $doc])+
                pub $field: $ty,
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $crate::settings::Block for $name {
            const SPECS: &'static [$crate::settings::SettingSpec] = &[
                $(
                    $crate::settings::SettingSpec {
                        name: stringify!($field),
                        ty: <$ty as $crate::settings::SettingValue>::TYPE,
                        component: $component,
                        doc: concat!($($doc),+),
                        required: $crate::settings_block!(@required $($req)?),
                        old_flag: $crate::settings_block!(@old $($how $flag)?),
                        alias_flag: $crate::settings_block!(@alias $($how $flag)?),
                        default: || {
                            let d: $ty = $default;
                            $crate::settings::SettingValue::to_value(&d)
                        },
                    },
                )*
            ];

            fn read(s: &$crate::settings::Settings) -> anyhow::Result<Self> {
                let d = Self::default();
                Ok(Self {
                    $( $field: $crate::settings::read_one(s, stringify!($field), &d.$field)?, )*
                })
            }

            fn write(&self, s: &mut $crate::settings::Settings) {
                $(
                    if let Some(v) = $crate::settings::SettingValue::to_value(&self.$field) {
                        s.insert(stringify!($field).to_string(), v);
                    }
                )*
            }
        }
    };
    (@required required) => { true };
    (@required) => { false };
    (@old old $f:literal) => { Some($f) };
    (@old $($x:tt)*) => { None };
    (@alias alias $f:literal) => { Some($f) };
    (@alias $($x:tt)*) => { None };
}

/// A setting's key named through its block's field, so the compiler checks it: `key!(Common,
/// beam)` is `"beam"`, and a misspelt or removed field does not compile. Code that must name a
/// setting (messages, points.csv's fixed columns) names it this way, never as a bare string.
///
/// ```
/// use ctxbench::settings::Common;
/// assert_eq!(ctxbench::key!(Common, lattice_beam), "lattice_beam");
/// ```
#[macro_export]
macro_rules! key {
    ($block:ty, $field:ident) => {{
        #[allow(dead_code)]
        fn field_exists(b: &$block) {
            let _ = &b.$field;
        }
        stringify!($field)
    }};
}
