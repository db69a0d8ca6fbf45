//! Every setting of every family as a `ctxbench decode` flag, made from the settings blocks'
//! specs (the catalog): `--lattice-beam 8` sets `lattice_beam` as `lattice_beam = 8` in an
//! experiment file or `--set lattice_beam=8` would, through the same conversion
//! ([`Value::from_cli`]), so the two doors cannot disagree on a name, a type or a default.
//! A setting whose flag the command already has (`--dataset`, `--backend`, ...) is left to it.

use crate::methods::catalog;
use crate::settings::{SettingSpec, Value};
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};

/// The setting flags given on the command line, in catalog order.
#[derive(Debug, Clone, Default)]
pub struct SettingFlags {
    /// (setting, value) for every flag given.
    pub given: Vec<(&'static str, Value)>,
    /// Deprecated spellings used: (old flag, new flag), said once the flags are read.
    pub deprecated: Vec<(&'static str, &'static str)>,
    /// A flag given with its old spelling too (refused when the request is made).
    pub conflicts: Vec<String>,
}

/// The names clap keeps of a setting's flag (clap holds `'static` names: made once).
struct Names {
    /// `lattice_beam` → `lattice-beam`.
    flag: &'static str,
    /// Its argument id, apart from the command's own ids (`--graph` is a file there).
    id: &'static str,
    /// The id of its deprecated spelling's own argument.
    old_id: Option<&'static str>,
}

/// Every setting of the catalog with its flag names, made once per process.
fn names() -> &'static [(SettingSpec, Names)] {
    static NAMES: std::sync::LazyLock<Vec<(SettingSpec, Names)>> = std::sync::LazyLock::new(|| {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        catalog()
            .settings()
            .iter()
            .map(|sp| {
                let n = Names {
                    flag: leak(sp.name.replace('_', "-")),
                    id: leak(format!("setting:{}", sp.name)),
                    old_id: sp.old_flag.map(|o| leak(format!("setting-old:{o}"))),
                };
                (*sp, n)
            })
            .collect()
    });
    &NAMES
}

impl Args for SettingFlags {
    fn augment_args(cmd: Command) -> Command {
        let taken =
            |cmd: &Command, long: &str| cmd.get_arguments().any(|a| a.get_long() == Some(long));
        let mut cmd = cmd;
        for (sp, n) in names() {
            // Its own spelling, or its alias where the command has the first (`--graph` is
            // the graph file of `--scores` decodes: the kind is `--kind`).
            let Some(long) = [Some(n.flag), sp.alias_flag]
                .into_iter()
                .flatten()
                .find(|l| !taken(&cmd, l))
            else {
                continue;
            };
            let ty = sp.ty;
            let default = (sp.default)().map_or(String::new(), |v| format!(" [default: {v}]"));
            let parser = move |s: &str| Value::from_cli(s, ty);
            let mut arg = Arg::new(n.id)
                .long(long)
                .value_name(match ty {
                    crate::settings::Type::Str => "TEXT",
                    crate::settings::Type::Float => "NUMBER",
                    crate::settings::Type::Int => "N",
                    crate::settings::Type::Bool => "true|false",
                })
                .help(format!("{} ({}){default}", sp.doc.trim(), sp.component))
                .help_heading("Settings (any family's, as in experiment files)")
                .allow_hyphen_values(true)
                .value_parser(parser);
            if let Some(a) = sp.alias_flag.filter(|a| *a != long && !taken(&cmd, a)) {
                arg = arg.visible_alias(a);
            }
            cmd = cmd.arg(arg);
            if let (Some(id), Some(old)) = (n.old_id, sp.old_flag) {
                cmd = cmd.arg(
                    Arg::new(id)
                        .long(old)
                        .hide(true)
                        .allow_hyphen_values(true)
                        .value_parser(parser),
                );
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SettingFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut out = SettingFlags::default();
        let has = |id: &str| m.try_contains_id(id).unwrap_or(false);
        for (sp, n) in names() {
            let new = has(n.id)
                .then(|| m.get_one::<Value>(n.id).cloned())
                .flatten();
            let old = n
                .old_id
                .filter(|o| has(o))
                .and_then(|o| m.get_one::<Value>(o).cloned())
                .zip(sp.old_flag)
                .map(|(v, o)| (o, v));
            match (new, old) {
                (Some(_), Some((o, _))) => out.conflicts.push(format!(
                    "--{} and its old spelling --{o} are both given",
                    n.flag
                )),
                (Some(v), None) => out.given.push((sp.name, v)),
                (None, Some((o, v))) => {
                    out.deprecated.push((o, n.flag));
                    out.given.push((sp.name, v));
                }
                (None, None) => {}
            }
        }
        Ok(out)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}
