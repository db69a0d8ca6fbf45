//! ATCO2-style air-traffic data, generated (docs/design.md §6; thesis 003 §2.4.1, Table 2.4).
//!
//! The real ATCO2 test sets are not redistributable, so this module simulates their structure
//! from public resources (the ATCO2 project's call-sign table, European waypoints, facility
//! names): aircraft with real ICAO designators enter and leave a radar area; a controller talks
//! to them in ICAO phraseology (contact/handoff with frequencies, flight levels, headings, direct
//! to waypoint, ILS clearances, squawk, QNH, taxi and hold short, greetings) and pilots read back;
//! numbers are spoken digit by digit and letters in the ICAO alphabet. Each utterance carries the
//! radar list (every aircraft then in the area), the ground-truth callsign or `NO_CALLSIGN`, and
//! the callsign's word span. Every radar callsign expands to all its spoken variants (each
//! telephony of the designator, e.g. `hansa`/`lufthansa`; four-digit flight numbers also grouped
//! in pairs). A separate LM training text, generated with another seed from the same phraseology,
//! only knows a subset of the minor operators, so that about 10% of the list words are OOV, as in
//! the published sets.

use crate::rng::Rng;
use ctx_core::io::read_text;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The ICAO spelling alphabet.
pub const ICAO_ALPHABET: [&str; 26] = [
    "alfa", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "x-ray", "yankee", "zulu",
];

const DIGIT_WORDS: [&str; 10] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

/// Operators that dominate European traffic (each must be in the call-sign table); they carry
/// most flights and are always known to the LM.
pub const MAJOR_OPERATORS: [&str; 40] = [
    "ryr", "ezy", "dlh", "afr", "baw", "klm", "swr", "aua", "sas", "ibe", "vlg", "wzz", "tap",
    "thy", "ein", "fin", "lot", "bel", "aee", "nax", "ewg", "tra", "tvs", "csa", "uae", "qtr",
    "ual", "dal", "aal", "exs", "vir", "etd", "cfg", "blx", "nor", "rja", "dah", "lgl", "ita",
    "tom",
];

/// Errors of the ATC generator.
#[derive(Debug, thiserror::Error)]
pub enum AtcError {
    /// A resource could not be read.
    #[error(transparent)]
    Core(#[from] ctx_core::CoreError),
    /// A resource or setting is unusable.
    #[error("{0}")]
    Invalid(String),
}

/// The public word resources the simulation draws from.
#[derive(Debug, Clone)]
pub struct AtcResources {
    /// ICAO designator (lower case) → its telephony designators (words joined by spaces).
    pub telephony: BTreeMap<String, Vec<String>>,
    /// Five-letter waypoint names.
    pub waypoints: Vec<String>,
    /// Facility (city/airport) names for "contact ... radar".
    pub facilities: Vec<String>,
}

impl AtcResources {
    /// Reads `callsign_table.tsv(.gz)` (designator TAB telephony), `waypoints_europe.txt(.gz)`
    /// and `facilities.txt` from a folder.
    pub fn load(dir: &Path) -> Result<Self, AtcError> {
        let find = |name: &str| {
            ctx_core::io::find_maybe_gz(&dir.join(name))
                .ok_or_else(|| AtcError::Invalid(format!("{}: missing {name}(.gz)", dir.display())))
        };
        let table_path = find("callsign_table.tsv")?;
        let mut telephony: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (i, line) in read_text(&table_path)?.lines().enumerate() {
            let Some((code, tel)) = line.split_once('\t') else {
                return Err(ctx_core::CoreError::parse(
                    &table_path,
                    i + 1,
                    "expected code<TAB>telephony",
                )
                .into());
            };
            let tel = tel.trim().to_lowercase();
            if code.is_empty() || tel.is_empty() {
                return Err(ctx_core::CoreError::parse(&table_path, i + 1, "empty field").into());
            }
            let v = telephony.entry(code.to_lowercase()).or_default();
            if !v.contains(&tel) {
                v.push(tel);
            }
        }
        let lines = |p: &Path| -> Result<Vec<String>, AtcError> {
            Ok(read_text(p)?
                .lines()
                .map(|l| l.trim().to_lowercase())
                .filter(|l| !l.is_empty())
                .collect())
        };
        let waypoints = lines(&find("waypoints_europe.txt")?)?;
        let facilities = lines(&find("facilities.txt")?)?;
        for m in MAJOR_OPERATORS {
            if !telephony.contains_key(m) {
                return Err(AtcError::Invalid(format!(
                    "{}: major operator {m} is not in the call-sign table",
                    table_path.display()
                )));
            }
        }
        if waypoints.is_empty() || facilities.is_empty() {
            return Err(AtcError::Invalid(format!(
                "{}: empty word lists",
                dir.display()
            )));
        }
        Ok(Self {
            telephony,
            waypoints,
            facilities,
        })
    }
}

/// Settings of one generated set (the `[atco2-sim-*]` tables of datasets.toml).
#[derive(Debug, Clone, PartialEq)]
pub struct AtcSimConfig {
    /// Seed of the test traffic (the LM text uses `seed + 1_000_003`).
    pub seed: u64,
    /// Number of test utterances.
    pub utterances: usize,
    /// Mean number of aircraft in the radar area.
    pub radar_aircraft: f64,
    /// Mean time an aircraft stays in the radar area (seconds).
    pub dwell_s: f64,
    /// Share of utterances without a callsign.
    pub no_callsign_share: f64,
    /// Probability that the pilot reads an instruction back.
    pub readback_prob: f64,
    /// Share of flights operated by the major operators.
    pub major_share: f64,
    /// Share of the other operators the LM text knows (controls the OOV rate of the lists).
    pub known_minor_share: f64,
    /// Waypoints of the simulated sector.
    pub sector_waypoints: usize,
    /// Of those, waypoints the LM training phraseology never uses: they reach the LM only through
    /// the published word list (one mention), so they are in the lexicon but rare — the thesis'
    /// rare-word condition (003 §3.3). Chosen with their own seeded generator, so the test
    /// utterances do not depend on this number.
    pub rare_waypoints: usize,
    /// Sentences of the LM training text.
    pub lm_sentences: usize,
}

impl Default for AtcSimConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            utterances: 100,
            radar_aircraft: 80.0,
            dwell_s: 2400.0,
            no_callsign_share: 0.15,
            readback_prob: 0.7,
            major_share: 0.7,
            known_minor_share: 0.5,
            sector_waypoints: 60,
            rare_waypoints: 0,
            lm_sentences: 40_000,
        }
    }
}

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The air-traffic controller.
    Controller,
    /// A pilot.
    Pilot,
}

/// One generated utterance.
#[derive(Debug, Clone, PartialEq)]
pub struct AtcUtterance {
    /// Utterance id (`<set>-<index>`).
    pub id: String,
    /// Who speaks.
    pub speaker: Speaker,
    /// The reference words.
    pub words: Vec<String>,
    /// The ICAO callsign spoken (e.g. `dlh5kx`), or `None` for `NO_CALLSIGN`.
    pub callsign: Option<String>,
    /// Word span `[start, end)` of the spoken callsign.
    pub callsign_span: Option<(usize, usize)>,
    /// ICAO callsigns of every aircraft in the radar area at that moment (sorted).
    pub radar: Vec<String>,
}

/// A generated set: the test utterances and the separate LM training text.
#[derive(Debug, Clone)]
pub struct AtcSim {
    /// Test utterances in time order.
    pub utterances: Vec<AtcUtterance>,
    /// LM training sentences (phraseology of another seed plus word lists).
    pub lm_text: Vec<String>,
    /// The rare waypoints ([`AtcSimConfig::rare_waypoints`]), sorted.
    pub rare_words: Vec<String>,
}

/// An aircraft: designator and flight id (`5kx`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Flight {
    code: String,
    id: String,
}

impl Flight {
    fn icao(&self) -> String {
        format!("{}{}", self.code, self.id)
    }
}

fn spell_id(id: &str) -> Vec<String> {
    id.chars()
        .map(|c| match c.to_digit(10) {
            Some(d) => DIGIT_WORDS[d as usize].to_string(),
            None => ICAO_ALPHABET[(c as u8 - b'a') as usize].to_string(),
        })
        .collect()
}

/// A pair of digits as spoken in grouped flight numbers: "oh"-less "zero five", "twelve", "forty".
fn two_digit_words(n: u32) -> Vec<String> {
    if n < 10 {
        return vec!["zero".into(), DIGIT_WORDS[n as usize].into()];
    }
    let mut out = Vec::new();
    crate::pronounce::below_thousand(n as u64, &mut out);
    out
}

/// Every spoken variant of an ICAO callsign (`designator` + flight id), given the designator's
/// telephony list: each telephony + the id spelled (digits and ICAO letters), and for a
/// four-digit numeric id also the id grouped in pairs ("twenty six eighty nine").
pub fn callsign_variants(telephony: &[String], id: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let spelled = spell_id(id);
    let grouped = (id.len() == 4 && id.chars().all(|c| c.is_ascii_digit())).then(|| {
        let n: u32 = id.parse().unwrap();
        let mut g = two_digit_words(n / 100);
        g.extend(two_digit_words(n % 100));
        g
    });
    for t in telephony {
        let tw: Vec<String> = t.split_whitespace().map(str::to_string).collect();
        let mut v = tw.clone();
        v.extend(spelled.iter().cloned());
        out.push(v);
        if let Some(g) = &grouped {
            let mut v = tw.clone();
            v.extend(g.iter().cloned());
            out.push(v);
        }
    }
    out
}

/// Splits an ICAO callsign into designator (first three letters) and flight id.
pub fn split_callsign(icao: &str) -> (&str, &str) {
    icao.split_at(icao.len().min(3))
}

struct Traffic<'a> {
    res: &'a AtcResources,
    cfg: &'a AtcSimConfig,
    majors: Vec<&'a str>,
    minors: Vec<&'a str>,
    major_cum: Vec<f64>,
    waypoints: Vec<String>,
    facilities: Vec<String>,
    runways: Vec<String>,
}

impl<'a> Traffic<'a> {
    fn new(
        res: &'a AtcResources,
        cfg: &'a AtcSimConfig,
        minors: Vec<&'a str>,
        rng: &mut Rng,
    ) -> Self {
        let majors: Vec<&str> = MAJOR_OPERATORS.to_vec();
        // Zipf-like weights over the majors in list order.
        let mut major_cum = Vec::with_capacity(majors.len());
        let mut acc = 0.0;
        for i in 0..majors.len() {
            acc += 1.0 / (i as f64 + 2.0);
            major_cum.push(acc);
        }
        let mut waypoints = Vec::new();
        let mut seen = BTreeSet::new();
        while waypoints.len() < cfg.sector_waypoints.min(res.waypoints.len()) {
            let w = rng.pick(&res.waypoints).clone();
            if seen.insert(w.clone()) {
                waypoints.push(w);
            }
        }
        let mut facilities = Vec::new();
        for _ in 0..3 {
            facilities.push(rng.pick(&res.facilities).clone());
        }
        let mut runways = Vec::new();
        for _ in 0..2 {
            let n = rng.range(1, 36) as u32;
            let rec = (n + 17) % 36 + 1;
            for (num, side) in [(n, "left"), (n, "right"), (rec, "left"), (rec, "right")] {
                let mut w = vec!["runway".to_string()];
                w.extend(spell_id(&format!("{num:02}")));
                w.push(side.into());
                runways.push(w.join(" "));
            }
        }
        Self {
            res,
            cfg,
            majors,
            minors,
            major_cum,
            waypoints,
            facilities,
            runways,
        }
    }

    fn new_flight(&self, rng: &mut Rng) -> Flight {
        let code = if rng.chance(self.cfg.major_share) || self.minors.is_empty() {
            self.majors[rng.weighted(&self.major_cum)]
        } else {
            *rng.pick(&self.minors)
        };
        let digits = rng.range(1, 4) as usize;
        let mut id: String = (0..digits)
            .map(|i| {
                let lo = if i == 0 { 1 } else { 0 };
                char::from(b'0' + rng.range(lo, 9) as u8)
            })
            .collect();
        if digits < 4 && rng.chance(0.5) {
            for _ in 0..rng.range(1, 2) {
                id.push(char::from(b'a' + rng.below(26) as u8));
            }
        }
        Flight {
            code: code.to_string(),
            id,
        }
    }

    /// The spoken callsign: usually the first telephony with the id spelled; sometimes another.
    fn say_callsign(&self, f: &Flight, rng: &mut Rng) -> Vec<String> {
        let variants = callsign_variants(&self.res.telephony[&f.code], &f.id);
        if variants.len() > 1 && rng.chance(0.25) {
            rng.pick(&variants[1..]).clone()
        } else {
            variants[0].clone()
        }
    }

    fn digits(&self, s: &str) -> Vec<String> {
        spell_id(s)
    }

    fn frequency(&self, rng: &mut Rng) -> Vec<String> {
        let mhz = rng.range(118, 136);
        let khz = rng.range(0, 39) * 25;
        let mut w = self.digits(&mhz.to_string());
        w.push("decimal".into());
        let k = format!("{khz:03}");
        let k = k.trim_end_matches('0');
        w.extend(self.digits(if k.is_empty() { "0" } else { k }));
        w
    }

    /// One instruction for a flight: (controller words before/after the callsign, readback).
    fn instruction(&self, rng: &mut Rng) -> (Vec<String>, Vec<String>) {
        let s = |x: &str| x.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let cat = |parts: Vec<Vec<String>>| parts.concat();
        match rng.below(12) {
            0 => {
                let fac = rng.pick(&self.facilities).clone();
                let unit = *rng.pick(&[
                    "radar", "approach", "tower", "director", "ground", "control",
                ]);
                let f = self.frequency(rng);
                let c = cat(vec![s("contact"), s(&fac), s(unit), f.clone()]);
                let rb = if rng.chance(0.5) {
                    cat(vec![f, s("bye bye")])
                } else {
                    f
                };
                (c, rb)
            }
            1 | 2 => {
                let fl = format!("{:03}", rng.range(7, 40) * 10);
                let verb = if rng.chance(0.5) { "climb" } else { "descend" };
                let body = cat(vec![s(verb), s("flight level"), self.digits(&fl)]);
                (body.clone(), body)
            }
            3 => {
                let hdg = format!("{:03}", rng.range(1, 72) * 5);
                let dir = if rng.chance(0.5) { "left" } else { "right" };
                let body = cat(vec![s("turn"), s(dir), s("heading"), self.digits(&hdg)]);
                (body.clone(), body)
            }
            4 | 5 => {
                let wp = rng.pick(&self.waypoints).clone();
                let body = cat(vec![s("proceed direct"), s(&wp)]);
                (body, cat(vec![s("direct"), s(&wp)]))
            }
            6 => {
                let rwy = rng.pick(&self.runways).clone();
                let body = cat(vec![s("cleared ils approach"), s(&rwy)]);
                (body.clone(), body)
            }
            7 => {
                let code: String = (0..4)
                    .map(|_| char::from(b'0' + rng.range(0, 7) as u8))
                    .collect();
                let body = cat(vec![s("squawk"), self.digits(&code)]);
                (body.clone(), body)
            }
            8 => {
                let q = rng.range(990, 1035).to_string();
                let alt = rng.range(3, 9).to_string();
                let c = cat(vec![
                    s("descend altitude"),
                    self.digits(&alt),
                    s("thousand feet qnh"),
                    self.digits(&q),
                ]);
                let rb = cat(vec![
                    s("descend"),
                    self.digits(&alt),
                    s("thousand feet qnh"),
                    self.digits(&q),
                ]);
                (c, rb)
            }
            9 => {
                let rwy = rng.pick(&self.runways).clone();
                let via = ICAO_ALPHABET[rng.below(26)];
                let c = cat(vec![s("taxi to holding point"), s(&rwy), s("via"), s(via)]);
                let rb = cat(vec![s("holding point"), s(&rwy), s("via"), s(via)]);
                (c, rb)
            }
            10 => {
                let rwy = rng.pick(&self.runways).clone();
                let wind = format!("{:03}", rng.range(1, 36) * 10);
                let kt = rng.range(3, 25).to_string();
                let c = cat(vec![
                    s(&rwy),
                    s("wind"),
                    self.digits(&wind),
                    s("degrees"),
                    self.digits(&kt),
                    s("knots cleared for takeoff"),
                ]);
                let rb = cat(vec![s("cleared for takeoff"), s(&rwy)]);
                (c, rb)
            }
            _ => {
                let spd = format!("{}", rng.range(16, 28) * 10);
                let body = cat(vec![s("reduce speed"), self.digits(&spd), s("knots")]);
                (body.clone(), body)
            }
        }
    }

    fn no_callsign(&self, rng: &mut Rng) -> Vec<String> {
        let s = |x: &str| x.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        match rng.below(8) {
            0 => s("station calling say again your callsign"),
            1 => s("say again"),
            2 => s("stand by"),
            3 => s("break break"),
            4 => {
                let fac = rng.pick(&self.facilities).clone();
                let mut w = s("all stations");
                w.extend(s(&fac));
                w.extend(s("information"));
                w.push(ICAO_ALPHABET[rng.below(26)].into());
                w.extend(s("is now current"));
                w
            }
            5 => {
                let greeting: &&str = rng.pick(&[
                    "good morning",
                    "good day",
                    "hello",
                    "bonjour",
                    "servus",
                    "gruezi",
                ]);
                s(greeting)
            }
            6 => s("roger"),
            _ => s("go ahead"),
        }
    }
}

/// Generates a set: traffic with radar lists for the test utterances, then the LM text.
pub fn generate(
    res: &AtcResources,
    cfg: &AtcSimConfig,
    set_name: &str,
) -> Result<AtcSim, AtcError> {
    if cfg.radar_aircraft < 1.0 || cfg.dwell_s <= 0.0 || cfg.utterances == 0 {
        return Err(AtcError::Invalid(
            "atc-sim needs radar_aircraft >= 1, dwell_s > 0 and utterances > 0".into(),
        ));
    }
    if cfg.rare_waypoints >= cfg.sector_waypoints.max(1) {
        return Err(AtcError::Invalid(format!(
            "atc-sim: rare_waypoints ({}) must be below sector_waypoints ({}): the LM \
             phraseology needs at least one common waypoint",
            cfg.rare_waypoints, cfg.sector_waypoints
        )));
    }
    // Which minor operators the LM knows: a seeded split of the non-major designators.
    let mut split = Rng::for_key(cfg.seed, "operators");
    let majors: BTreeSet<&str> = MAJOR_OPERATORS.into_iter().collect();
    let mut known_minors = Vec::new();
    let mut all_minors = Vec::new();
    for code in res.telephony.keys() {
        if majors.contains(code.as_str()) {
            continue;
        }
        all_minors.push(code.as_str());
        if split.chance(cfg.known_minor_share) {
            known_minors.push(code.as_str());
        }
    }

    let mut rng = Rng::for_key(cfg.seed, "traffic");
    let traffic = Traffic::new(res, cfg, all_minors, &mut rng);
    let mut present: Vec<(Flight, f64)> = Vec::new(); // flight, leaves at
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut t = 0.0;
    let mut add_flight =
        |present: &mut Vec<(Flight, f64)>, rng: &mut Rng, now: f64, remaining: f64| loop {
            let f = traffic.new_flight(rng);
            if used.insert(f.icao()) {
                present.push((f, now + remaining));
                return;
            }
        };
    for _ in 0..cfg.radar_aircraft.round() as usize {
        let rem = rng.uniform() * cfg.dwell_s * 2.0;
        add_flight(&mut present, &mut rng, 0.0, rem);
    }
    let mut utterances = Vec::with_capacity(cfg.utterances);
    // A pending pilot readback: (flight, words).
    let mut pending: Option<(Flight, Vec<String>)> = None;
    let arrival_rate = cfg.radar_aircraft / cfg.dwell_s;
    // Readbacks are generated on top of the controller's choice; keep the overall share.
    // A controller turn without a callsign has probability p; other turns add a readback with
    // probability r, so the share of NO_CALLSIGN utterances is p / (1 + (1 − p) r) = q, i.e.
    // p = q (1 + r) / (1 + q r).
    let (q, r) = (cfg.no_callsign_share, cfg.readback_prob);
    let nc_prob = q * (1.0 + r) / (1.0 + q * r);
    while utterances.len() < cfg.utterances {
        let idx = utterances.len();
        let id = format!("{set_name}-{idx:05}");
        let mut radar: Vec<String> = present.iter().map(|(f, _)| f.icao()).collect();
        radar.sort();
        let (speaker, words, callsign, span) = if let Some((f, rb)) = pending.take() {
            let cs = traffic.say_callsign(&f, &mut rng);
            let mut w = rb;
            let start = w.len();
            w.extend(cs.iter().cloned());
            (
                Speaker::Pilot,
                w,
                Some(f.icao()),
                Some((start, start + cs.len())),
            )
        } else if rng.chance(nc_prob.min(1.0)) || present.is_empty() {
            (
                Speaker::Controller,
                traffic.no_callsign(&mut rng),
                None,
                None,
            )
        } else {
            let (f, _) = present[rng.below(present.len())].clone();
            let cs = traffic.say_callsign(&f, &mut rng);
            let (cmd, rb) = traffic.instruction(&mut rng);
            let mut w = Vec::new();
            if rng.chance(0.1) {
                w.extend(["good", "morning"].map(String::from));
            }
            let start = w.len();
            w.extend(cs.iter().cloned());
            let end = w.len();
            w.extend(cmd);
            if rng.chance(cfg.readback_prob) {
                pending = Some((f.clone(), rb));
            }
            (Speaker::Controller, w, Some(f.icao()), Some((start, end)))
        };
        // Time moves on: the utterance (about 0.35 s a word) and a gap before the next.
        let dt = 0.35 * words.len() as f64 + rng.exponential(4.0);
        utterances.push(AtcUtterance {
            id,
            speaker,
            words,
            callsign,
            callsign_span: span,
            radar,
        });
        t += dt;
        present.retain(|(_, leave)| *leave > t);
        for _ in 0..rng.poisson(arrival_rate * dt) {
            let rem = rng.exponential(cfg.dwell_s);
            add_flight(&mut present, &mut rng, t, rem);
        }
    }

    // The LM text: the same phraseology with another seed, only known operators, plus word lists.
    let lm_cfg = AtcSimConfig {
        seed: cfg.seed.wrapping_add(1_000_003),
        ..cfg.clone()
    };
    let mut lm_rng = Rng::for_key(lm_cfg.seed, "lm-text");
    let mut lm_traffic = Traffic::new(res, &lm_cfg, known_minors.clone(), &mut lm_rng);
    // The LM knows the test sector's waypoints, facilities and runways (they are published),
    // but its phraseology never uses the rare waypoints.
    let mut rare_rng = Rng::for_key(cfg.seed, "rare-waypoints");
    let mut rare_words: Vec<String> = Vec::new();
    while rare_words.len() < cfg.rare_waypoints.min(traffic.waypoints.len()) {
        let w = rare_rng.pick(&traffic.waypoints);
        if !rare_words.contains(w) {
            rare_words.push(w.clone());
        }
    }
    rare_words.sort();
    lm_traffic.waypoints = traffic
        .waypoints
        .iter()
        .filter(|w| rare_words.binary_search(w).is_err())
        .cloned()
        .collect();
    lm_traffic.facilities = traffic.facilities.clone();
    lm_traffic.runways = traffic.runways.clone();
    let mut lm_text = Vec::with_capacity(cfg.lm_sentences + res.telephony.len());
    while lm_text.len() < cfg.lm_sentences {
        if lm_rng.chance(cfg.no_callsign_share) {
            lm_text.push(lm_traffic.no_callsign(&mut lm_rng).join(" "));
            continue;
        }
        let f = lm_traffic.new_flight(&mut lm_rng);
        let cs = lm_traffic.say_callsign(&f, &mut lm_rng);
        let (cmd, rb) = lm_traffic.instruction(&mut lm_rng);
        lm_text.push([cs.clone(), cmd].concat().join(" "));
        if lm_rng.chance(cfg.readback_prob) {
            lm_text.push([rb, cs].concat().join(" "));
        }
    }
    // Word lists: known telephony designators, the alphabet, the sector's names.
    for code in MAJOR_OPERATORS
        .iter()
        .copied()
        .chain(known_minors.iter().copied())
    {
        for t in &res.telephony[code] {
            lm_text.push(t.clone());
        }
    }
    lm_text.push(ICAO_ALPHABET.join(" "));
    lm_text.push(DIGIT_WORDS.join(" "));
    lm_text.push(traffic.waypoints.join(" "));
    Ok(AtcSim {
        utterances,
        lm_text,
        rare_words,
    })
}
