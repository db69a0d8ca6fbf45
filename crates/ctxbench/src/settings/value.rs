//! A setting's value as experiment files, `--set` and command-line flags write it: its
//! [`Type`], the [`Value`] a grid holds, and the [`SettingSpec`] a catalog lists.

use std::collections::BTreeMap;
use std::fmt;

/// The type of a setting's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// A string.
    Str,
    /// A number (integers accepted).
    Float,
    /// A non-negative integer.
    Int,
    /// true / false.
    Bool,
}

/// A setting's value.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub enum Value {
    /// A string.
    Str(String),
    /// A number.
    Float(f64),
    /// An integer.
    Int(i64),
    /// A flag.
    Bool(bool),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Float(x) => write!(f, "{x}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl Value {
    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The number (integers widened).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(x) => Some(*x),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    /// The flag.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Converts a TOML value to this type, or says why not.
    pub(crate) fn from_toml(v: &toml::Value, ty: Type) -> std::result::Result<Self, String> {
        match (ty, v) {
            (Type::Str, toml::Value::String(s)) => Ok(Value::Str(s.clone())),
            (Type::Float, toml::Value::Float(x)) if x.is_finite() => Ok(Value::Float(*x)),
            (Type::Float, toml::Value::Integer(i)) => Ok(Value::Float(*i as f64)),
            (Type::Int, toml::Value::Integer(i)) if *i >= 0 => Ok(Value::Int(*i)),
            (Type::Bool, toml::Value::Boolean(b)) => Ok(Value::Bool(*b)),
            (ty, v) => Err(format!("expected {ty:?} (got {v})").to_lowercase()),
        }
    }

    /// Parses a command-line value (`--set key=value`) as this type.
    pub fn from_cli(s: &str, ty: Type) -> std::result::Result<Self, String> {
        match ty {
            Type::Str => Ok(Value::Str(s.to_string())),
            Type::Float => s
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(Value::Float)
                .ok_or_else(|| format!("'{s}' is not a number")),
            Type::Int => s
                .parse::<i64>()
                .ok()
                .filter(|i| *i >= 0)
                .map(Value::Int)
                .ok_or_else(|| format!("'{s}' is not a non-negative integer")),
            Type::Bool => s
                .parse::<bool>()
                .map(Value::Bool)
                .map_err(|_| format!("'{s}' is not true or false")),
        }
    }
}

/// One setting an experiment may fix or sweep: what [`crate::settings_block!`] declares for each
/// field of a settings block.
#[derive(Debug, Clone, Copy)]
pub struct SettingSpec {
    /// Its key in the TOML files and its column in points.csv.
    pub name: &'static str,
    /// Its type.
    pub ty: Type,
    /// The method component that reads it (`common`: every method; or a family's name).
    pub component: &'static str,
    /// What it means (with its unit).
    pub doc: &'static str,
    /// Whether a method with its component must set it (the component's list).
    pub required: bool,
    /// A deprecated spelling of its command-line flag (without `--`), said when used.
    pub old_flag: Option<&'static str>,
    /// A second spelling of its command-line flag (without `--`).
    pub alias_flag: Option<&'static str>,
    /// Its default value (`None`: unset unless given).
    pub default: fn() -> Option<Value>,
}

/// Resolved settings by key: one point of a grid.
pub type Settings = BTreeMap<String, Value>;
