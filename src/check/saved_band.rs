//! A live band measured once, kept as data (`data/decay/*.csv`): the real runs' mean, min
//! and max at every checkpoint of `replay --process --live --honour-clock`, and what each
//! model run takes from its live run ([`RunStart`]), so that the model can be compared with
//! it again anywhere, deterministically (the report's decay section).
//!
//! The file is a CSV with `# key: value` lines before it: the command that measured it, the
//! machine, the trace (relative to the repository), the options, the model's coarse clock
//! resolution there, the build (its JSON) and one `# run:` line per live run.

use super::clocked_child::StartMeta;
use super::decay_compare::{Band, RealBand, RealPoint, RunStart};
use crate::sizeclass::AllocatorConfig;
use anyhow::{bail, ensure, Context, Result};

/// What a band file says about how it was measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BandHeader {
    pub command: String,
    pub machine: String,
    /// The trace, relative to the repository's root.
    pub trace: String,
    pub malloc_conf: String,
    pub time_scale: f64,
    pub seed: u64,
    /// `CLOCK_MONOTONIC_COARSE`'s resolution on the machine (the model's clock there).
    pub clock_resolution_ns: u64,
}

/// A band file's contents.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RecordedBand {
    pub header: BandHeader,
    pub band: RealBand,
}

const RUN_FIELDS: &str = "start_ns residue resident0 resident_fresh allocated0 allocated_fresh rtree below heap heap_lo heap_hi";
const STATS: [&str; 6] = [
    "active", "resident", "dirty", "muzzy", "retained", "metadata",
];

fn bands(p: &RealPoint) -> [Band; 6] {
    [
        p.active, p.resident, p.dirty, p.muzzy, p.retained, p.metadata,
    ]
}

impl RecordedBand {
    /// The file's text (floats in Rust's shortest round-trip form: parsing gives them back).
    pub(crate) fn to_csv(&self) -> Result<String> {
        let h = &self.header;
        let mut out = String::from(
            "# fragsim decay band (issue 25): the live jemalloc's statistics on the trace's clock, measured once; `fragsim report` compares the model with it\n",
        );
        for (k, v) in [
            ("command", h.command.clone()),
            ("machine", h.machine.clone()),
            ("trace", h.trace.clone()),
            ("malloc_conf", h.malloc_conf.clone()),
            ("time_scale", h.time_scale.to_string()),
            ("seed", h.seed.to_string()),
            ("clock_resolution_ns", h.clock_resolution_ns.to_string()),
            ("narenas", self.band.narenas.to_string()),
            ("config", serde_json::to_string(&self.band.config)?),
            ("run fields", RUN_FIELDS.to_string()),
        ] {
            ensure!(
                !v.contains('\n'),
                "a band header value has a line break: '{v}'"
            );
            out.push_str(&format!("# {k}: {v}\n"));
        }
        for r in &self.band.runs {
            let m = r.start_meta;
            let rtree = m.rtree.map_or("-".to_string(), |t| t.to_string());
            out.push_str(&format!(
                "# run: {} {} {} {} {} {} {rtree} {} {} {} {}\n",
                r.start_ns,
                r.residue,
                m.resident0,
                m.resident_fresh,
                m.allocated0,
                m.allocated_fresh,
                r.below,
                r.heap,
                r.heap_mapping.0,
                r.heap_mapping.1
            ));
        }
        out.push_str("event");
        for s in STATS {
            out.push_str(&format!(",{s}_mean,{s}_min,{s}_max"));
        }
        out.push('\n');
        for p in &self.band.points {
            out.push_str(&p.event.to_string());
            for b in bands(p) {
                out.push_str(&format!(",{},{},{}", b.mean, b.min, b.max));
            }
            out.push('\n');
        }
        Ok(out)
    }

    /// Reads what [`RecordedBand::to_csv`] wrote.
    pub fn parse(text: &str) -> Result<RecordedBand> {
        let mut keys = std::collections::HashMap::new();
        let mut runs = Vec::new();
        let mut lines = text.lines().enumerate().peekable();
        while let Some((_, l)) = lines.next_if(|(_, l)| l.starts_with('#')) {
            if let Some(run) = l.strip_prefix("# run: ") {
                runs.push(parse_run(run)?);
            } else if let Some((k, v)) = l.trim_start_matches("# ").split_once(": ") {
                keys.insert(k.to_string(), v.to_string());
            }
        }
        let key = |k: &str| {
            keys.get(k)
                .with_context(|| format!("the band file has no '# {k}:' line"))
        };
        let num = |k: &str| -> Result<u64> {
            key(k)?
                .parse()
                .with_context(|| format!("bad '# {k}:' value '{}'", keys[k]))
        };
        let config: AllocatorConfig =
            serde_json::from_str(key("config")?).context("bad '# config:' line")?;
        config.validate()?;
        let header = BandHeader {
            command: key("command")?.clone(),
            machine: key("machine")?.clone(),
            trace: key("trace")?.clone(),
            malloc_conf: key("malloc_conf")?.clone(),
            time_scale: key("time_scale")?
                .parse()
                .context("bad '# time_scale:' value")?,
            seed: num("seed")?,
            clock_resolution_ns: num("clock_resolution_ns")?,
        };
        ensure!(!runs.is_empty(), "the band file has no '# run:' lines");
        let (_, columns) = lines.next().context("the band file has no table")?;
        ensure!(
            columns.starts_with("event,"),
            "bad band table header '{columns}'"
        );
        let points = lines
            .map(|(i, l)| parse_point(l).with_context(|| format!("band table line {}", i + 1)))
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordedBand {
            header,
            band: RealBand {
                config,
                narenas: num("narenas")? as u32,
                runs,
                points,
            },
        })
    }
}

fn parse_run(line: &str) -> Result<RunStart> {
    let f: Vec<&str> = line.split(' ').collect();
    ensure!(
        f.len() == 11,
        "bad '# run:' line '{line}' (fields: {RUN_FIELDS})"
    );
    let n = |i: usize| -> Result<u64> {
        f[i].parse()
            .with_context(|| format!("bad number '{}' in '# run: {line}'", f[i]))
    };
    Ok(RunStart {
        start_ns: n(0)?,
        residue: n(1)?,
        start_meta: StartMeta {
            resident0: n(2)?,
            resident_fresh: n(3)?,
            allocated0: n(4)?,
            allocated_fresh: n(5)?,
            rtree: if f[6] == "-" { None } else { Some(n(6)?) },
        },
        below: n(7)?,
        heap: n(8)?,
        heap_mapping: (n(9)?, n(10)?),
        // Not in the file: its runs are taken as on a kernel that aligns no mapping (before
        // Linux 6.7), as the model took every run before it knew of that alignment.
        map_align: Default::default(),
    })
}

fn parse_point(line: &str) -> Result<RealPoint> {
    let f: Vec<&str> = line.split(',').collect();
    ensure!(
        f.len() == 1 + 3 * STATS.len(),
        "{} fields, not {}",
        f.len(),
        1 + 3 * STATS.len()
    );
    let x = |i: usize| -> Result<f64> {
        match f[i].parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => bail!("bad number '{}'", f[i]),
        }
    };
    let b = |k: usize| -> Result<Band> {
        Ok(Band {
            mean: x(1 + 3 * k)?,
            min: x(2 + 3 * k)?,
            max: x(3 + 3 * k)?,
        })
    };
    Ok(RealPoint {
        event: f[0]
            .parse()
            .with_context(|| format!("bad event '{}'", f[0]))?,
        active: b(0)?,
        resident: b(1)?,
        dirty: b(2)?,
        muzzy: b(3)?,
        retained: b(4)?,
        metadata: b(5)?,
    })
}

/// This machine, for a band file's header: the kernel, the CPU model and count, and the
/// virtual address width (the radix tree's shape follows from it).
pub(crate) fn machine_description() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |k: &str| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_once(':'))
            .map_or("unknown".to_string(), |(_, v)| v.trim().to_string())
    };
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "Linux {} {}, {} CPUs, {}, address sizes {}",
        kernel.trim(),
        std::env::consts::ARCH,
        crate::process::machine_cpus(),
        field("model name"),
        field("address sizes")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A band written and read back is the same band, floats included (a mean of 3 runs).
    #[test]
    fn a_band_round_trips_through_its_file() {
        let start = RunStart {
            start_ns: 1234,
            residue: 81_920,
            start_meta: StartMeta {
                resident0: 1_449_984,
                resident_fresh: 94_208,
                allocated0: 1_448_704,
                allocated_fresh: 92_880,
                rtree: None,
            },
            below: 0x7f00_0000_0000,
            heap: 0x7f00_1000_0000,
            heap_mapping: (0x7f00_0f00_0000, 0x7f00_1100_0000),
            map_align: Default::default(),
        };
        let band = Band {
            mean: 10.0 / 3.0,
            min: 1.0,
            max: 5.0,
        };
        let r = RecordedBand {
            header: BandHeader {
                command: "fragsim replay x --live".into(),
                machine: machine_description(),
                trace: "data/traces/x.trace".into(),
                malloc_conf: "dirty_decay_ms:200,muzzy_decay_ms:0".into(),
                time_scale: 2.5,
                seed: 0,
                clock_resolution_ns: 4_000_000,
            },
            band: RealBand {
                config: AllocatorConfig::default(),
                narenas: 8,
                runs: vec![start, start],
                points: vec![RealPoint {
                    event: 7,
                    active: band,
                    resident: band,
                    ..RealPoint::default()
                }],
            },
        };
        let text = r.to_csv().unwrap();
        assert_eq!(RecordedBand::parse(&text).unwrap(), r);
        let bad = text.replace("# run: 1234", "# run: x");
        assert!(RecordedBand::parse(&bad)
            .unwrap_err()
            .to_string()
            .contains("'x'"));
    }
}
