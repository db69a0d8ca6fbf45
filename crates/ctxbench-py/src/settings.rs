//! Keyword settings of a decoder: the CLI's typed setting blocks, checked as Python values.

use ctxbench::methods::components::open_vocab::OpenVocab;
use ctxbench::methods::components::penalties::CtcPenalties;
use ctxbench::settings::{Block, Common, SettingSpec, Settings, Type, Value};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Settings of the common block a decoder of arrays has no use for (they choose a dataset).
const DATASET_KEYS: [&str; 7] = [
    "dataset", "subset", "graph", "bpe_size", "noise", "limit", "targets",
];

/// The settings a `CtcDecoder` takes as keyword arguments: the common block's decoder
/// settings, the CTC penalties and the open-vocabulary settings (contexts' default weight, the
/// class slot's entry cost, the longest pause inside a phrase), typed by the same specs as the
/// CLI's flags.
pub(crate) fn decoder_specs() -> Vec<&'static SettingSpec> {
    Common::SPECS
        .iter()
        .chain(CtcPenalties::SPECS)
        .chain(OpenVocab::SPECS)
        .filter(|s| !DATASET_KEYS.contains(&s.name) && s.name != "open_vocab")
        .collect()
}

/// A Python value as a setting of type `spec.ty`, or a `TypeError`/`ValueError` naming it.
pub(crate) fn to_value(spec: &SettingSpec, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    let name = spec.name;
    let is_bool = v.is_instance_of::<pyo3::types::PyBool>();
    let wrong = |what: &str| {
        PyTypeError::new_err(format!(
            "{name}: expected {what}, got {}",
            v.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    };
    match spec.ty {
        Type::Float if !is_bool => {
            let x: f64 = v.extract().map_err(|_| wrong("a number"))?;
            if !x.is_finite() {
                return Err(PyValueError::new_err(format!(
                    "{name}: {x} is not a finite number"
                )));
            }
            Ok(Value::Float(x))
        }
        Type::Int if !is_bool => {
            let i: i64 = v.extract().map_err(|_| wrong("an int"))?;
            if i < 0 {
                return Err(PyValueError::new_err(format!("{name}: {i} is below 0")));
            }
            Ok(Value::Int(i))
        }
        Type::Bool if is_bool => Ok(Value::Bool(v.extract()?)),
        Type::Str => Ok(Value::Str(v.extract().map_err(|_| wrong("a str"))?)),
        Type::Float => Err(wrong("a number")),
        Type::Int => Err(wrong("an int")),
        Type::Bool => Err(wrong("a bool")),
    }
}

/// The keyword `settings` over the blocks' defaults, typed and checked (`who` names the
/// constructor in messages): every block's values, and those a decoder takes (for `settings`).
pub(crate) fn resolve(
    who: &str,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Settings, Settings)> {
    let specs = decoder_specs();
    let mut s = Settings::new();
    Common::defaults(&mut s);
    CtcPenalties::defaults(&mut s);
    OpenVocab::defaults(&mut s);
    if let Some(kw) = settings {
        for (k, v) in kw.iter() {
            let k: String = k.extract()?;
            let spec = specs.iter().find(|s| s.name == k).ok_or_else(|| {
                let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
                PyTypeError::new_err(format!(
                    "{who}() got an unexpected keyword argument '{k}' (settings: {})",
                    names.join(", ")
                ))
            })?;
            if v.is_none() {
                s.remove(&k);
            } else {
                s.insert(k, to_value(spec, &v)?);
            }
        }
    }
    let resolved = s
        .iter()
        .filter(|(k, _)| specs.iter().any(|s| s.name == k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok((s, resolved))
}

/// The settings as a Python dict.
pub(crate) fn to_dict<'py>(py: Python<'py>, s: &Settings) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in s {
        match v {
            Value::Str(x) => d.set_item(k, x)?,
            Value::Float(x) => d.set_item(k, x)?,
            Value::Int(x) => d.set_item(k, x)?,
            Value::Bool(x) => d.set_item(k, x)?,
        }
    }
    Ok(d)
}
