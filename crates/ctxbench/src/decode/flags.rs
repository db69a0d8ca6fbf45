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

/// `lattice_beam` → `lattice-beam` (leaked once: clap keeps `'static` names).
fn flag_of(name: &'static str) -> &'static str {
    Box::leak(name.replace('_', "-").into_boxed_str())
}

/// A setting's argument id (apart from the command's own ids: `--graph` is a file there).
fn id_of(name: &'static str) -> &'static str {
    Box::leak(format!("setting:{name}").into_boxed_str())
}

/// The id of a deprecated spelling's own argument.
fn old_id(sp: &SettingSpec) -> Option<&'static str> {
    sp.old_flag
        .map(|o| &*Box::leak(format!("setting-old:{o}").into_boxed_str()))
}

impl Args for SettingFlags {
    fn augment_args(cmd: Command) -> Command {
        let taken =
            |cmd: &Command, long: &str| cmd.get_arguments().any(|a| a.get_long() == Some(long));
        let mut cmd = cmd;
        for sp in catalog().settings() {
            // Its own spelling, or its alias where the command has the first (`--graph` is
            // the graph file of `--scores` decodes: the kind is `--kind`).
            let own = flag_of(sp.name);
            let Some(long) = [Some(own), sp.alias_flag]
                .into_iter()
                .flatten()
                .find(|l| !taken(&cmd, l))
            else {
                continue;
            };
            let ty = sp.ty;
            let default = (sp.default)().map_or(String::new(), |v| format!(" [default: {v}]"));
            let parser = move |s: &str| Value::from_cli(s, ty);
            let mut arg = Arg::new(id_of(sp.name))
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
            if let (Some(id), Some(old)) = (old_id(sp), sp.old_flag) {
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
        for sp in catalog().settings() {
            let id = id_of(sp.name);
            let new = has(id).then(|| m.get_one::<Value>(id).cloned()).flatten();
            let old = old_id(sp)
                .filter(|o| has(o))
                .and_then(|o| m.get_one::<Value>(o).cloned())
                .zip(sp.old_flag)
                .map(|(v, o)| (o, v));
            match (new, old) {
                (Some(_), Some((o, _))) => out.conflicts.push(format!(
                    "--{} and its old spelling --{o} are both given",
                    flag_of(sp.name)
                )),
                (Some(v), None) => out.given.push((sp.name, v)),
                (None, Some((o, v))) => {
                    out.deprecated.push((o, flag_of(sp.name)));
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
