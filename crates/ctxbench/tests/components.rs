//! Adding a biasing component is one module implementing `SearchComponent` and one line in a
//! family's search list (docs/design.md §8). The component here, written as a newcomer would
//! write one, is registered that way; the WFST family then parses it in method names, lists and
//! checks its setting, keys, builds, stacks and measures it without another edit.

use anyhow::{bail, Result};
use ctx_data::dataset::Dataset;
use ctxbench::experiment::{Catalog, Component, Point, Settings};
use ctxbench::methods::components::arc_boost::ArcBoosting;
use ctxbench::methods::components::search::{BuildContext, Built, SearchComponent};
use ctxbench::methods::components::word_boost::{ContextBoosters, WordBoosting};
use ctxbench::methods::wfst::Wfst;
use ctxbench::methods::{Family, GroupContext};
use ctxbench::pipeline::ListKind;
use ctxbench::settings::{Block, Common, SettingSpec};
use std::path::Path;

ctxbench::settings_block! {
    /// The new component's settings.
    pub struct EntityBoost in "entity-boosting" {
        /// bonus per word of the utterance's own reference entities (graph units; an oracle)
        entity_bonus: Option<f64> = None => required,
    }
}

/// Boosts the words of each utterance's reference entities (the `gt` list) during the search.
struct EntityBoosting;

impl SearchComponent for EntityBoosting {
    fn component(&self) -> Component {
        Component {
            name: "entity-boosting",
            doc: "each utterance's reference entity words boosted during the search (an oracle)",
        }
    }

    fn specs(&self) -> &'static [SettingSpec] {
        EntityBoost::SPECS
    }

    fn on(&self, s: &Settings) -> Result<bool> {
        Ok(EntityBoost::read(s)?.entity_bonus.is_some())
    }

    fn check(&self, s: &Settings) -> Result<()> {
        match EntityBoost::read(s)?.entity_bonus {
            Some(x) if x < 0.0 => bail!("entity_bonus {x}: a bonus, at least 0"),
            _ => Ok(()),
        }
    }

    fn check_lists(&self, _ds: &Dataset, _s: &Settings) -> Result<()> {
        Ok(())
    }

    fn key(&self, s: &Settings) -> Result<String> {
        Ok(EntityBoost::read(s)?.key())
    }

    fn build(&self, cx: &BuildContext<'_>, s: &Settings) -> Result<Option<Built>> {
        let Some(bonus) = EntityBoost::read(s)?.entity_bonus else {
            return Ok(None);
        };
        let b = ContextBoosters::words(
            cx.setup,
            &ListKind::GroundTruth,
            bonus as f32,
            cx.decode.config.beam,
        )?;
        let n = cx.setup.dataset.utterances.len() as f64;
        Ok(Some(Built {
            report: format!("entity boosting: {} words", b.applied),
            measures: [("boosted_words", b.applied as f64 / n)].into(),
            phrases: None,
            build_s: b.build_s,
            boosters: b.boosters,
        }))
    }
}

/// The WFST family with the new component: its registration is this one line.
static FAMILY: Wfst = Wfst {
    search: &[&ArcBoosting, &WordBoosting, &EntityBoosting],
};

fn catalog() -> &'static Catalog {
    static CAT: std::sync::LazyLock<Catalog> =
        std::sync::LazyLock::new(|| Catalog::new(vec![&FAMILY]));
    &CAT
}

/// A point of `method` on the first 24 quick ATCO2-1h utterances with `extra` settings.
fn point(method: &str, extra: &[(&str, f64)]) -> Result<Point> {
    let cat = catalog();
    let mut s = cat.defaults();
    Common {
        dataset: Some("atco2-sim-1h".into()),
        subset: "quick".into(),
        limit: Some(24),
        ..Common::read(&s)?
    }
    .write(&mut s);
    for (k, v) in extra {
        s.insert(k.to_string(), ctxbench::settings::Value::Float(*v));
    }
    let p = Point {
        row: method.into(),
        section: String::new(),
        method: cat.method(method)?,
        settings: s,
        swept: Vec::new(),
    };
    cat.point(p, "test")
}

#[test]
fn a_new_search_component_is_a_module_and_one_line() {
    let cat = catalog();
    // Parsed in method names, its setting listed with its doc, required and checked.
    let m = cat.method("entity-boosting").unwrap();
    assert_eq!(m.to_string(), "entity-boosting");
    assert!(cat.method("entity-boosting+lattice-biasing").is_ok());
    let spec = cat.setting("entity_bonus").expect("its setting is listed");
    assert!(spec.required && spec.doc.contains("reference entities"));
    let unset = point("entity-boosting", &[]).unwrap_err();
    assert!(
        format!("{unset:#}").contains("'entity_bonus' is not set"),
        "{unset:#}"
    );
    let bad = point("entity-boosting", &[("entity_bonus", -1.0)]).unwrap_err();
    assert!(format!("{bad:#}").contains("entity_bonus -1"), "{bad:#}");

    // Keyed apart from the baseline, built, stacked and measured: its booster reaches the
    // search (a bonus changes the output, a zero bonus leaves it as the baseline's).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let reg = ctx_data::registry::Registry::discover(&root).unwrap();
    let points = vec![
        point("baseline", &[]).unwrap(),
        point("entity-boosting", &[("entity_bonus", 4.0)]).unwrap(),
        point("entity-boosting", &[("entity_bonus", 0.0)]).unwrap(),
    ];
    assert_ne!(FAMILY.decode_key(&points[0]), FAMILY.decode_key(&points[1]));
    assert_eq!(FAMILY.setup_key(&points[0]), FAMILY.setup_key(&points[1]));
    let keys = vec!["a".to_string(), "b".to_string(), "c".to_string()];
    let cx = GroupContext {
        reg: &reg,
        cache: &root.join("cache/graphs"),
        points: &points,
        keys: &keys,
        data_versions: &keys,
        sink: None,
    };
    let mut setup = None;
    let base = FAMILY.run_group(&cx, &[0], &mut setup).unwrap().remove(0);
    let boosted = FAMILY.run_group(&cx, &[1], &mut setup).unwrap().remove(0);
    let m = |r: &ctxbench::results::PointRecord, k: &str| r.measures.get(k).copied();
    assert!(
        m(&boosted, "boosted_words").unwrap() > 0.5,
        "{:?}",
        boosted.measures
    );
    assert_eq!(m(&base, "boosted_words"), None);
    assert!(m(&boosted, "context_s").is_some());
    let zero = FAMILY.run_group(&cx, &[2], &mut setup).unwrap().remove(0);
    let figures = |r| (m(r, "wer").unwrap(), m(r, "ne_wer").unwrap());
    assert_ne!(
        figures(&base),
        figures(&boosted),
        "the booster changed nothing"
    );
    assert_eq!(figures(&base), figures(&zero));
}
