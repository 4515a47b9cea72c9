//! The model's statistics in the shape of jemalloc's own `malloc_stats_print(.., "J")`
//! (`stats.c`: `stats_general_print`, `stats_print_helper`, `stats_arena_print`): the same
//! keys, nesting and order, holding only what the model knows. A user diffs it with their
//! process's real dump; `replay --process --live --stats-json` writes both.
//!
//! Left out, as the model does not know them: the version's git suffix (the model writes
//! the release, `5.3.1`), the build's other `config` flags and every option it does not
//! take, `prof`, counters of operations (`nmalloc`, `ndalloc`, `nrequests`, `nfills`,
//! `nflushes`, `nreslabs`, purges), times (`uptime_ns`), `dss`, mutex statistics,
//! `metadata_thp`, `metadata_edata`/`metadata_rtree` (5.3.1), `tcache_stashed_bytes`,
//! `abandoned_vm`, `extent_avail`, `zero_reallocs`, the background threads' statistics, the
//! HPA's, and the merged arena's decay settings. The bases (`base`, `stats.metadata`,
//! `resident`) only with a metadata model; `resident` is approximate (a base's last page,
//! the radix tree's leaves: see `compare_snapshots`).

use super::model::{ArenaView, StatsView};
use crate::sizeclass::{JemallocVersion, PageSizeClasses, SizeClasses};

/// A JSON value whose objects keep their keys in the order given (jemalloc's).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Int(i64),
    UInt(u64),
    Bool(bool),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl serde::Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Json::Int(v) => s.serialize_i64(*v),
            Json::UInt(v) => s.serialize_u64(*v),
            Json::Bool(v) => s.serialize_bool(*v),
            Json::Str(v) => s.serialize_str(v),
            Json::Array(v) => s.collect_seq(v),
            Json::Object(v) => {
                let mut m = s.serialize_map(Some(v.len()))?;
                for (k, x) in v {
                    m.serialize_entry(k, x)?;
                }
                m.end()
            }
        }
    }
}

impl From<u64> for Json {
    fn from(v: u64) -> Json {
        Json::UInt(v)
    }
}

impl From<i64> for Json {
    fn from(v: i64) -> Json {
        Json::Int(v)
    }
}

impl From<bool> for Json {
    fn from(v: bool) -> Json {
        Json::Bool(v)
    }
}

/// An object from `(key, value)` pairs, in order.
fn obj<const N: usize>(pairs: [(&str, Json); N]) -> Json {
    Json::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The whole document: `{"jemalloc": {...}}`.
pub fn stats_json(v: &StatsView) -> Json {
    let classes = SizeClasses::new(v.config).expect("the model's build is valid");
    let mut top = vec![
        (
            "version".into(),
            Json::Str(v.config.version.as_str().into()),
        ),
        (
            "config".into(),
            obj([("cache_oblivious", v.config.cache_oblivious.into())]),
        ),
        ("opt".into(), opt(v)),
        ("arenas".into(), arenas(v, &classes)),
        ("stats".into(), totals(v)),
    ];
    let psz = PageSizeClasses::new(&classes);
    let mut per_arena: Vec<(String, Json)> = Vec::new();
    if v.arenas.len() > 1 {
        let merged = merge(&v.arenas);
        per_arena.push(("merged".into(), arena(v, &merged, &classes, &psz, false)));
    }
    for a in &v.arenas {
        per_arena.push((a.index.to_string(), arena(v, a, &classes, &psz, true)));
    }
    top.push(("stats.arenas".into(), Json::Object(per_arena)));
    obj([("jemalloc", Json::Object(top))])
}

/// `opt`: the options the model takes, under jemalloc's names.
fn opt(v: &StatsView) -> Json {
    let o = &v.options;
    let version = v.config.version;
    let mut pairs = vec![
        ("cache_oblivious", v.config.cache_oblivious.into()),
        ("narenas", u64::from(v.narenas).into()),
        ("oversize_threshold", o.oversize_threshold.into()),
        ("background_thread", o.background_thread.into()),
        ("dirty_decay_ms", o.dirty_decay_ms.into()),
        ("muzzy_decay_ms", o.muzzy_decay_ms.into()),
    ];
    if version == JemallocVersion::V5_3_1 {
        let gc = o.experimental_tcache_gc.unwrap_or(true);
        pairs.push(("experimental_tcache_gc", gc.into()));
    }
    let tcache_max = o.tcache_max_for(version, v.config.lg_page);
    pairs.extend([
        ("tcache", o.tcache.into()),
        ("tcache_max", tcache_max.into()),
        (
            "tcache_nslots_small_min",
            u64::from(o.tcache_nslots_small_min).into(),
        ),
        (
            "tcache_nslots_small_max",
            u64::from(o.tcache_nslots_small_max).into(),
        ),
        (
            "tcache_nslots_large",
            u64::from(o.tcache_nslots_large).into(),
        ),
        (
            "lg_tcache_nslots_mul",
            i64::from(o.lg_tcache_nslots_mul).into(),
        ),
    ]);
    if version == JemallocVersion::V5_3_1 {
        let rounding = v.config.large_page_rounding;
        pairs.push(("disable_large_size_classes", rounding.into()));
    }
    Json::Object(pairs.into_iter().map(|(k, x)| (k.into(), x)).collect())
}

/// `arenas`: the arena count, decay defaults and the size classes.
fn arenas(v: &StatsView, classes: &SizeClasses) -> Json {
    let bins = classes.bins().iter().map(|c| {
        obj([
            ("size", c.size.into()),
            ("nregs", c.nregs.into()),
            ("slab_size", c.slab_size.into()),
            // One shard per bin: the model's (and jemalloc's default, `opt.bin_shards`).
            ("nshards", 1u64.into()),
        ])
    });
    let large = classes
        .large()
        .iter()
        .map(|c| obj([("size", c.size.into())]));
    let c = &v.config;
    obj([
        ("narenas", u64::from(v.arenas_total).into()),
        ("dirty_decay_ms", v.options.dirty_decay_ms.into()),
        ("muzzy_decay_ms", v.options.muzzy_decay_ms.into()),
        ("quantum", c.quantum().into()),
        ("page", c.page().into()),
        ("tcache_max", v.tcache_maxclass.into()),
        ("nbins", (classes.bins().len() as u64).into()),
        ("nhbins", (v.nhbins as u64).into()),
        ("bin", Json::Array(bins.collect())),
        ("nlextents", (classes.large().len() as u64).into()),
        ("lextent", Json::Array(large.collect())),
    ])
}

/// `stats`: the process's totals (the bases' only with a metadata model).
fn totals(v: &StatsView) -> Json {
    let t = &v.totals;
    let mut pairs = vec![("allocated", t.allocated_bytes), ("active", t.active_bytes)];
    if v.metadata {
        pairs.extend([
            ("metadata", t.metadata_allocated_bytes),
            ("resident", t.resident_bytes),
            ("mapped", t.mapped_bytes),
        ]);
    }
    pairs.push(("retained", t.retained_bytes));
    Json::Object(
        pairs
            .into_iter()
            .map(|(k, x)| (k.into(), x.into()))
            .collect(),
    )
}

/// `stats.arenas.merged`: every arena summed, as `ctl_arena_stats_sdmerge` sums them.
fn merge(arenas: &[ArenaView]) -> ArenaView {
    let mut m = ArenaView::default();
    for a in arenas {
        m.nthreads += a.nthreads;
        m.active_bytes += a.active_bytes;
        m.dirty_bytes += a.dirty_bytes;
        m.muzzy_bytes += a.muzzy_bytes;
        m.retained_bytes += a.retained_bytes;
        m.small_allocated += a.small_allocated;
        m.large_allocated += a.large_allocated;
        m.mapped_bytes += a.mapped_bytes;
        m.tcache_bytes += a.tcache_bytes;
        m.internal += a.internal;
        if let Some((allocated, resident)) = a.base {
            let (ma, mr) = m.base.unwrap_or((0, 0));
            m.base = Some((ma + allocated, mr + resident));
        }
        if m.bins.len() < a.bins.len() {
            m.bins.resize(a.bins.len(), Default::default());
        }
        for (mb, b) in m.bins.iter_mut().zip(&a.bins) {
            mb.curregs += b.curregs;
            mb.curslabs += b.curslabs;
            mb.nonfull_slabs += b.nonfull_slabs;
        }
        let (t, e) = (&mut m.extents, &a.extents);
        t.large.extend(&e.large);
        t.dirty.extend(&e.dirty);
        t.muzzy.extend(&e.muzzy);
        t.retained.extend(&e.retained);
    }
    m
}

/// One arena's entry (`one`: a real arena, with its decay settings; else `merged`).
fn arena(
    v: &StatsView,
    a: &ArenaView,
    classes: &SizeClasses,
    psz: &PageSizeClasses,
    one: bool,
) -> Json {
    let page = v.config.page();
    let mut p: Vec<(&str, Json)> = vec![("nthreads", u64::from(a.nthreads).into())];
    if one {
        p.push(("dirty_decay_ms", a.decay_ms.0.into()));
        p.push(("muzzy_decay_ms", a.decay_ms.1.into()));
    }
    p.extend([
        ("pactive", (a.active_bytes / page).into()),
        ("pdirty", (a.dirty_bytes / page).into()),
        ("pmuzzy", (a.muzzy_bytes / page).into()),
        ("small", obj([("allocated", a.small_allocated.into())])),
        ("large", obj([("allocated", a.large_allocated.into())])),
    ]);
    // Without a metadata model the bases are unknown: mapped, base and resident with them.
    let base = a.base.filter(|_| v.metadata);
    if base.is_some() {
        p.push(("mapped", a.mapped_bytes.into()));
    }
    p.push(("retained", a.retained_bytes.into()));
    if let Some((allocated, _)) = base {
        p.push(("base", allocated.into()));
    }
    p.push(("internal", a.internal.into()));
    p.push(("tcache_bytes", a.tcache_bytes.into()));
    if let Some((_, resident)) = base {
        // `arena_stats_merge`: the base's resident pages, then active and dirty ones.
        let r = resident + a.active_bytes + a.dirty_bytes;
        p.push(("resident", r.into()));
    }
    p.push(("bins", bins(a, classes)));
    p.push(("lextents", lextents(a, classes)));
    p.push(("extents", extents(a, psz)));
    Json::Object(p.into_iter().map(|(k, x)| (k.into(), x)).collect())
}

/// `bins`: every small class, in use or not.
fn bins(a: &ArenaView, classes: &SizeClasses) -> Json {
    let all = (0..classes.bins().len()).map(|j| {
        let b = a.bins.get(j).copied().unwrap_or_default();
        obj([
            ("curregs", b.curregs.into()),
            ("curslabs", b.curslabs.into()),
            ("nonfull_slabs", b.nonfull_slabs.into()),
        ])
    });
    Json::Array(all.collect())
}

/// `lextents`: live large extents per large class (`sz_size2index` of the usable size, so
/// 5.3.1's page-rounded sizes count in the class above them).
fn lextents(a: &ArenaView, classes: &SizeClasses) -> Json {
    let nbins = classes.bins().len();
    let mut counts = vec![0u64; classes.large().len()];
    for &usize in &a.extents.large {
        if let Some(c) = classes.class_for(usize) {
            counts[c.index.saturating_sub(nbins)] += 1;
        }
    }
    let all = counts.into_iter().map(|n| obj([("curlextents", n.into())]));
    Json::Array(all.collect())
}

/// `extents`: the dirty, muzzy and retained sets per page-size class, as their extent sets
/// file them (`sz_psz_quantize_floor`).
fn extents(a: &ArenaView, psz: &PageSizeClasses) -> Json {
    let n = psz.npsizes();
    let mut counts = vec![[0u64; 6]; n];
    let sets = [&a.extents.dirty, &a.extents.muzzy, &a.extents.retained];
    for (k, set) in sets.into_iter().enumerate() {
        for &size in set {
            if let Some(c) = counts.get_mut(psz.extent_index(size)) {
                c[k] += 1;
                c[k + 3] += size;
            }
        }
    }
    let all = counts.into_iter().map(|c| {
        obj([
            ("ndirty", c[0].into()),
            ("nmuzzy", c[1].into()),
            ("nretained", c[2].into()),
            ("dirty_bytes", c[3].into()),
            ("muzzy_bytes", c[4].into()),
            ("retained_bytes", c[5].into()),
        ])
    });
    Json::Array(all.collect())
}
